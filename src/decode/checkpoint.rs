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
