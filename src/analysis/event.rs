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
