//! `mtf check`'s semantic pass: the declarations of a trace's DTD verified while it decodes.
//!
//! A [`Check`] takes each decoded record ([`Check::record`]) and returns the findings it
//! raised; [`Check::finish`] returns what is alive at the end. Findings are counted per kind and
//! severity ([`Check::counts`]) and described in words ([`Check::describe`]): record index, byte
//! offset, record type, the id with its namespace and key, and the record that defined it.

use std::fmt::Write as _;

use crate::decode::RecordView;
use crate::dtd::analysis::{ActionKind, Severity, SpaceKind};
use crate::dtd::{Display, Schema};

use super::event::HeapEvent;
use super::interpret::{At, Finding, FindingKind, Interpreter, Sink};

/// The semantic checker. See the module docs.
#[derive(Debug)]
pub struct Check<'s> {
    interp: Interpreter<'s>,
    schema: &'s Schema,
    buf: Vec<Finding>,
    counts: std::collections::BTreeMap<(FindingKind, Severity), u64>,
}

struct Collect<'b>(&'b mut Vec<Finding>);

impl Sink for Collect<'_> {
    fn event(&mut self, _event: HeapEvent) {}
    fn finding(&mut self, finding: Finding) {
        self.0.push(finding);
    }
    fn wants_events(&self) -> bool {
        false
    }
}

impl<'s> Check<'s> {
    /// A checker for a schema's declarations.
    pub fn new(schema: &'s Schema) -> Check<'s> {
        Check {
            interp: Interpreter::new(schema),
            schema,
            buf: Vec::new(),
            counts: Default::default(),
        }
    }

    /// Whether the schema declares anything to check.
    pub fn is_declared(&self) -> bool {
        self.schema.analysis.is_declared()
    }

    /// Track at most `limit` entries (see [`Interpreter::set_limit`]).
    pub fn set_limit(&mut self, limit: usize) {
        self.interp.set_limit(limit);
    }

    /// The interpreter.
    pub fn interpreter(&self) -> &Interpreter<'s> {
        &self.interp
    }

    /// The interpreter, to resume or journal (`mtf check -j N`).
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn interpreter_mut(&mut self) -> &mut Interpreter<'s> {
        &mut self.interp
    }

    /// Findings so far per kind and severity, to merge those of chunks (`mtf check -j N`).
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn counts_mut(
        &mut self,
    ) -> &mut std::collections::BTreeMap<(FindingKind, Severity), u64> {
        &mut self.counts
    }

    /// Check one record; the findings it raised, in order.
    pub fn record(&mut self, view: &RecordView<'_>) -> &[Finding] {
        self.buf.clear();
        self.interp.record(view, &mut Collect(&mut self.buf));
        for f in &self.buf {
            *self.counts.entry((f.kind, f.severity)).or_default() += 1;
        }
        &self.buf
    }

    /// What a scan reads of each record type for [`Check::record_values`]
    /// ([`Records::scan_values`](crate::decode::Records::scan_values)).
    pub fn scan_values(&self) -> crate::decode::ScanValues {
        crate::decode::ScanValues::new(self.interp.scan_fields()).with_references()
    }

    /// Check one record a scan stepped over, from the values it read ([`Check::scan_values`]):
    /// the findings [`Check::record`] raises for the same record, in order.
    #[inline]
    pub fn record_values(&mut self, r: crate::decode::Scanned<'_>) -> &[Finding] {
        self.buf.clear();
        let at = At {
            record: r.index,
            offset: r.offset,
            record_type: r.record_id,
        };
        let text = |k: usize| r.bytes(k).map(|b| String::from_utf8_lossy(b).into_owned());
        self.interp
            .record_values(at, r.values, &text, &mut Collect(&mut self.buf));
        for f in &self.buf {
            *self.counts.entry((f.kind, f.severity)).or_default() += 1;
        }
        &self.buf
    }

    /// The findings of the last record checked.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn found(&self) -> &[Finding] {
        &self.buf
    }

    /// What is alive at the end of the trace, in the order it was defined.
    pub fn finish(&mut self) -> &[Finding] {
        self.buf.clear();
        self.interp.finish(&mut Collect(&mut self.buf));
        for f in &self.buf {
            *self.counts.entry((f.kind, f.severity)).or_default() += 1;
        }
        &self.buf
    }

    /// [`Check::finish`], one finding at a time: `each` sees every finding (counted by then)
    /// with the checker, to describe it; the first error it returns stops the report. Memory
    /// stays that of the live ids however many are alive at the end.
    pub fn finish_each<E>(
        &mut self,
        mut each: impl FnMut(&Check<'s>, &Finding) -> Result<(), E>,
    ) -> Result<(), E> {
        for f in self.interp.at_end() {
            *self.counts.entry((f.kind, f.severity)).or_default() += 1;
            each(self, &f)?;
        }
        Ok(())
    }

    /// Findings so far per kind and severity, in kind order.
    pub fn counts(&self) -> impl Iterator<Item = (FindingKind, Severity, u64)> + '_ {
        self.counts.iter().map(|((k, s), n)| (*k, *s, *n))
    }

    /// Findings so far of a severity.
    pub fn count(&self, severity: Severity) -> u64 {
        self.counts
            .iter()
            .filter(|((_, s), _)| *s == severity)
            .map(|(_, n)| n)
            .sum()
    }

    fn at(&self, at: &At) -> String {
        format!(
            "record {} ({}) at byte {}",
            at.record,
            self.schema.record(at.record_type).name,
            at.offset
        )
    }

    /// An id as its defining field shows it (hex for addresses).
    fn id(&self, f: &Finding, value: u64) -> String {
        let hex = f.space.is_some_and(|sp| {
            let d = self.schema.analysis.record(f.at.record_type);
            d.actions.iter().any(|a| {
                a.space == sp
                    && self.schema.record(f.at.record_type).slots[a.slot as usize].display
                        == Display::Hex
            })
        });
        if hex {
            format!("{value:#x}")
        } else {
            value.to_string()
        }
    }

    /// A finding in words: where, what, and where the id came from.
    pub fn describe(&self, f: &Finding) -> String {
        let a = &self.schema.analysis;
        let space = f.space.map(|s| &a.namespaces[s as usize]);
        let sname = space.map_or("", |n| n.name.as_str());
        let keyed = match space.and_then(|n| n.key.as_deref()) {
            Some(k) => format!(" ({k} {})", f.key),
            None => String::new(),
        };
        let id = self.id(f, f.id);
        let role = |kinds: &[ActionKind]| -> &'static str {
            a.record(f.at.record_type)
                .actions
                .iter()
                .find(|x| Some(x.space) == f.space && kinds.contains(&x.kind))
                .map_or("uses", |x| x.kind.keyword())
        };
        let mut s = self.at(&f.at);
        s.push_str(": ");
        match f.kind {
            FindingKind::Undefined => {
                let _ = write!(
                    s,
                    "{} {sname} {id}{keyed}, which is not alive",
                    // The DTD's keyword, read as a verb: `refers` takes `to`.
                    match role(&[ActionKind::Refer]) {
                        "refers" => "refers to",
                        other => other,
                    }
                );
            }
            FindingKind::Redefined => {
                let _ = write!(s, "defines {sname} {id}{keyed}, which is already alive");
            }
            FindingKind::NotAlive => {
                let _ = write!(
                    s,
                    "undefines {sname} {id}{keyed}, which is not alive (never defined, or already undefined)"
                );
            }
            FindingKind::Unbalanced => {
                let _ = write!(s, "closes {sname} {id}{keyed}, but no level is open");
            }
            FindingKind::Mismatched => {
                let want = self.id(f, f.expected.unwrap_or(0));
                let _ = write!(
                    s,
                    "closes {sname} {id}{keyed}, but the innermost open level is {want}"
                );
            }
            FindingKind::Depth => {
                let _ = write!(
                    s,
                    "{} is {}, but the {sname} level it opens inside{keyed} is at depth {}",
                    f.what.as_deref().unwrap_or("depth"),
                    f.id,
                    f.expected.unwrap_or(0)
                );
            }
            FindingKind::Backwards => {
                let key = if f.key != 0 {
                    format!(" (key {})", f.key)
                } else {
                    String::new()
                };
                let _ = write!(
                    s,
                    "{} goes backwards{key}: {} after {}",
                    f.what.as_deref().unwrap_or("value"),
                    f.id,
                    f.expected.unwrap_or(0)
                );
                if let Some(d) = &f.defined {
                    let _ = write!(s, " ({})", self.at(d));
                }
                return s;
            }
            FindingKind::Bytes if f.what.is_some() => {
                let _ = write!(
                    s,
                    "its byte count reads a field of {sname} {id}{keyed}, which is not alive: the block counts 0 bytes"
                );
            }
            FindingKind::Bytes => {
                s.push_str("its byte count overflows or goes negative");
            }
            FindingKind::AliveAtEnd => {
                let what = if space.is_some_and(|n| n.kind == SpaceKind::Ids) {
                    "alive"
                } else {
                    "open"
                };
                return format!(
                    "{sname} {id}{keyed} is {what} at the end (defined by {})",
                    self.at(&f.at)
                );
            }
            FindingKind::OpenAtEnd => {
                return format!(
                    "{sname} {id}{keyed} is still open at the end (opened by {})",
                    self.at(&f.at)
                );
            }
            FindingKind::Limit => {
                let _ = write!(
                    s,
                    "more than {} ids, levels and keys to track at once: semantic checks stop here (raise the limit with --max-ids)",
                    f.expected.unwrap_or(0)
                );
                return s;
            }
        }
        if let Some(d) = &f.defined {
            // An id not alive names the record that ended it (a double free: the first free).
            let verb = match f.kind {
                FindingKind::Mismatched => "opened",
                FindingKind::NotAlive | FindingKind::Undefined => "undefined",
                _ => "defined",
            };
            let _ = write!(s, "; {verb} by {}", self.at(d));
        }
        s
    }
}
