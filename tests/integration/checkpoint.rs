//! Checkpoints: a decode resumed from a checkpoint yields exactly the events of a full decode
//! from that record on — for every shipped trace, random schemas and traces (metadata changes,
//! sections, tables), traces re-encoded through live sets, and damaged traces — and a
//! checkpoint that does not fit a trace is refused with a typed error.

use metatf::container::{ByteOrder, Class, Trace};
use metatf::decode::{Checkpoint, Event, Reader, Records, ResumeError};
use metatf::encode::TraceWriter;
use proptest::prelude::*;

use crate::util::{root, Rng};

/// An event as owned text: everything a caller can see of it.
fn describe(event: &Event<'_>) -> String {
    match event {
        Event::Record(r) => {
            let values: Vec<String> = r
                .fields()
                .map(|f| {
                    format!(
                        "{}@{}={:?}/{:?}/{:?}",
                        f.name(),
                        f.offset(),
                        f.value(),
                        f.raw(),
                        f.logical()
                    )
                })
                .collect();
            format!(
                "record #{} {} at {}+{} section {} {:?} [{}]",
                r.index(),
                r.name(),
                r.offset(),
                r.len(),
                r.section(),
                r.metadata(),
                values.join(" ")
            )
        }
        Event::Problem(p) => format!("problem {p:?}"),
        Event::Damage(d) => format!("damage {d:?}"),
    }
}

fn drain(records: &mut Records<'_>) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(e) = records.next() {
        out.push(describe(&e));
    }
    out
}

/// Decode fully, taking a checkpoint at every record boundary where `take(record)` says so;
/// resume from each, and compare what follows with the full decode. Returns the number of
/// checkpoints compared.
fn check_resumes(reader: &Reader<'_>, take: impl Fn(u64) -> bool) -> usize {
    let mut full = Vec::new();
    let mut cps: Vec<(usize, Checkpoint)> = Vec::new();
    let mut records = reader.records();
    let mut last_taken = None;
    loop {
        if records.at_record_boundary()
            && last_taken != Some(records.count())
            && take(records.count())
        {
            last_taken = Some(records.count());
            cps.push((full.len(), records.checkpoint()));
        }
        let Some(e) = records.next() else { break };
        full.push(describe(&e));
    }
    // The checkpoint at the very end resumes to nothing more.
    cps.push((full.len(), records.checkpoint()));
    for (at, cp) in &cps {
        // The stored form reads back to the same checkpoint, and every cut of it is refused.
        let mut stored = Vec::new();
        cp.to_bytes(reader.schema(), &mut stored);
        assert_eq!(
            Checkpoint::from_bytes(&stored, reader.schema()).as_ref(),
            Ok(cp)
        );
        for cut in [0, 1, stored.len() / 2, stored.len() - 1] {
            assert!(Checkpoint::from_bytes(&stored[..cut], reader.schema()).is_err());
        }
        let mut resumed = reader
            .records_from(cp)
            .unwrap_or_else(|e| panic!("{cp:?}: {e}"));
        let got = drain(&mut resumed);
        assert_eq!(
            got.len(),
            full.len() - at,
            "{cp:?}: {} events resumed, {} expected",
            got.len(),
            full.len() - at
        );
        for (i, (g, f)) in got.iter().zip(&full[*at..]).enumerate() {
            assert_eq!(g, f, "{cp:?}: event {} after the checkpoint", i);
        }
        // A checkpoint taken from the resumed decode equals the original one's at the end.
        assert_eq!(resumed.checkpoint(), cps.last().unwrap().1, "{cp:?}");
        assert_eq!(resumed.count(), records.count());
    }
    cps.len()
}

fn shipped() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

#[test]
fn every_shipped_trace_resumes_at_every_record() {
    for path in shipped() {
        let opened = metatf::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let reader = opened.reader();
        let n = check_resumes(&reader, |_| true);
        assert!(n > 5, "{}: {n} checkpoints", path.display());
    }
}

#[test]
fn live_sets_are_part_of_the_state() {
    // Allocations and frees, re-encoded with frees as positions in a live set.
    let (schema, original) = crate::compact::alloc_free_trace(4000);
    let t = Trace::from_bytes(original).unwrap();
    let r = Reader::new(&t, &schema);
    let mut w = TraceWriter::in_memory(&schema, Class::Bits32, ByteOrder::Little, "x.dtd");
    let opts = metatf::compact::CompactOptions {
        live: true,
        window: 256,
        ..Default::default()
    };
    metatf::compact::compact(&r, &mut w, &opts).unwrap();
    let bytes = w.finish_to_vec().unwrap();
    assert_eq!(bytes[8], 1, "the header declares live/1");
    let trace = Trace::from_bytes(bytes).unwrap();
    let reader = Reader::new(&trace, &schema);
    let mut records = reader.records();
    let mut most = 0;
    while records.next().is_some() {
        most = most.max(records.checkpoint().live_values());
    }
    assert!(most > 10, "at most {most} live values in a checkpoint");
    let n = check_resumes(&reader, |c| c % 61 == 0 || c < 40);
    assert!(n > 60, "{n}");
}

#[test]
fn damaged_traces_resume_with_the_same_damage_and_inexact_indices() {
    let path = root().join("traces/hatf-split-le64.mtf");
    let bytes = std::fs::read(&path).unwrap();
    let opened = metatf::open(&path).unwrap();
    let schema = opened.schema();
    let mut r = Rng(0x5eed);
    let mut damaged = 0;
    for _ in 0..60 {
        let mut b = bytes.clone();
        // Flip bytes past the header's first 64 bytes (the container must still open).
        for _ in 0..1 + r.below(3) {
            let at = 64 + r.below(b.len() as u64 - 64) as usize;
            b[at] ^= 1 << r.below(8);
        }
        let Ok(trace) = Trace::from_bytes(b) else {
            continue;
        };
        let reader = Reader::new(&trace, schema);
        let mut records = reader.records();
        while let Some(e) = records.next() {
            damaged += matches!(e, Event::Damage(_)) as usize;
        }
        check_resumes(&reader, |_| true);
    }
    assert!(damaged > 5, "{damaged} damaged regions seen");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_traces_resume_at_every_record(seed in any::<u64>()) {
        let mut r = Rng(seed);
        let dtd = crate::roundtrip_prop::random_dtd(&mut r);
        let schema = metatf::dtd::parse_str("random.dtd", &dtd).unwrap().schema;
        let bytes = crate::roundtrip_prop::random_trace(&mut r, &schema);
        let trace = Trace::from_bytes(bytes).unwrap();
        let reader = Reader::new(&trace, &schema);
        check_resumes(&reader, |_| true);
    }
}

#[test]
fn a_section_decode_resumes_as_a_section_decode() {
    let opened = metatf::open(root().join("traces/hatf-split-le64.mtf")).unwrap();
    let reader = opened.reader();
    let section = reader.regions()[1].section;
    let mut records = reader.section_records(section);
    records.next();
    records.next();
    let cp = records.checkpoint();
    assert_eq!((cp.region(), cp.record()), (1, 2));
    let rest = drain(&mut records);
    assert!(!rest.is_empty());
    assert_eq!(drain(&mut reader.records_from(&cp).unwrap()), rest);
}

#[test]
fn checkpoints_that_do_not_fit_are_refused() {
    let le32 = metatf::open(root().join("traces/hatf-le32.mtf")).unwrap();
    let split = metatf::open(root().join("traces/hatf-split-le64.mtf")).unwrap();
    let (rl, rs) = (le32.reader(), split.reader());
    // A checkpoint in the third region of the split trace: hatf-le32 has two regions.
    let mut records = rs.records();
    let mut cp = None;
    while records.next().is_some() {
        if records.checkpoint().region() == 3 && records.at_record_boundary() {
            cp = Some(records.checkpoint());
            break;
        }
    }
    let cp = cp.expect("a checkpoint in region 3");
    match rl.records_from(&cp) {
        Err(ResumeError::Region { region: 3, regions }) => assert!(regions < 4),
        other => panic!("{:?}", other.err()),
    }
    // In the first section of each: same section id, another DTD with other slots.
    let first_in = |reader: &Reader<'_>, region: usize| {
        let mut records = reader.records();
        while records.next().is_some() {
            let cp = records.checkpoint();
            if cp.region() == region && cp.offset() > reader.regions()[region].start {
                return cp;
            }
        }
        panic!("no checkpoint in region {region}");
    };
    let cp = first_in(&rs, 1);
    let err = rl.records_from(&cp).err().expect("refused");
    assert!(
        matches!(
            err,
            ResumeError::Shape { .. } | ResumeError::Offset { .. } | ResumeError::Section { .. }
        ),
        "{err:?}"
    );
    let e = err.to_string();
    assert!(e.contains("checkpoint"), "{e}");
    // The right trace takes it.
    assert!(rs.records_from(&cp).is_ok());
    // The first checkpoint resumes a decode from the start.
    let start = rl.records().checkpoint();
    assert_eq!((start.record(), start.offset()), (0, 0));
    assert_eq!(
        drain(&mut rl.records_from(&start).unwrap()),
        drain(&mut rl.records())
    );
    // Checkpoints are plain data that other threads can use.
    fn send_sync<T: Send + Sync + Clone + std::fmt::Debug>(_: &T) {}
    send_sync(&cp);
}
