//! The resolved analysis declarations of a DTD (extension `analysis/1`, docs/format.md §14):
//! what each record does to named namespaces of ids (define, undefine, refer, open and close a
//! nesting level), how many bytes it allocates, its time, thread and allocation site.
//!
//! They never change how a trace decodes: a reader that does not know them reads every trace
//! the same. [`crate::analysis`] interprets them over a trace.

// Design: the declarations are ordinary DTD 1.0 properties (`address.defines = block;`), so a
// 1.0 reader keeps them as unknown properties and ignores them (§3.3); the resolver turns them
// into this table, indexed by record type, with slots instead of names, so that interpreting a
// record is a walk over a short list of actions with no lookup by name.

use super::ids::{RecordId, SlotId, Span};

/// Index of a namespace in [`Analysis::namespaces`].
pub type SpaceId = u32;

/// The newest version of extension `analysis` this reader knows; it reads every version from
/// 1 up to it. Version 2 adds `F.dead = null;` (docs/format.md §14.1).
pub const ANALYSIS_VERSION: u64 = 3;

/// The newest version of extension `stacks` this reader knows (docs/format.md §17): call
/// stacks held in a trace, and calling contexts derived from nesting.
pub const STACKS_VERSION: u64 = 1;

/// Every analysis declaration of a DTD. Empty (`version == 0`) when the DTD declares none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Analysis {
    /// The declared version (`analysis.version = 1;`), 0 when the DTD declares none.
    pub version: u64,
    /// The namespaces, in order of first declaration.
    pub namespaces: Vec<Namespace>,
    /// Per record type (indexed by [`RecordId`]), what its records do; empty for record types
    /// without declarations.
    pub records: Vec<RecordDecl>,
    /// The unit of every record's time: the finest unit any field declares.
    pub time_unit: Option<TimeUnit>,
    /// The declared version of extension `stacks` (`stacks.version = 1;`), 0 when the DTD
    /// declares none (its roles are then 1.0 properties that mean nothing).
    pub stacks: u64,
}

impl Analysis {
    /// Whether the DTD declares anything.
    pub fn is_declared(&self) -> bool {
        self.version != 0
    }

    /// A namespace by name.
    pub fn space_by_name(&self, name: &str) -> Option<SpaceId> {
        self.namespaces
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as SpaceId)
    }

    /// The declarations of a record type (empty when it has none).
    pub fn record(&self, id: RecordId) -> &RecordDecl {
        static EMPTY: RecordDecl = RecordDecl::EMPTY;
        self.records.get(id as usize).unwrap_or(&EMPTY)
    }
}

/// What the ids of a namespace are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpaceKind {
    /// Ids that come alive and die (blocks, objects, threads): checked, and turned into heap
    /// events.
    Ids,
    /// Nesting levels (method entry and exit): a stack per key.
    Nesting,
    /// A table that names things (classes, strings, call stacks): ids defined once, possibly
    /// after their first use (a table section at the end of the trace); references to it are
    /// not checked, and it yields no heap events.
    Table,
}

impl SpaceKind {
    /// The keyword (`ids`, `nesting`, `table`).
    pub fn keyword(self) -> &'static str {
        match self {
            SpaceKind::Ids => "ids",
            SpaceKind::Nesting => "nesting",
            SpaceKind::Table => "table",
        }
    }
}

/// How a kind of finding is treated (`NS.unknown = normal;`, `NS.atEnd = error;`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// A problem: the trace is inconsistent.
    Error,
    /// Reported as information, not a problem (leaks at the end, by default).
    Info,
    /// Normal for this format: counted, not reported.
    Normal,
}

impl Severity {
    /// The keyword (`error`, `info`, `normal`).
    pub fn keyword(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Info => "info",
            Severity::Normal => "normal",
        }
    }
}

/// A time unit (`time.time = ns;`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimeUnit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
    /// A logical clock (method boundaries, event counts): no conversion to other units.
    Tick,
}

impl TimeUnit {
    /// Every unit with its keyword.
    pub const ALL: [(&'static str, TimeUnit); 5] = [
        ("ns", TimeUnit::Ns),
        ("us", TimeUnit::Us),
        ("ms", TimeUnit::Ms),
        ("s", TimeUnit::S),
        ("tick", TimeUnit::Tick),
    ];

    /// The keyword.
    pub fn keyword(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, u)| *u == self)
            .map_or("tick", |(k, _)| k)
    }

    /// Nanoseconds per unit (1 for ticks).
    pub fn nanos(self) -> u64 {
        match self {
            TimeUnit::Ns | TimeUnit::Tick => 1,
            TimeUnit::Us => 1_000,
            TimeUnit::Ms => 1_000_000,
            TimeUnit::S => 1_000_000_000,
        }
    }
}

/// A declared namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Namespace {
    /// Its name, as written.
    pub name: String,
    /// What its ids are.
    pub kind: SpaceKind,
    /// The name of the field that keys it (`block.key = heap;`): ids are per value of that
    /// field (per heap, per thread). Every record that uses the namespace has that field.
    pub key: Option<String>,
    /// Whether many live blocks may hold the same id (heaptrack's allocation-info index); an
    /// undefine ends the most recent of them.
    pub shared: bool,
    /// The id that names nothing (`free(NULL)`): defining, undefining or referring to it does
    /// nothing.
    pub null: Option<u64>,
    /// An undefine of, or a reference to, an id that is not alive (`unknown = normal` for a
    /// trace that starts after the program did: frees of blocks allocated before tracing).
    pub unknown: Severity,
    /// A reference to an id that is not alive (`unknownRefers = info;`): by default as
    /// `unknown`. Objects made before tracing began are used by later records (ET's static
    /// objects), which is normal for some formats where an undefine of them is not.
    pub unknown_refers: Severity,
    /// Ids alive (nesting levels open) at the end of the trace: information (leaks) by default.
    pub at_end: Severity,
    /// Whether a closing record must name the id the level was opened with (`close = same`,
    /// the default for nesting namespaces) or may close the innermost level whatever it names
    /// (`close = any`).
    pub close_same: bool,
    /// The first id a `definesNext` record defines (`first = 1;`; 0 by default).
    pub first: u64,
    /// Whether some record declares a byte count for its ids.
    pub sized: bool,
    /// The namespace whose names name the allocation sites of this namespace's ids, when the
    /// sites are ids of a namespace; `None` with `site_text` when sites are text.
    pub site_space: Option<SpaceId>,
    /// Whether the sites of this namespace's ids are text held in the trace (a string reference).
    pub site_text: bool,
    /// Fields of the defining record kept with each live id, for lookups
    /// (`allocinfo.size.value`): their names.
    pub stored: Vec<String>,
    /// Whether the namespace is a stack tree: a record declares the parent of its ids
    /// (`parent.parent = trace;`, extension stacks/1).
    pub tree: bool,
    /// After a free, the id the temporary rule compares the next free with, instead of none
    /// (`block.temporaryReset = 0;`, extension stacks/1: heaptrack's reader).
    pub temporary_reset: Option<u64>,
    /// Where it was first declared.
    pub span: Span,
}

/// What one record type does (see [`Analysis::records`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecordDecl {
    /// Its actions on namespaces, in the order they apply: undefines and closes first, then
    /// references, then defines and opens (so that `realloc` may free and define one id).
    pub actions: Vec<Action>,
    /// Its byte counts: the first whose guard holds applies to its define.
    pub bytes: Vec<Bytes>,
    /// The slot of its alignment (`align.align = yes;`).
    pub align: Option<SlotId>,
    /// Its time fields with their units; the record's time is their sum in
    /// [`Analysis::time_unit`].
    pub time: Vec<(SlotId, TimeUnit)>,
    /// The slot of its thread (`thread.thread = yes;`).
    pub thread: Option<SlotId>,
    /// Its fields that are sizes in bytes (`size.size = bytes;`).
    pub sizes: Vec<SlotId>,
    /// The slot holding how many bytes of the block the record ends or moves away were
    /// resident, touched by the program (`present.resident = yes;`, version 3).
    pub resident: Option<SlotId>,
    /// Its allocation site.
    pub site: Option<Site>,
    /// Values that must not go backwards.
    pub monotonic: Vec<Monotonic>,
    /// Fields that must equal the nesting depth of a namespace.
    pub depth: Vec<Depth>,
    /// Fields that name the id the record defines (`name.names = class;`).
    pub names: Vec<(SlotId, SpaceId)>,
    /// Fields kept with the ids the record defines, per namespace: `(space, index in
    /// Namespace::stored, slot)`.
    pub stores: Vec<(SpaceId, u16, SlotId)>,
    /// Guards of fields without a byte count (`old.when = address; old.isNot = 0;`): the
    /// field's roles and time apply only when its guard holds.
    pub guards: Vec<(SlotId, Guard)>,
    /// Its roles of extension stacks/1 (parents, frames and their parts, calling contexts,
    /// stack rules), in field order.
    pub stack: Vec<StackRole>,
}

/// One role of extension stacks/1 (docs/format.md §17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackRole {
    /// The field.
    pub slot: SlotId,
    /// The namespace the role names.
    pub space: SpaceId,
    /// What the field is.
    pub kind: StackKind,
}

/// What a field is to extension stacks/1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackKind {
    /// `F.parent = NS;`: the parent of the id the record defines in NS (a stack tree).
    Parent,
    /// `F.frame = FS;`: the frame (an id of FS) of the node the record defines, or of the
    /// nesting level it opens.
    Frame,
    /// `F.function = FS;` and the other parts: a part of the frame the record defines in FS;
    /// inside a repeat, of one more frame inlined at the same id, innermost first.
    Part(FramePart),
    /// `F.context = NS;`: the id the record defines has the levels of nesting namespace NS
    /// open for its key as its calling context.
    Context,
    /// `F.stops`, `F.skips`, `F.suppresses`: a rule whose text is the field's.
    Rule(StackRule),
}

/// A part of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramePart {
    /// The function's name (text).
    Function,
    /// A qualifier shown before it with `.` (a Java method's class; text).
    Owner,
    /// The source file (text).
    File,
    /// The line (an integer).
    Line,
    /// The module (text).
    Module,
    /// The instruction pointer (an integer).
    Address,
}

/// A rule about stacks, held in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackRule {
    /// Walking from the leaf, stop after a frame of this function (`main`).
    Stop,
    /// A node whose frame is this function is its parent's (`operator new`).
    Skip,
    /// A leak-suppression pattern (`*`, `?`): leaks whose stack names it are reported apart.
    Suppress,
}

impl RecordDecl {
    const EMPTY: RecordDecl = RecordDecl {
        actions: Vec::new(),
        bytes: Vec::new(),
        align: None,
        time: Vec::new(),
        thread: None,
        sizes: Vec::new(),
        resident: None,
        site: None,
        monotonic: Vec::new(),
        depth: Vec::new(),
        names: Vec::new(),
        stores: Vec::new(),
        guards: Vec::new(),
        stack: Vec::new(),
    };

    /// Whether the record type has no declarations.
    pub fn is_empty(&self) -> bool {
        *self == Self::EMPTY
    }

    /// Whether the roles and time of field `slot` apply, given the record's integer values
    /// (`int`): always, unless the field has a guard that does not hold.
    pub fn applies(&self, slot: SlotId, int: impl Fn(SlotId) -> Option<u64>) -> bool {
        match self.guards.iter().find(|(s, _)| *s == slot) {
            Some((_, g)) => g.holds(int(g.slot)),
            None => true,
        }
    }
}

/// A guard of a field's roles and time (`F.when = G; F.is = V;` or `F.isNot = V;`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    /// The field it tests.
    pub slot: SlotId,
    /// The value it compares with.
    pub value: u64,
    /// `isNot`: it holds when the field does not hold the value.
    pub negated: bool,
}

impl Guard {
    /// Whether it holds for the tested field's value (a field that did not occur holds no
    /// value: `is` fails, `isNot` holds).
    pub fn holds(&self, v: Option<u64>) -> bool {
        (v == Some(self.value)) != self.negated
    }
}

/// What an action does to its namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    /// The id ends (`undefines`).
    Undefine,
    /// The innermost nesting level ends (`closes`).
    Close,
    /// The id must be alive (`refers`).
    Refer,
    /// The id comes alive (`defines`).
    Define,
    /// The next id of the namespace comes alive (`definesNext`): the field's value is not the
    /// id.
    DefineNext,
    /// A nesting level begins (`opens`).
    Open,
}

impl ActionKind {
    /// The property keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            ActionKind::Undefine => "undefines",
            ActionKind::Close => "closes",
            ActionKind::Refer => "refers",
            ActionKind::Define => "defines",
            ActionKind::DefineNext => "definesNext",
            ActionKind::Open => "opens",
        }
    }
}

/// One action of a record on a namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    /// What it does.
    pub kind: ActionKind,
    /// The namespace.
    pub space: SpaceId,
    /// The field that holds the id.
    pub slot: SlotId,
    /// The field that keys the namespace in this record (`None` when it is not keyed).
    pub key: Option<SlotId>,
    /// `F.dead = null;` (version 2, on an undefine): an id that is not alive is taken as the
    /// namespace's null id, so the record does nothing to it (mdriver's `realloc` of an id never
    /// allocated, or freed, is `realloc(NULL, …)`).
    pub dead_null: bool,
    /// `F.leaves = null;` (version 2, on an undefine): after the record the id names the null
    /// id until it is defined again, so undefining it or referring to it does nothing (mdriver's
    /// `realloc(p, 0)` sets `blocks[id]` to NULL: a later `f id` is `free(NULL)`), where after
    /// another undefine it would be a double free.
    pub leaves_null: bool,
    /// Where it was declared.
    pub span: Span,
}

/// A byte count (`address.bytes = size.value;`), with its guard.
#[derive(Debug, Clone, PartialEq)]
pub struct Bytes {
    /// The expression.
    pub expr: AExpr,
    /// Applies only when this slot holds this value (`nmemb.when = func; nmemb.is = 1;`).
    pub when: Option<(SlotId, u64)>,
}

/// An expression of an analysis declaration: unsigned 64-bit, evaluated left to right; an
/// overflow or a negative intermediate result makes it fail for that record.
#[derive(Debug, Clone, PartialEq)]
pub enum AExpr {
    /// A constant.
    Const(u64),
    /// The value of a field of the record (its first occurrence).
    Field(SlotId),
    /// A field kept with the id the record refers to in a namespace (`allocinfo.size.value`).
    Lookup {
        /// The namespace.
        space: SpaceId,
        /// Index in [`Namespace::stored`].
        stored: u16,
    },
    /// Sum.
    Add(Box<AExpr>, Box<AExpr>),
    /// Difference.
    Sub(Box<AExpr>, Box<AExpr>),
    /// Product.
    Mul(Box<AExpr>, Box<AExpr>),
}

/// Where a record's allocation site comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// A field of the record: an id of a namespace that names it, or (`space: None`) a string
    /// reference whose text is the name.
    Field {
        /// The slot.
        slot: SlotId,
        /// The namespace whose names name it, if any.
        space: Option<SpaceId>,
    },
    /// The site kept with the id the record refers to in a namespace (heaptrack: the
    /// allocation-info record's call stack).
    Inherited {
        /// The namespace referred to.
        space: SpaceId,
    },
}

/// A value that must not go backwards (`time.monotonic = thread;`).
#[derive(Debug, Clone, PartialEq)]
pub struct Monotonic {
    /// The field; `None` for the record's time (all its time fields).
    pub slot: Option<SlotId>,
    /// The series it belongs to (records share a series by field type name, `time` for the
    /// record time, and key: `trace` or the key field's name; docs/format.md §14.1): an index
    /// into [`Analysis`]'s series names, see [`Monotonic::series`].
    pub series: u32,
    /// The series' name.
    pub series_name: String,
    /// The field that keys it (per thread), if any.
    pub key: Option<SlotId>,
    /// Whether equal values are allowed (`nondecreasing`, the default) or not.
    pub strict: bool,
}

/// A depth field of a record that opens a nesting level (TPTP's `stackDepth`): it must be
/// greater than the depth of the level it nests in (levels of untraced methods leave gaps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Depth {
    /// The field.
    pub slot: SlotId,
    /// The nesting namespace.
    pub space: SpaceId,
}
