//! [`Checkpoint`]: the decoder's position and the complete metadata state before a record, so
//! that decoding can resume there ([`Reader::records_from`](super::Reader::records_from))
//! without reading what comes before it.

// Design: a checkpoint holds what a full decode carries from one record to the next and nothing
// else: the record count, the byte offset, the region, the scope's slot states (width, last
// non-zero width, interpretation, previous value, element cursor, live set) and the live
// values of each live set in order (positions depend on the order alone, not on where the
// decoder keeps dead slots). The record plans and the most recent values of a record's fields
// are not state: plans are made again when a record type next occurs, and a width expression
// reads only fields that occurred before it in the same record (`Program::reset_values`).
// Problems still queued for the record before the checkpoint are not part of it: a resumed
// decode starts with the record at the checkpoint.

use std::fmt;

use miette::Diagnostic;

use crate::dtd::{Builtin, Interp, RecordId, Schema, SlotKind};
use crate::layout::{LiveSets, ScopeState, SlotState, MAX_LIVE_SETS};
use crate::limits::LIVE_SET_CAPACITY;

use super::reader::Reader;

/// Where a decode stands between two records, with the complete metadata state needed to go
/// on from there: take one with [`Records::checkpoint`](super::Records::checkpoint), resume
/// with [`Reader::records_from`](super::Reader::records_from).
///
/// A checkpoint is owned and can be sent to other threads; it belongs to the trace and schema
/// it was taken from (resuming checks that it fits).
#[derive(Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Records decoded before it.
    pub(crate) record: u64,
    /// Offset of the next record (or the end of the region).
    pub(crate) offset: u64,
    /// Index of the region in [`Reader::regions`].
    pub(crate) region: u32,
    /// Whether the region has been entered (false only before the first region).
    pub(crate) entered: bool,
    /// Whether the decode is of this one region ([`Reader::section_records`]) rather than of
    /// the whole trace.
    pub(crate) alone: bool,
    /// The scope's state; `None` in a region the decoder could not enter (an undeclared
    /// section, whose bytes it skipped).
    pub(crate) state: Option<MetaState>,
    /// Whether record numbers are still exact (no damage so far).
    pub(crate) exact: bool,
    /// Whether the end of the trace was reached and the trace-wide checks were made.
    pub(crate) finished: bool,
    /// Problems dropped so far ([`Records::dropped_problems`](super::Records::dropped_problems)).
    pub(crate) dropped: u64,
}

/// The metadata state of one scope: every slot's state and the live sets.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct MetaState {
    pub(crate) section: u8,
    pub(crate) slots: Vec<SlotState>,
    /// The live values of set `i + 1`, oldest first.
    pub(crate) sets: Vec<Vec<u64>>,
}

impl Checkpoint {
    /// Records before the checkpoint: the index of the next record.
    pub fn record(&self) -> u64 {
        self.record
    }

    /// Byte offset of the next record in the trace (the end of a region when the next record is
    /// in a later one).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Index of the region the offset is in, in [`Reader::regions`].
    pub fn region(&self) -> usize {
        self.region as usize
    }

    /// Section id of the scope (0 = the global region).
    pub fn section(&self) -> u8 {
        self.state.as_ref().map_or(0, |s| s.section)
    }

    /// Whether the checkpoint was taken in a decode of one section
    /// ([`Reader::section_records`]): its record number counts that section's records, and a
    /// decode resumed from it ends with the section.
    pub fn is_section_only(&self) -> bool {
        self.alone
    }

    /// Whether the record numbers a decode resumed here reports are exact (no damaged region
    /// before the checkpoint).
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// Number of values held in live sets (extension `live/1`): what makes a checkpoint large.
    pub fn live_values(&self) -> usize {
        self.state
            .as_ref()
            .map_or(0, |s| s.sets.iter().map(Vec::len).sum())
    }

    /// The checkpoint before the first record of a trace.
    pub(crate) fn start() -> Checkpoint {
        Checkpoint {
            record: 0,
            offset: 0,
            region: 0,
            entered: false,
            alone: false,
            state: None,
            exact: true,
            finished: false,
            dropped: 0,
        }
    }
}

impl fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The state may hold a million live values: summarised.
        f.debug_struct("Checkpoint")
            .field("record", &self.record)
            .field("offset", &self.offset)
            .field("region", &self.region)
            .field("section", &self.section())
            .field("entered", &self.entered)
            .field("section_only", &self.alone)
            .field("slots", &self.state.as_ref().map(|s| s.slots.len()))
            .field("live_values", &self.live_values())
            .field("exact", &self.exact)
            .field("finished", &self.finished)
            .finish()
    }
}

impl MetaState {
    pub(crate) fn of(scope: &ScopeState) -> MetaState {
        MetaState {
            section: scope.section,
            slots: scope.slots.clone(),
            sets: scope.sets.snapshot(),
        }
    }

    /// The scope state this describes, checked against the schema: every slot state must be
    /// one that the metadata rules (docs/format.md §5.4, §6.3) can reach.
    pub(crate) fn to_scope(&self, schema: &Schema, live: bool) -> Result<ScopeState, ResumeError> {
        let section = self.section;
        if schema.scope_for(section).is_none() {
            return Err(ResumeError::UndeclaredSection { section });
        }
        let mut scope = ScopeState::new(schema, section);
        scope.live |= live;
        if scope.slots.len() != self.slots.len() {
            return Err(ResumeError::Shape {
                section,
                expected: scope.slots.len(),
                found: self.slots.len(),
            });
        }
        let bad = |slot: usize, why: &'static str| ResumeError::BadSlot { slot, why };
        let fixed = unchangeable(schema, &scope);
        for (i, (st, initial)) in self.slots.iter().zip(&scope.slots).enumerate() {
            if st.width > 8 || st.lastwidth > 8 {
                return Err(bad(i, "a width over 8 bytes"));
            }
            if st.interp.is_zero_width() && st.width != 0 {
                return Err(bad(i, "a width with a zero-width interpretation"));
            }
            if st.liveset > MAX_LIVE_SETS {
                return Err(bad(i, "a live set number over 16"));
            }
            match st.interp {
                Interp::SectionOffset(s) | Interp::SectionStride { section: s, .. }
                    if s == 0 || schema.scope_for(s).is_none() =>
                {
                    return Err(bad(i, "a reference to an undeclared section"));
                }
                Interp::Live(n) if n == 0 || n > MAX_LIVE_SETS => {
                    return Err(bad(i, "a live set number outside 1..16"));
                }
                _ => {}
            }
            let uses_live = st.liveset != 0 || matches!(st.interp, Interp::Live(_));
            if uses_live && !scope.live {
                return Err(bad(i, "a live set in a trace without extension live/1"));
            }
            // Metadata never changes a byte string's state, nor a slot's state to that of
            // another kind.
            if *st != *initial && fixed[i] {
                return Err(bad(i, "a state that metadata cannot give this field"));
            }
        }
        if self.sets.len() > MAX_LIVE_SETS as usize {
            return Err(ResumeError::LiveSets {
                sets: self.sets.len(),
                values: 0,
            });
        }
        if let Some(s) = self.sets.iter().find(|s| s.len() > LIVE_SET_CAPACITY) {
            return Err(ResumeError::LiveSets {
                sets: self.sets.len(),
                values: s.len(),
            });
        }
        scope.slots.copy_from_slice(&self.slots);
        scope.sets = LiveSets::restore(&self.sets);
        Ok(scope)
    }
}

/// For each slot state of a scope, whether metadata can never change it: a tag, a byte string,
/// or a field of a built-in record (docs/format.md §5.4).
fn unchangeable(schema: &Schema, scope: &ScopeState) -> Vec<bool> {
    let mut fixed = vec![true; scope.slots.len()];
    for (rid, rt) in schema.records.iter().enumerate() {
        let Some(base) = scope.base(rid as RecordId) else {
            continue;
        };
        let builtin = matches!(rt.builtin, Some(Builtin::Section | Builtin::Metadata));
        for (s, def) in rt.slots.iter().enumerate() {
            if let Some(f) = fixed.get_mut(base + s) {
                *f = s == 0 || builtin || matches!(def.kind, SlotKind::Bytes { .. });
            }
        }
    }
    fixed
}

/// Why a checkpoint does not fit a trace ([`Reader::records_from`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Diagnostic)]
pub enum ResumeError {
    /// The region index is not one of the trace's.
    #[error("checkpoint region {region} does not exist (the trace has {regions})")]
    #[diagnostic(code(mtf::checkpoint::region))]
    Region {
        /// The checkpoint's region.
        region: usize,
        /// The trace's number of regions.
        regions: usize,
    },
    /// The offset lies outside its region.
    #[error("checkpoint offset {offset} is outside its region (bytes {start}..{end})")]
    #[diagnostic(code(mtf::checkpoint::offset))]
    Offset {
        /// The checkpoint's offset.
        offset: u64,
        /// Start of the region.
        start: u64,
        /// End of the region.
        end: u64,
    },
    /// The state is for another section than the region's.
    #[error("checkpoint state is for section {state}, its region is section {region}")]
    #[diagnostic(code(mtf::checkpoint::section))]
    Section {
        /// Section of the state.
        state: u8,
        /// Section of the region.
        region: u8,
    },
    /// The DTD does not declare the state's section.
    #[error("checkpoint state is for section {section}, which the DTD does not declare")]
    #[diagnostic(code(mtf::checkpoint::section))]
    UndeclaredSection {
        /// The section id.
        section: u8,
    },
    /// The state has another number of slots than the schema gives the scope.
    #[error(
        "checkpoint state has {found} field states, the DTD gives section {section} {expected}: \
         it was taken with another DTD"
    )]
    #[diagnostic(code(mtf::checkpoint::shape))]
    Shape {
        /// Section id.
        section: u8,
        /// Slots the schema gives the scope.
        expected: usize,
        /// Slots in the checkpoint.
        found: usize,
    },
    /// A slot state that no sequence of metadata records can reach.
    #[error("checkpoint field state {slot} has {why}")]
    #[diagnostic(code(mtf::checkpoint::state))]
    BadSlot {
        /// Index of the slot state in the scope.
        slot: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// More live sets, or a larger one, than a scope can hold.
    #[error(
        "checkpoint live sets exceed the limits ({sets} sets, one of {values} values; at most \
         {MAX_LIVE_SETS} sets of {LIVE_SET_CAPACITY})"
    )]
    #[diagnostic(code(mtf::checkpoint::live_sets))]
    LiveSets {
        /// Sets in the checkpoint.
        sets: usize,
        /// Values of the largest offending set.
        values: usize,
    },
    /// No state where the decoder needs one.
    #[error("checkpoint has no metadata state at offset {offset}, inside a region")]
    #[diagnostic(code(mtf::checkpoint::state))]
    NoState {
        /// The checkpoint's offset.
        offset: u64,
    },
}

impl<'a> Reader<'a> {
    /// The records of the trace from a checkpoint on: exactly the events a full decode
    /// ([`Reader::records`]) yields from the checkpoint's record on — the same record indices,
    /// offsets, values and problems — to the end of the trace, without decoding what comes
    /// before. (From a checkpoint of a decode of one section, the rest of that decode.) The checkpoint may come from [`Records::checkpoint`](super::Records::checkpoint)
    /// of any reader of the same trace and schema, or from a stored index.
    ///
    /// An error if the checkpoint does not fit this trace: a region or offset it does not
    /// have, or a state that is not one of this schema's.
    pub fn records_from(&self, cp: &Checkpoint) -> Result<super::Records<'_>, ResumeError> {
        let regions = &self.input.regions;
        if !cp.entered {
            // Before the first region: of the whole trace, or of a section decode (whose
            // region may be one past the last: a section the trace does not have).
            let fits = cp.state.is_none()
                && cp.record == 0
                && if cp.alone {
                    cp.region as usize <= regions.len()
                } else {
                    cp.region == 0
                };
            if !fits {
                return Err(ResumeError::Region {
                    region: cp.region as usize,
                    regions: regions.len(),
                });
            }
            return Ok(super::Records::resume(self, cp, None));
        }
        let region = *regions.get(cp.region as usize).ok_or(ResumeError::Region {
            region: cp.region as usize,
            regions: regions.len(),
        })?;
        if !(region.start..=region.end).contains(&cp.offset) {
            return Err(ResumeError::Offset {
                offset: cp.offset,
                start: region.start,
                end: region.end,
            });
        }
        let scope = match &cp.state {
            Some(state) => {
                if state.section != region.section {
                    return Err(ResumeError::Section {
                        state: state.section,
                        region: region.section,
                    });
                }
                if self.compiled.tags[region.section as usize].is_none() {
                    return Err(ResumeError::UndeclaredSection {
                        section: region.section,
                    });
                }
                Some(state.to_scope(self.schema, self.input.live)?)
            }
            None if cp.offset == region.end => None,
            None => return Err(ResumeError::NoState { offset: cp.offset }),
        };
        Ok(super::Records::resume(self, cp, scope))
    }
}

// ------------------------------------------------------------------------------------------
// The stored form (docs/format.md §15.3).

// Design: the stored form lists only the slot states that differ from the state the scope
// starts with (a few fields change in a typical trace, out of dozens), and each live set's
// values, so a checkpoint of a trace without live sets takes tens of bytes. Interpretations are
// stored as metadata property codes and words (§5.4), so reading one back goes through the same
// checks as a metadata record. Every count is checked against the bytes left before anything is
// allocated for it.

/// Flag bits of a stored checkpoint.
const F_ENTERED: u8 = 1;
const F_EXACT: u8 = 2;
const F_STATE: u8 = 4;
const F_ALONE: u8 = 8;
const F_FINISHED: u8 = 16;
/// Bytes of one stored slot state.
const SLOT_BYTES: usize = 4 + 4 + 4 * 8;

/// Why stored checkpoint bytes cannot be read ([`Checkpoint::from_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Diagnostic)]
#[error("stored checkpoint: {what} at byte {at} of the checkpoint")]
#[diagnostic(code(mtf::checkpoint::stored))]
pub struct StoredError {
    /// Offset within the checkpoint's bytes.
    pub at: usize,
    /// What is wrong.
    pub what: String,
}

struct Cursor<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl Cursor<'_> {
    fn err(&self, what: impl Into<String>) -> StoredError {
        StoredError {
            at: self.at,
            what: what.into(),
        }
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], StoredError> {
        if self.bytes.len() - self.at < n {
            return Err(self.err(format!("{what} is cut short")));
        }
        let b = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(b)
    }
    fn u8(&mut self, what: &str) -> Result<u8, StoredError> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, StoredError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, StoredError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }
}

impl Checkpoint {
    /// Append the stored form of the checkpoint (docs/format.md §15.3) to `out`. `schema` is
    /// the one the checkpoint was taken with: only slot states that differ from the scope's
    /// initial state are stored.
    pub fn to_bytes(&self, schema: &Schema, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.record.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.region.to_le_bytes());
        let flags = (self.entered as u8 * F_ENTERED)
            | (self.exact as u8 * F_EXACT)
            | (self.state.is_some() as u8 * F_STATE)
            | (self.alone as u8 * F_ALONE)
            | (self.finished as u8 * F_FINISHED);
        out.push(flags);
        out.extend_from_slice(&self.dropped.to_le_bytes());
        let Some(state) = &self.state else {
            return;
        };
        out.push(state.section);
        out.extend_from_slice(&(state.slots.len() as u32).to_le_bytes());
        let initial = schema
            .scope_for(state.section)
            .map(|_| ScopeState::new(schema, state.section).slots);
        let changed: Vec<usize> = (0..state.slots.len())
            .filter(|&i| initial.as_ref().and_then(|s| s.get(i)) != Some(&state.slots[i]))
            .collect();
        out.extend_from_slice(&(changed.len() as u32).to_le_bytes());
        for i in changed {
            let st = &state.slots[i];
            let prop = crate::layout::MetaProperty::Interp(st.interp);
            let (words, _) = prop.words();
            out.extend_from_slice(&(i as u32).to_le_bytes());
            out.extend_from_slice(&[st.width, st.lastwidth, st.liveset, prop.code()]);
            out.extend_from_slice(&words[0].to_le_bytes());
            out.extend_from_slice(&words[1].to_le_bytes());
            out.extend_from_slice(&st.prev.to_le_bytes());
            out.extend_from_slice(&st.cursor.to_le_bytes());
        }
        out.push(state.sets.len() as u8);
        for set in &state.sets {
            out.extend_from_slice(&(set.len() as u32).to_le_bytes());
            for v in set {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// Read a checkpoint stored by [`Checkpoint::to_bytes`] with the same schema; all of
    /// `bytes` must be used. Counts are checked against the bytes before anything is
    /// allocated, and every slot state against the metadata rules; whether the checkpoint fits
    /// a trace is checked by [`Reader::records_from`].
    pub fn from_bytes(bytes: &[u8], schema: &Schema) -> Result<Checkpoint, StoredError> {
        let mut c = Cursor { bytes, at: 0 };
        let record = c.u64("the record number")?;
        let offset = c.u64("the offset")?;
        let region = c.u32("the region")?;
        let flags_at = c.at;
        let flags = c.u8("the flags")?;
        if flags & !(F_ENTERED | F_EXACT | F_STATE | F_ALONE | F_FINISHED) != 0 {
            c.at = flags_at;
            return Err(c.err(format!("unknown flag bits 0x{flags:02x}")));
        }
        let dropped = c.u64("the dropped-problem count")?;
        let mut cp = Checkpoint {
            record,
            offset,
            region,
            entered: flags & F_ENTERED != 0,
            alone: flags & F_ALONE != 0,
            state: None,
            exact: flags & F_EXACT != 0,
            finished: flags & F_FINISHED != 0,
            dropped,
        };
        if flags & F_STATE != 0 {
            let section_at = c.at;
            let section = c.u8("the section")?;
            if schema.scope_for(section).is_none() {
                c.at = section_at;
                return Err(c.err(format!("section {section} is not declared in the DTD")));
            }
            let mut slots = ScopeState::new(schema, section).slots;
            let n_at = c.at;
            let n = c.u32("the number of field states")? as usize;
            if n != slots.len() {
                c.at = n_at;
                return Err(c.err(format!(
                    "{n} field states, the DTD gives section {section} {}: the index was made \
                     with another DTD",
                    slots.len()
                )));
            }
            let changed = c.u32("the number of changed field states")? as usize;
            if changed > n || changed * SLOT_BYTES > c.left() {
                return Err(c.err(format!("{changed} changed field states do not fit")));
            }
            let mut last: Option<usize> = None;
            for _ in 0..changed {
                let at = c.at;
                let i = c.u32("a field state")? as usize;
                if i >= n || last.is_some_and(|l| i <= l) {
                    c.at = at;
                    return Err(c.err(format!("field state {i} is out of order or range")));
                }
                last = Some(i);
                let b = c.take(4, "a field state")?;
                let (width, lastwidth, liveset, code) = (b[0], b[1], b[2], b[3]);
                let words = [c.u64("a field state")?, c.u64("a field state")?];
                let prop = match crate::layout::MetaProperty::from_code(code, words, 64) {
                    Ok(crate::layout::MetaProperty::Interp(i)) => i,
                    Ok(_) => {
                        c.at = at + 7;
                        return Err(c.err(format!("property code {code} is not an interpretation")));
                    }
                    Err(e) => {
                        c.at = at + 7;
                        return Err(c.err(e.to_string()));
                    }
                };
                let prev = c.u64("a field state")?;
                let cursor = c.u64("a field state")? as i64;
                slots[i] = SlotState {
                    width,
                    lastwidth,
                    interp: prop,
                    prev,
                    cursor,
                    liveset,
                };
            }
            let nsets = c.u8("the number of live sets")? as usize;
            if nsets > MAX_LIVE_SETS as usize {
                return Err(c.err(format!("{nsets} live sets (at most {MAX_LIVE_SETS})")));
            }
            let mut sets = Vec::with_capacity(nsets);
            for _ in 0..nsets {
                let len = c.u32("a live set")? as usize;
                if len > LIVE_SET_CAPACITY || len * 8 > c.left() {
                    return Err(c.err(format!("a live set of {len} values does not fit")));
                }
                let b = c.take(len * 8, "a live set")?;
                sets.push(
                    b.chunks_exact(8)
                        .map(|w| {
                            let mut a = [0u8; 8];
                            a.copy_from_slice(w);
                            u64::from_le_bytes(a)
                        })
                        .collect(),
                );
            }
            let state = MetaState {
                section,
                slots,
                sets,
            };
            // The slot states obey the metadata rules (the trace's live/1 bit is checked when
            // the checkpoint is used).
            if let Err(e) = state.to_scope(schema, true) {
                return Err(c.err(e.to_string()));
            }
            cp.state = Some(state);
        }
        if c.left() != 0 {
            return Err(c.err(format!("{} bytes left over", c.left())));
        }
        Ok(cp)
    }
}
