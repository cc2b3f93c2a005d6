//! Findings: where a trace breaks its declarations, and what is left at the end.

use crate::dtd::analysis::{Severity, SpaceId};
use crate::dtd::RecordId;

/// Where a record is in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// Its index (as `mtf dump` numbers records).
    pub record: u64,
    /// Its byte offset.
    pub offset: u64,
    /// Its record type.
    pub record_type: RecordId,
}

/// What kind of declaration a finding concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingKind {
    /// A reference to an id that is not alive (`refers`).
    Undefined,
    /// A define of an id that is alive.
    Redefined,
    /// An undefine of an id that is not alive (dead, or never defined).
    NotAlive,
    /// A close with no level open.
    Unbalanced,
    /// A close that names another id than the innermost open level.
    Mismatched,
    /// A depth field that is not the nesting depth.
    Depth,
    /// A value smaller than the previous one of its series (or equal, for `increasing`).
    Backwards,
    /// A byte count whose expression overflows or goes negative.
    Bytes,
    /// An id alive at the end of the trace (a leak).
    AliveAtEnd,
    /// A nesting level open at the end of the trace.
    OpenAtEnd,
    /// More entries to track than the limit: interpretation stopped here.
    Limit,
}

impl FindingKind {
    /// A short name, for counts per kind.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::Undefined => "use of an id not alive",
            FindingKind::Redefined => "define of a live id",
            FindingKind::NotAlive => "undefine of an id not alive",
            FindingKind::Unbalanced => "close with nothing open",
            FindingKind::Mismatched => "close of another level",
            FindingKind::Depth => "wrong nesting depth",
            FindingKind::Backwards => "value going backwards",
            FindingKind::Bytes => "byte count not computable",
            FindingKind::AliveAtEnd => "alive at the end",
            FindingKind::OpenAtEnd => "open at the end",
            FindingKind::Limit => "too many ids",
        }
    }
}

/// One broken declaration, or one piece of information (a leak).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// How the DTD treats it (a kind the DTD declares normal is not reported at all).
    pub severity: Severity,
    /// The record concerned (for the findings at the end: the record that defined the id or
    /// opened the level).
    pub at: At,
    /// The namespace (for `Backwards`, none).
    pub space: Option<SpaceId>,
    /// The key of a keyed namespace or series (0 when not keyed).
    pub key: u64,
    /// The id, or for `Backwards` the value.
    pub id: u64,
    /// The record that defined the id (opened the level; for `Backwards`, the record with the
    /// previous value; for `NotAlive` and `Undefined` of an id undefined recently, the record
    /// that undefined it), where known.
    pub defined: Option<At>,
    /// For `Mismatched`, the id of the innermost open level; for `Backwards`, the previous
    /// value; for `Depth`, the depth of the level it nests in; for `Limit`, the limit.
    pub expected: Option<u64>,
    /// For `Backwards`, the series (field type name); for `Depth`, the field name; for
    /// `NotAlive` and `Undefined`, `"undefined"` when the id was undefined recently (a double
    /// free, a use after a free: always an error).
    pub what: Option<String>,
}

impl Finding {
    /// An error of `kind` at `at` that names nothing else; a finding that does fills in the
    /// other fields over it (`Finding { space, key, id, ..Finding::error(kind, at) }`).
    pub(super) fn error(kind: FindingKind, at: At) -> Finding {
        Finding {
            kind,
            severity: Severity::Error,
            at,
            space: None,
            key: 0,
            id: 0,
            defined: None,
            expected: None,
            what: None,
        }
    }
}

/// An id alive or a level open at the end, packed until its finding is made.
pub(super) struct AtEnd {
    pub(super) record: u64,
    pub(super) offset: u64,
    pub(super) key: u64,
    pub(super) id: u64,
    pub(super) space: SpaceId,
    pub(super) record_type: RecordId,
    pub(super) open: bool,
}

impl AtEnd {
    pub(super) fn new(space: SpaceId, key: u64, id: u64, at: At, open: bool) -> AtEnd {
        AtEnd {
            record: at.record,
            offset: at.offset,
            key,
            id,
            space,
            record_type: at.record_type,
            open,
        }
    }
}

pub(super) fn end_finding(
    kind: FindingKind,
    severity: Severity,
    space: SpaceId,
    key: u64,
    id: u64,
    at: At,
) -> Finding {
    Finding {
        severity,
        space: Some(space),
        key,
        id,
        defined: Some(at),
        ..Finding::error(kind, at)
    }
}
