//! Heap events: what the allocation declarations of a trace's DTD say happened, in trace order.
//!
//! A producer (the declarations interpreted over a trace) yields one [`HeapEvent`] per
//! allocation-relevant action of a data record; a record that both frees and allocates (a
//! moving realloc) yields one [`HeapOp::Move`] (docs/format.md §14.3 says which undefine pairs
//! with which define, and in what order a record's events come). Consumers (statistics, `replay`, `simulate`)
//! never look at record names: everything they know comes from these events.

/// One allocation event of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapEvent {
    /// The data record's index in the trace (0-based, counted as `mtf dump` numbers them).
    pub record: u64,
    /// The namespace the ids belong to (an index into the declared namespaces).
    pub space: u32,
    /// The key of a keyed namespace (per heap, per thread); 0 when the namespace is not keyed.
    pub key: u64,
    /// The thread the DTD declares for this record, where it declares one.
    pub thread: Option<u64>,
    /// The record's declared time, where the DTD declares one (in the declared unit).
    pub time: Option<u64>,
    /// The allocation site the DTD declares for this record (a call-stack id, a class id),
    /// where it declares one; the producer resolves it to text.
    pub site: Option<u64>,
    /// The calling context of an allocation (extension stacks/1: the method entries open on its
    /// thread), a node the producer resolves to frames; `None` without one. A site in a stack
    /// tree (heaptrack) is its own stack and needs none here.
    pub stack: Option<u64>,
    /// What happened.
    pub op: HeapOp,
}

/// The places of the blocks an event touches among the live blocks of its namespace, as the
/// interpreter numbers them (a number is reused once its block died and the record that ended
/// it is over): the block the event ends or moves away (`gone`), the block it makes (`new`), and
/// the block an allocation of an id already alive puts out of the live state (`replaced`);
/// [`Places::NONE`] where there is none. The statistics keep each live block's figures at its
/// number, so that they find it without a look-up of their own: the interpreter's table of live
/// ids is the one live table (docs/stats.md, "Memory"). Not part of the stable interface.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Places {
    /// The block ended or moved away.
    pub gone: u32,
    /// The block made.
    pub new: u32,
    /// The block replaced by an allocation of a live id.
    pub replaced: u32,
}

impl Places {
    /// No place.
    pub const NONE: u32 = u32::MAX;
    /// No places at all.
    pub const EMPTY: Places = Places {
        gone: Places::NONE,
        new: Places::NONE,
        replaced: Places::NONE,
    };
}

/// What an allocation event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapOp {
    /// Block `id` comes alive with `size` bytes (`align` where the DTD declares an alignment).
    /// In a namespace whose ids are shared by many live blocks (heaptrack's allocation-info
    /// index), several blocks may hold the same id at once.
    Alloc {
        /// The block's id (an address, an object id, an index).
        id: u64,
        /// Its size in bytes (the declared byte-count expression, e.g. `nmemb × size`).
        size: u64,
        /// Its requested alignment, where declared.
        align: Option<u64>,
    },
    /// Block `id` dies (in a shared namespace: the most recently allocated block holding it).
    Free {
        /// The block's id.
        id: u64,
    },
    /// Block `old` becomes block `new` (realloc, objMove); `old == new` when it stays in place.
    /// `size` is the new size where the record declares one (a realloc), `None` when the block
    /// keeps its size (a move by a copying collector).
    Move {
        /// The id the block had.
        old: u64,
        /// The id it has now.
        new: u64,
        /// Its new size, where declared.
        size: Option<u64>,
    },
}

impl HeapOp {
    /// What kind of operation it is: a move with a size is a reallocation.
    pub fn kind(&self) -> OpKind {
        match self {
            HeapOp::Alloc { .. } => OpKind::Alloc,
            HeapOp::Free { .. } => OpKind::Free,
            HeapOp::Move { size: Some(_), .. } => OpKind::Realloc,
            HeapOp::Move { size: None, .. } => OpKind::Move,
        }
    }
}

/// The kinds of heap operation that `replay` plays, `simulate` models and both count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// `malloc(size)` (aligned where the event asks).
    Alloc,
    /// `free(id)`.
    Free,
    /// `realloc(id, size)`: a [`HeapOp::Move`] with a size.
    Realloc,
    /// A block renamed without an allocator call (a collector's move): a [`HeapOp::Move`]
    /// without a size.
    Move,
}

// Design: one type and one counting match for `replay` (what the trace asks for, and each
// run) and `simulate` (what each policy's model did), rather than three structs of the same
// fields. They differ in which operations reach the kind counts — a replay counts every one
// (`count`), its summary line sums them to the events; the model counts the ones it carried out
// (`count_kind`) and the skipped ones apart (`count_unknown`) — and both figures are printed
// as they were, so that difference stays with the holders, which say it.
/// Heap operations counted by kind, and the frees, reallocations and moves among them that
/// named a block that was not live — the one set of counts of `replay` (the trace's summary and
/// each run) and `simulate` (each policy). Which operations a holder counts (every one the
/// trace has, or the ones its model carried out) its documentation says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "replay", derive(serde::Serialize, serde::Deserialize))]
pub struct OpCounts {
    /// Allocations.
    pub allocs: u64,
    /// Frees.
    pub frees: u64,
    /// Reallocations (moves with a size).
    pub reallocs: u64,
    /// Moves without a size (renamed, no allocator call).
    pub moves: u64,
    /// Frees of a block that was not live.
    pub unknown_frees: u64,
    /// Reallocations or moves of a block that was not live.
    pub unknown_moves: u64,
}

impl OpCounts {
    /// Counts an operation of `kind`, and when it named a block that was not live (`live`
    /// false; an allocation names none), that too.
    pub fn count(&mut self, kind: OpKind, live: bool) {
        self.count_kind(kind);
        if !live {
            self.count_unknown(kind);
        }
    }

    /// Counts an operation of `kind` by its kind only.
    pub fn count_kind(&mut self, kind: OpKind) {
        match kind {
            OpKind::Alloc => self.allocs += 1,
            OpKind::Free => self.frees += 1,
            OpKind::Realloc => self.reallocs += 1,
            OpKind::Move => self.moves += 1,
        }
    }

    /// Counts an operation of `kind` that named a block that was not live, as that only.
    pub fn count_unknown(&mut self, kind: OpKind) {
        match kind {
            OpKind::Alloc => {}
            OpKind::Free => self.unknown_frees += 1,
            OpKind::Realloc | OpKind::Move => self.unknown_moves += 1,
        }
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &OpCounts) {
        self.allocs += other.allocs;
        self.frees += other.frees;
        self.reallocs += other.reallocs;
        self.moves += other.moves;
        self.unknown_frees += other.unknown_frees;
        self.unknown_moves += other.unknown_moves;
    }

    /// Operations of every kind.
    pub fn total(&self) -> u64 {
        self.allocs + self.frees + self.reallocs + self.moves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_counted_by_kind_and_unknown_blocks_beside() {
        let ops = [
            (
                HeapOp::Alloc {
                    id: 1,
                    size: 8,
                    align: None,
                },
                true,
            ),
            (HeapOp::Free { id: 1 }, true),
            (HeapOp::Free { id: 2 }, false),
            (
                HeapOp::Move {
                    old: 3,
                    new: 4,
                    size: Some(16),
                },
                false,
            ),
            (
                HeapOp::Move {
                    old: 4,
                    new: 5,
                    size: None,
                },
                true,
            ),
            (
                HeapOp::Move {
                    old: 6,
                    new: 7,
                    size: None,
                },
                false,
            ),
        ];
        let mut c = OpCounts::default();
        for (op, live) in ops {
            c.count(op.kind(), live);
        }
        let want = OpCounts {
            allocs: 1,
            frees: 2,
            reallocs: 1,
            moves: 2,
            unknown_frees: 1,
            unknown_moves: 2,
        };
        assert_eq!(c, want);
        assert_eq!(c.total(), 6);
        let mut twice = c;
        twice.add(&c);
        assert_eq!(
            (twice.frees, twice.unknown_moves, twice.total()),
            (4, 4, 12)
        );
        // Unknown only: what a model that skips such operations counts.
        let mut skipped = OpCounts::default();
        skipped.count_unknown(OpKind::Alloc);
        skipped.count_unknown(OpKind::Realloc);
        assert_eq!(skipped.total(), 0);
        assert_eq!(skipped.unknown_moves, 1);
    }
}
