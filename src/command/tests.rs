//! The entry points called as a library user calls them: plain options, no command line.

use std::path::Path;

use super::check::{check, CheckOptions, CheckSink, Verdict};
use super::dump::{dump, DumpOptions, DumpSink};
use super::jobs::Faults;
use super::slice::Slice;
use super::{UsageError, Warning};
use crate::analysis::stats::Bound;
use crate::index::IndexError;

/// Everything a check gives out, as lines.
#[derive(Default)]
struct Collect {
    lines: Vec<String>,
    warnings: usize,
}

impl CheckSink for Collect {
    fn problem(&mut self, problem: &dyn std::fmt::Display) -> std::io::Result<()> {
        self.lines.push(format!("problem: {problem}"));
        Ok(())
    }
    fn index_problem(&mut self, e: &IndexError) -> std::io::Result<()> {
        self.lines.push(format!("index: {e}"));
        Ok(())
    }
    fn finding(&mut self, text: &str, info: bool) -> std::io::Result<()> {
        self.lines
            .push(format!("{}: {text}", if info { "info" } else { "error" }));
        Ok(())
    }
    fn index_valid(
        &mut self,
        _: &str,
        _: usize,
        _: Option<usize>,
        _: Option<usize>,
    ) -> std::io::Result<()> {
        Ok(())
    }
    fn warning(&mut self, _: Warning) {
        self.warnings += 1;
    }
}

impl DumpSink for Collect {
    fn problem(&mut self, problem: &dyn miette::Diagnostic) {
        self.lines.push(problem.to_string());
    }
    fn warning(&mut self, _: Warning) {
        self.warnings += 1;
    }
}

fn trace(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("traces")
        .join(name)
}

#[test]
fn a_check_of_a_trace_that_closes_a_method_twice_is_invalid() {
    // traces/README.md: the sample closes method 12 twice.
    let path = trace("et_merlin.mtf");
    let o = crate::open(&path).unwrap();
    let mut sink = Collect::default();
    let report = check(
        &o,
        &path,
        &CheckOptions::default(),
        Faults::default(),
        &mut sink,
    )
    .unwrap();
    assert_eq!(report.verdict, Verdict::Invalid);
    let errors: Vec<_> = sink
        .lines
        .iter()
        .filter(|l| l.starts_with("error:"))
        .collect();
    assert_eq!(errors.len(), 2, "{:?}", sink.lines);
    assert_eq!(report.problems, 2);
    // Without the semantic pass the same trace decodes cleanly.
    let options = CheckOptions {
        semantic: false,
        ..CheckOptions::default()
    };
    let report = check(
        &o,
        &path,
        &options,
        Faults::default(),
        &mut Collect::default(),
    )
    .unwrap();
    assert_eq!(report.verdict, Verdict::Valid);
    let records: u64 = report.per_type.iter().sum();
    assert_eq!(records, o.trace().header().nrecords);
}

#[test]
fn a_dump_writes_to_any_writer_and_cuts_as_asked() {
    let path = trace("hatf-le32.mtf");
    let o = crate::open(&path).unwrap();
    let options = DumpOptions {
        records: vec!["alloc".into()],
        skip: 2,
        limit: Some(3),
        header: false,
        ..DumpOptions::default()
    };
    let mut out = Vec::new();
    let mut sink = Collect::default();
    let report = dump(&o, &path, &options, Faults::default(), &mut out, &mut sink).unwrap();
    assert!(!report.invalid);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines.iter().all(|l| l.starts_with("alloc ")), "{text}");
}

#[test]
fn requests_that_cannot_be_met_are_typed_errors_with_codes() {
    use miette::Diagnostic;
    let empty = Slice {
        from: Some(Bound::Record(5)),
        to: Some(Bound::Record(5)),
    };
    let e = empty.window().unwrap_err();
    assert!(matches!(e, UsageError::EmptySlice));
    assert_eq!(e.code().unwrap().to_string(), "mtf::usage::slice");
    // malloc-lab's DTD declares no time.
    let lab = trace("malloclab.mtf");
    let o = crate::open(&lab).unwrap();
    let by_time = Slice {
        from: Some(Bound::Time(5)),
        to: None,
    };
    let e = by_time.need_declared_time(o.schema(), &lab).unwrap_err();
    assert_eq!(e.code().unwrap().to_string(), "mtf::usage::no_clock");
    let path = trace("hatf-le32.mtf");
    let o = crate::open(&path).unwrap();
    assert!(by_time.need_declared_time(o.schema(), &path).is_ok());
    let options = DumpOptions {
        records: vec!["nosuch".into()],
        ..DumpOptions::default()
    };
    let e = dump(
        &o,
        &path,
        &options,
        Faults::default(),
        &mut Vec::new(),
        &mut Collect::default(),
    )
    .unwrap_err();
    assert_eq!(e.code().unwrap().to_string(), "mtf::usage::record");
}
