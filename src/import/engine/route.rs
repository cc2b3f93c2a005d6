//! Routed sections (`record R section S …`): records spooled to a temporary file as they are
//! read, with `import_routed` records in the part's section saying where they came in, and
//! written after the data sections.

use super::super::error::{ImportError, ImportErrorKind};
use super::super::mapping::Mapping;
use super::super::sink::{PlanId, Sink, SinkError, Value};
use super::super::spool::{self, SpoolReader};
use super::{fatal, Importer};
use std::io::BufReader;

/// A section records are routed to (`record R section S …`): its records are spooled to a
/// temporary file in the order read, laid out as they come (so a `ref` index becomes the byte
/// offset the record will have), and written after the data sections.
pub(super) struct Routed {
    pub(super) name: String,
    pub(super) spool: Option<std::io::BufWriter<crate::io::TempFile>>,
    /// Records routed so far.
    pub(super) count: u64,
    /// Size of the section so far, when every record's size is known in advance.
    pub(super) next: Option<u64>,
    /// Offsets of its records, kept when a `ref` points into the section.
    pub(super) offsets: Option<Vec<u64>>,
}

impl Routed {
    /// The mapping's routed sections ([`Mapping::routed`]), empty; the offsets of a section's
    /// records are kept when a `ref` points into it.
    pub(super) fn sections(m: &Mapping, names: &[String]) -> Vec<Routed> {
        names
            .iter()
            .map(|n| {
                let target = m
                    .parts
                    .iter()
                    .flat_map(|p| &p.rules)
                    .any(|r| r.refs.iter().any(|(_, s)| s == n));
                Routed {
                    name: n.clone(),
                    spool: None,
                    count: 0,
                    next: Some(0),
                    offsets: target.then(Vec::new),
                }
            })
            .collect()
    }
}

impl Importer<'_, '_> {
    /// Write the routed sections, each from its spool, in the order of the mapping's rules.
    pub(super) fn write_routed(&mut self) -> Result<(), ImportError> {
        for t in 0..self.routed.len() {
            let Some(spool) = self.routed[t].spool.take() else {
                continue;
            };
            let name = self.routed[t].name.clone();
            let shown = format!("section {name}");
            let io =
                |e: std::io::Error| ImportError::at(&shown, ImportErrorKind::Write(e.to_string()));
            let mut f = spool.into_inner().map_err(|e| io(e.into_error()))?;
            std::io::Seek::rewind(&mut f).map_err(io)?;
            self.enter(&name, &shown)?;
            let mut r = SpoolReader::new(BufReader::with_capacity(1 << 16, f));
            let mut k = 0usize;
            while let Some(plan) = r.next_record().map_err(io)? {
                if let Some(o) = &self.routed[t].offsets {
                    if o.get(k).copied() != Some(self.sink.position()) {
                        return Err(ImportError::at(
                            &shown,
                            ImportErrorKind::Write(format!(
                                "record {k} is not at the offset laid out for it"
                            )),
                        ));
                    }
                }
                let ins = r.values();
                self.sink.write(plan, &ins).map_err(|e| fatal(&shown, e))?;
                k += 1;
            }
            self.report.routed.push((name, self.routed[t].count));
        }
        Ok(())
    }
}

/// Write the pending `import_routed` record: the routed records read since the last record of
/// the part's section go here, in order.
pub(super) fn flush_run<S: Sink>(
    sink: &mut S,
    run: &mut Option<(usize, u64)>,
    p_routed: Option<PlanId>,
) -> Result<(), SinkError> {
    if let (Some((target, count)), Some(plan)) = (run.take(), p_routed) {
        sink.write(plan, &[Value::Int(target as u64), Value::Int(count)])?;
    }
    Ok(())
}

/// Spool a record routed to section `t` (checked to fit; its offset laid out).
pub(super) fn route<S: Sink>(
    sink: &mut S,
    routed: &mut [Routed],
    run: &mut Option<(usize, u64)>,
    p_routed: Option<PlanId>,
    (t, plan): (usize, PlanId),
    ins: &[Value<'_>],
) -> Result<(), SinkError> {
    let size = sink.check(plan, ins)?;
    let r = &mut routed[t];
    if r.offsets.is_some() && size.is_none() && sink.fixed_layout(plan) {
        // A value wider than its field: the record's size is not known in advance.
        return Err(SinkError::Unrepresentable(format!(
            "section `{}` is laid out in advance (a `ref` points into it): a value wider than its field cannot be widened there",
            r.name
        )));
    }
    if r.offsets.is_some() && size.is_none() {
        return Err(SinkError::Fatal(format!(
            "section `{}`: a `ref` points into it, so its records may not have `default` or `delta` fields",
            r.name
        )));
    }
    if r.spool.is_none() {
        let f = crate::io::TempFile::new().map_err(|e| SinkError::Fatal(e.to_string()))?;
        r.spool = Some(std::io::BufWriter::with_capacity(1 << 16, f));
    }
    let at = r.next;
    r.next = match (r.next, size) {
        (Some(n), Some(k)) => Some(n + k),
        _ => None,
    };
    if let (Some(o), Some(at)) = (&mut r.offsets, at) {
        o.push(at);
    }
    r.count += 1;
    if let Some(w) = r.spool.as_mut() {
        spool::write(w, plan, ins).map_err(|e| SinkError::Fatal(e.to_string()))?;
    }
    match run {
        Some((rt, n)) if *rt == t && *n < u32::MAX as u64 => *n += 1,
        _ => {
            flush_run(sink, run, p_routed)?;
            *run = Some((t, 1));
        }
    }
    Ok(())
}
