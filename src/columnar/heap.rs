//! The heap tables of a trace as Arrow record batches: `events`, one row per heap event in trace
//! order, and `blocks`, one row per block lifetime (docs/query.md has their schemas).
//!
//! Both come from the trace's own allocation declarations (docs/format.md §14) through an
//! [`Interpreter`], read the way `mtf stats` reads them: the same namespaces of ids, the same
//! events (an allocation of a live id puts the old block out of the live state without a
//! free), the same positions (data records, docs/stats.md *Positions*) and the same clock. So a
//! sum of `size` over the blocks alive at a data record is the live bytes `mtf stats` has there.
//!
//! [`HeapRows`] is pushed one record at a time (an export reading the events of `-j`);
//! [`batches`] pulls the records of a [`Reader`] itself and yields the batches of one table for
//! a range of data records, the call a query engine's partition makes.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use arrow_array::builder::{StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema as ArrowSchema, SchemaRef};

use crate::analysis::{
    Finding, FindingKind, HeapEvent, HeapOp, Interpreter, Sink, SpaceId, SpaceKind,
};
use crate::decode::{Event, Reader, RecordView, Records};

/// A table of a trace's heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeapTable {
    /// One row per heap event, in trace order.
    Events,
    /// One row per block lifetime, in the order the lifetimes end; the blocks alive at the end
    /// last, in the order of their allocation.
    Blocks,
}

impl HeapTable {
    /// Both, in the order an export writes them.
    pub const ALL: [HeapTable; 2] = [HeapTable::Events, HeapTable::Blocks];

    /// The table's name (`events`, `blocks`): its file's name in an export.
    pub fn name(self) -> &'static str {
        match self {
            HeapTable::Events => "events",
            HeapTable::Blocks => "blocks",
        }
    }

    /// The table's Arrow schema, the same for every trace.
    pub fn schema(self) -> SchemaRef {
        let u = |name: &str, nullable: bool| Field::new(name, DataType::UInt64, nullable);
        let s = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
        let fields = match self {
            HeapTable::Events => vec![
                u("record", false),
                u("record_index", false),
                s("kind", false),
                s("namespace", false),
                u("key", true),
                u("id", false),
                u("size", true),
                u("old_id", true),
                u("old_size", true),
                u("align", true),
                u("time", true),
                u("thread", true),
                u("site", true),
                s("site_name", true),
                u("stack", true),
            ],
            HeapTable::Blocks => vec![
                s("namespace", false),
                u("key", true),
                u("id", false),
                u("last_id", false),
                u("size", true),
                u("alloc_record", false),
                u("free_record", true),
                u("alloc_time", true),
                u("free_time", true),
                u("thread", true),
                u("free_thread", true),
                u("site", true),
                s("site_name", true),
                u("stack", true),
                s("ended_by", true),
            ],
        };
        Arc::new(ArrowSchema::new(fields))
    }
}

impl std::fmt::Display for HeapTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the rows of a heap table could not be made.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum HeapTableError {
    /// The DTD declares no namespace of ids: there are no heap events.
    #[error(
        "its DTD declares no allocations (no namespace of ids, extension analysis/1 of \
         docs/format.md §14), so it has no {0} table"
    )]
    #[diagnostic(code(mtf::usage::analysis))]
    NoAllocations(HeapTable),
    /// A record could not be decoded and [`HeapOptions::refuse_problems`] is set.
    #[error("the trace has a problem or damaged region: {message}")]
    #[diagnostic(
        code(mtf::columnar::damaged),
        help("`mtf check` lists them; a heap table holds every event of a trace or none")
    )]
    Damaged {
        /// The problem.
        message: String,
    },
    /// The interpreter stopped at its limit of tracked ids and
    /// [`HeapOptions::refuse_problems`] is set: the events after it are missing.
    #[error("too many live ids to track: the events after data record {record} are missing")]
    #[diagnostic(code(mtf::columnar::limit))]
    Limit {
        /// The data record where it stopped.
        record: u64,
    },
    /// The analysis state at a seek index's checkpoint could not be resumed from (the rows
    /// are then read from the start).
    #[error("resuming the {table} table at a checkpoint: {message}")]
    #[diagnostic(code(mtf::columnar::state))]
    State {
        /// The table.
        table: HeapTable,
        /// What is wrong with the state, or why the table cannot be resumed.
        message: String,
    },
    /// Arrow refused a batch (a defect: the columns are made to the schema).
    #[error("making a batch of the {table} table: {message}")]
    #[diagnostic(code(mtf::columnar::arrow))]
    Arrow {
        /// The table.
        table: HeapTable,
        /// Arrow's message.
        message: String,
    },
}

/// How the rows of a heap table are made.
#[derive(Debug, Clone)]
pub struct HeapOptions {
    /// Rows per batch (at most; the last batch has the rest).
    pub batch_rows: usize,
    /// The data records whose rows are wanted: the events of those records, the lifetimes that
    /// end in them; the blocks alive at the end when the range holds the end of the trace (the
    /// position after its last data record, the number of data records). Ranges that cut
    /// `0..u64::MAX` into pieces give every row once.
    pub records: Range<u64>,
    /// Fail at the first record that cannot be decoded (and at the interpreter's limit) rather
    /// than count it ([`HeapRows::reading`]).
    pub refuse_problems: bool,
    /// Names of sites known beforehand: those a trace gives only in tables after the rows that
    /// need them (an imported heaptrack trace's), from [`HeapRows::late_names`] of an earlier
    /// pass.
    pub site_names: Arc<SiteNames>,
}

/// Names of allocation sites, by namespace and site id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteNames(HashMap<(SpaceId, u64), Box<str>>);

impl SiteNames {
    /// No names.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl Default for HeapOptions {
    fn default() -> Self {
        HeapOptions {
            batch_rows: 64 * 1024,
            records: 0..u64::MAX,
            refuse_problems: false,
            site_names: Arc::default(),
        }
    }
}

/// What reading the heap events met besides them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HeapReading {
    /// Records that could not be decoded, and damaged regions.
    pub problems: u64,
    /// Where the interpreter stopped at its limit of tracked ids (the events after it are
    /// missing).
    pub stopped_at: Option<u64>,
    /// Data records read.
    pub data_records: u64,
    /// Per namespace of ids, in declaration order.
    pub namespaces: Vec<NamespaceReading>,
}

/// What the heap tables met in one namespace of ids.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NamespaceReading {
    /// The namespace.
    pub name: String,
    /// Frees, reallocations and moves of ids that were not alive (what `mtf stats` counts as
    /// frees not alive): no lifetime ends (a row of `events` where the interpreter made an
    /// event, none where it did not).
    pub unknown_frees: u64,
    /// Allocations of an id alive in a namespace that is not shared (and moves onto one): the
    /// old block's lifetime ends there (`ended_by = replaced`), without a free.
    pub replaced: u64,
}

/// Per declared namespace, what the tables need of it (`None`: not a namespace of ids).
#[derive(Debug, Clone)]
struct Space {
    /// Index in [`HeapReading::namespaces`].
    index: usize,
    name: String,
    sized: bool,
    shared: bool,
    keyed: bool,
}

/// A live block.
#[derive(Debug, Clone, Copy)]
struct Live {
    /// Allocation order, for the blocks alive at the end.
    seq: u64,
    space: SpaceId,
    key: u64,
    id: u64,
    last_id: u64,
    size: u64,
    record: u64,
    time: Option<u64>,
    thread: Option<u64>,
    site: Option<u64>,
    stack: Option<u64>,
    /// 1 + the slot of the block this one hides (a shared id held by several blocks), or 0.
    below: u32,
}

/// The interpreter's events of one record, filtered as `mtf stats` takes them.
struct Collect<'a> {
    out: &'a mut Vec<HeapEvent>,
    spaces: &'a [Option<Space>],
    unknown: &'a mut [NamespaceReading],
    limit: bool,
    /// The (namespace, key, id) of a define of a live id just reported: the free of the old
    /// block that the interpreter emits after it is not a free of the trace.
    redefined: Option<(SpaceId, u64, u64)>,
}

impl Sink for Collect<'_> {
    fn event(&mut self, e: HeapEvent) {
        if let (Some(r), HeapOp::Free { id }) = (self.redefined.take(), e.op) {
            if r == (e.space, e.key, id) {
                return;
            }
        }
        self.out.push(e);
    }

    fn finding(&mut self, f: Finding) {
        self.redefined = None;
        match f.kind {
            FindingKind::NotAlive => {
                let space = f.space.and_then(|s| self.spaces.get(s as usize));
                if let Some(Some(s)) = space {
                    if let Some(n) = self.unknown.get_mut(s.index) {
                        n.unknown_frees += 1;
                    }
                }
            }
            FindingKind::Redefined => {
                if let Some(space) = f.space {
                    self.redefined = Some((space, f.key, f.id));
                }
            }
            FindingKind::Limit => self.limit = true,
            _ => {}
        }
    }
}

/// A column of u64 being filled.
type Col = UInt64Builder;

/// The columns of the `events` table being filled.
struct EventCols {
    record: Col,
    record_index: Col,
    kind: StringBuilder,
    namespace: StringBuilder,
    key: Col,
    id: Col,
    size: Col,
    old_id: Col,
    old_size: Col,
    align: Col,
    time: Col,
    thread: Col,
    site: Col,
    site_name: StringBuilder,
    stack: Col,
}

/// The columns of the `blocks` table being filled.
struct BlockCols {
    namespace: StringBuilder,
    key: Col,
    id: Col,
    last_id: Col,
    size: Col,
    alloc_record: Col,
    free_record: Col,
    alloc_time: Col,
    free_time: Col,
    thread: Col,
    free_thread: Col,
    site: Col,
    site_name: StringBuilder,
    stack: Col,
    ended_by: StringBuilder,
}

enum Cols {
    Events(Box<EventCols>),
    Blocks(Box<BlockCols>),
}

fn arr(b: &mut Col) -> ArrayRef {
    Arc::new(b.finish())
}

fn sarr(b: &mut StringBuilder) -> ArrayRef {
    Arc::new(b.finish())
}

impl Cols {
    fn new(table: HeapTable) -> Cols {
        match table {
            HeapTable::Events => Cols::Events(Box::new(EventCols {
                record: Col::new(),
                record_index: Col::new(),
                kind: StringBuilder::new(),
                namespace: StringBuilder::new(),
                key: Col::new(),
                id: Col::new(),
                size: Col::new(),
                old_id: Col::new(),
                old_size: Col::new(),
                align: Col::new(),
                time: Col::new(),
                thread: Col::new(),
                site: Col::new(),
                site_name: StringBuilder::new(),
                stack: Col::new(),
            })),
            HeapTable::Blocks => Cols::Blocks(Box::new(BlockCols {
                namespace: StringBuilder::new(),
                key: Col::new(),
                id: Col::new(),
                last_id: Col::new(),
                size: Col::new(),
                alloc_record: Col::new(),
                free_record: Col::new(),
                alloc_time: Col::new(),
                free_time: Col::new(),
                thread: Col::new(),
                free_thread: Col::new(),
                site: Col::new(),
                site_name: StringBuilder::new(),
                stack: Col::new(),
                ended_by: StringBuilder::new(),
            })),
        }
    }

    fn columns(&mut self) -> Vec<ArrayRef> {
        match self {
            Cols::Events(c) => vec![
                arr(&mut c.record),
                arr(&mut c.record_index),
                sarr(&mut c.kind),
                sarr(&mut c.namespace),
                arr(&mut c.key),
                arr(&mut c.id),
                arr(&mut c.size),
                arr(&mut c.old_id),
                arr(&mut c.old_size),
                arr(&mut c.align),
                arr(&mut c.time),
                arr(&mut c.thread),
                arr(&mut c.site),
                sarr(&mut c.site_name),
                arr(&mut c.stack),
            ],
            Cols::Blocks(c) => vec![
                sarr(&mut c.namespace),
                arr(&mut c.key),
                arr(&mut c.id),
                arr(&mut c.last_id),
                arr(&mut c.size),
                arr(&mut c.alloc_record),
                arr(&mut c.free_record),
                arr(&mut c.alloc_time),
                arr(&mut c.free_time),
                arr(&mut c.thread),
                arr(&mut c.free_thread),
                arr(&mut c.site),
                sarr(&mut c.site_name),
                arr(&mut c.stack),
                sarr(&mut c.ended_by),
            ],
        }
    }
}

/// How a lifetime ended (`blocks.ended_by`).
#[derive(Debug, Clone, Copy)]
enum Ended {
    Free,
    Realloc,
    Replaced,
}

impl Ended {
    fn name(self) -> &'static str {
        match self {
            Ended::Free => "free",
            Ended::Realloc => "realloc",
            Ended::Replaced => "replaced",
        }
    }
}

/// Where an event happened.
#[derive(Debug, Clone, Copy)]
struct At {
    record: u64,
    index: u64,
    time: Option<u64>,
}

// Design: the rows are made by following the live blocks in a slab of their own (a map by
// (namespace, key, id) to a slot; a shared id's blocks chained through `below`), fed by the
// interpreter's events, rather than by the interpreter's numbering of its live blocks
// (`event::Places`, the statistics' shortcut, not part of the stable interface): the tables are
// a public face whose meaning must not move with that internal. The cost is one map probe per
// event, and memory stays bounded by the live blocks. A lifetime's row is written when it ends,
// so `blocks` is in the order lifetimes end (by free record; within a record in event order) and
// the blocks alive at the end come last, in allocation order: rows in allocation order would
// hold every ended lifetime behind the oldest live block, unbounded.
/// The rows of one heap table, made as the records of a trace are pushed in trace order.
pub struct HeapRows<'s> {
    table: HeapTable,
    interp: Interpreter<'s>,
    spaces: Vec<Option<Space>>,
    opts: HeapOptions,
    events: Vec<HeapEvent>,
    map: HashMap<(SpaceId, u64, u64), u32, foldhash::fast::RandomState>,
    slab: Vec<Option<Live>>,
    free_slots: Vec<u32>,
    seq: u64,
    /// Site names resolved so far (only names found: a table later in the trace may name a
    /// site not named yet).
    site_names: HashMap<(SpaceId, u64), Box<str>, foldhash::fast::RandomState>,
    /// Sites without a name when a row needed one.
    unnamed: std::collections::HashSet<(SpaceId, u64), foldhash::fast::RandomState>,
    cols: Cols,
    rows: usize,
    ready: VecDeque<RecordBatch>,
    reading: HeapReading,
    failed: Option<HeapTableError>,
    finished: bool,
}

impl<'s> HeapRows<'s> {
    /// The rows of `table` for a trace of `schema`.
    pub fn new(
        schema: &'s crate::dtd::Schema,
        table: HeapTable,
        opts: HeapOptions,
    ) -> Result<HeapRows<'s>, HeapTableError> {
        let interp = Interpreter::new(schema);
        let mut reading = HeapReading::default();
        let spaces: Vec<Option<Space>> = interp
            .namespaces()
            .iter()
            .map(|n| {
                (n.kind == SpaceKind::Ids).then(|| {
                    reading.namespaces.push(NamespaceReading {
                        name: n.name.clone(),
                        ..NamespaceReading::default()
                    });
                    Space {
                        index: reading.namespaces.len() - 1,
                        name: n.name.clone(),
                        sized: n.sized,
                        shared: n.shared,
                        keyed: n.key.is_some(),
                    }
                })
            })
            .collect();
        if spaces.iter().all(Option::is_none) {
            return Err(HeapTableError::NoAllocations(table));
        }
        let site_names = opts
            .site_names
            .0
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        Ok(HeapRows {
            table,
            interp,
            spaces,
            opts: HeapOptions {
                batch_rows: opts.batch_rows.max(1),
                ..opts
            },
            events: Vec::new(),
            map: HashMap::default(),
            slab: Vec::new(),
            free_slots: Vec::new(),
            seq: 0,
            site_names,
            unnamed: Default::default(),
            cols: Cols::new(table),
            rows: 0,
            ready: VecDeque::new(),
            reading,
            failed: None,
            finished: false,
        })
    }

    /// The rows of the `events` table resumed at a checkpoint of a seek index, from the
    /// analysis state stored there (`blob`, docs/format.md §15.4): the interpreter's state,
    /// the data records before the checkpoint and the blocks alive there. Pushed the records
    /// from the checkpoint on, it makes the rows a pass from the start makes for them, with
    /// `opts.records` counted from the start of the trace.
    // Design: only `events`. An event's row needs of the blocks before it only their sizes
    // (a free's `size`, a realloc's `old_size`), which the interpreter's state holds; a row of
    // `blocks` whose lifetime spans the checkpoint needs its allocating thread, time and first
    // id, which the state does not keep, so `blocks` is read from the start.
    pub fn resumed(
        schema: &'s crate::dtd::Schema,
        table: HeapTable,
        opts: HeapOptions,
        blob: &[u8],
    ) -> Result<HeapRows<'s>, HeapTableError> {
        HeapRows::resumed_with(schema, table, opts, blob, None)
    }

    /// [`HeapRows::resumed`] for either table: with `births`, what [`HeapRows::save_births`]
    /// wrote at the same checkpoint, the live blocks are taken from it whole (`blocks` needs
    /// it: a lifetime that spans the checkpoint needs its birth).
    pub fn resumed_with(
        schema: &'s crate::dtd::Schema,
        table: HeapTable,
        opts: HeapOptions,
        blob: &[u8],
        births: Option<&[u8]>,
    ) -> Result<HeapRows<'s>, HeapTableError> {
        let state = |message: String| HeapTableError::State { table, message };
        if table != HeapTable::Events && births.is_none() {
            return Err(state(
                "the blocks table starts at a checkpoint only with the births of its live blocks"
                    .into(),
            ));
        }
        let head = crate::analysis::stats::state_head(blob)
            .map_err(|e| state(format!("byte {} of its state: {}", e.at, e.what)))?;
        let mut rows = HeapRows::new(schema, table, opts)?;
        crate::analysis::stats::restore_interpreter(schema, blob, &mut rows.interp)
            .map_err(|e| state(format!("byte {} of its state: {}", e.at, e.what)))?;
        rows.reading.data_records = head.data;
        let at = At {
            record: head.data,
            index: 0,
            time: rows.interp.clock(),
        };
        if let Some(births) = births {
            let mut d = crate::index::analysis::Dec::new(births);
            rows.restore_births(&mut d, at)
                .map_err(|e| state(format!("byte {} of its births: {}", e.at, e.what)))?;
            return Ok(rows);
        }
        for sp in 0..rows.spaces.len() {
            if rows.spaces[sp].is_none() {
                continue;
            }
            let space = sp as SpaceId;
            for b in rows.interp.live_blocks(space) {
                let mut live = Live {
                    seq: rows.seq,
                    space,
                    key: b.key,
                    id: b.id,
                    last_id: b.id,
                    size: b.bytes,
                    record: 0,
                    time: None,
                    thread: None,
                    site: b.site,
                    stack: None,
                    below: 0,
                };
                rows.seq += 1;
                rows.put(&mut live, None, at)?;
            }
        }
        Ok(rows)
    }

    /// Write the births of the blocks alive now: what a reading of `blocks` resumed here needs
    /// beyond the analysis state. The next allocation number, then per live id (sorted by
    /// namespace, key and id) its blocks, the newest first: first id, size, data record of
    /// birth, time, thread, site, stack (options), allocation number.
    pub fn save_births(&self, e: &mut crate::index::analysis::Enc) {
        e.u64(self.seq);
        let mut keys: Vec<(&(SpaceId, u64, u64), &u32)> = self.map.iter().collect();
        keys.sort_unstable_by_key(|k| *k.0);
        e.len(keys.len());
        for (&(space, key, id), &slot) in keys {
            e.u32(space);
            e.u64(key);
            e.u64(id);
            let mut chain = Vec::new();
            let mut at = Some(slot);
            while let Some(i) = at {
                let Some(Some(b)) = self.slab.get(i as usize) else {
                    break;
                };
                chain.push(*b);
                at = (b.below != 0).then(|| b.below - 1);
            }
            e.len(chain.len());
            for b in chain {
                e.u64(b.id);
                e.u64(b.size);
                e.u64(b.record);
                e.opt(b.time);
                e.opt(b.thread);
                e.opt(b.site);
                e.opt(b.stack);
                e.u64(b.seq);
            }
        }
    }

    /// Read back what [`HeapRows::save_births`] wrote, into rows that hold no live block.
    fn restore_births(
        &mut self,
        d: &mut crate::index::analysis::Dec<'_>,
        at: At,
    ) -> Result<(), crate::index::analysis::StateError> {
        self.seq = d.u64()?;
        let n = d.count(4)?;
        for _ in 0..n {
            let space = d.u32()?;
            let key = d.u64()?;
            let last_id = d.u64()?;
            let shared = match self.spaces.get(space as usize) {
                Some(Some(s)) => s.shared,
                _ => return Err(d.error(format!("namespace {space} is not one of ids"))),
            };
            let m = d.count(8)?;
            if m == 0 || (m > 1 && !shared) {
                return Err(d.error(format!("{m} blocks under one id")));
            }
            let mut chain = Vec::with_capacity(m);
            for _ in 0..m {
                let mut b = Live {
                    seq: 0,
                    space,
                    key,
                    id: d.u64()?,
                    last_id,
                    size: d.u64()?,
                    record: d.u64()?,
                    time: d.opt()?,
                    thread: d.opt()?,
                    site: d.opt()?,
                    stack: d.opt()?,
                    below: 0,
                };
                b.seq = d.u64()?;
                chain.push(b);
            }
            for mut b in chain.into_iter().rev() {
                // No row: the blocks put back end nothing.
                if self.put(&mut b, None, at).is_err() {
                    return Err(d.error("a block put back ended another"));
                }
            }
        }
        if !d.done() {
            return Err(d.error("bytes after the births"));
        }
        Ok(())
    }

    /// The table.
    pub fn table(&self) -> HeapTable {
        self.table
    }

    /// What the reading met so far.
    pub fn reading(&self) -> &HeapReading {
        &self.reading
    }

    /// Whether records after the current one can still give rows of the range (false once the
    /// range's end has passed).
    pub fn wants_more(&self) -> bool {
        self.reading.data_records < self.opts.records.end && self.failed.is_none()
    }

    /// A record that could not be decoded, or a damaged region.
    pub fn problem(&mut self, message: impl FnOnce() -> String) {
        self.reading.problems += 1;
        if self.opts.refuse_problems && self.failed.is_none() {
            self.failed = Some(HeapTableError::Damaged { message: message() });
        }
    }

    /// Takes the next record of the trace (in trace order).
    pub fn record(&mut self, v: &RecordView<'_>) -> Result<(), HeapTableError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let mut sink = Collect {
            out: &mut events,
            spaces: &self.spaces,
            unknown: &mut self.reading.namespaces,
            limit: false,
            redefined: None,
        };
        self.interp.record(v, &mut sink);
        let limit = sink.limit;
        let at = At {
            record: self.reading.data_records,
            index: v.index(),
            time: self.interp.clock(),
        };
        if limit && self.reading.stopped_at.is_none() {
            self.reading.stopped_at = Some(at.record);
            if self.opts.refuse_problems {
                self.events = events;
                return Err(HeapTableError::Limit { record: at.record });
            }
        }
        for e in &events {
            self.event(e, at)?;
        }
        self.events = events;
        if v.is_data() {
            self.reading.data_records += 1;
        }
        Ok(())
    }

    /// The blocks alive at the end (for `blocks`, when the range reaches the end), and the
    /// last batch.
    pub fn finish(&mut self) -> Result<(), HeapTableError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        // The blocks alive at the end belong to the range that holds the end of the trace (the
        // position after its last data record).
        if self.table == HeapTable::Blocks && self.in_range(self.reading.data_records) {
            let mut alive: Vec<Live> = self.slab.iter().flatten().copied().collect();
            alive.sort_unstable_by_key(|b| b.seq);
            for b in alive {
                self.block_row(&b, None)?;
            }
        }
        if self.rows > 0 {
            self.flush()?;
        }
        Ok(())
    }

    /// The names, known now, of the sites that had none when a row needed one (a trace whose
    /// tables come after the rows that name them): empty when every row has its name. After
    /// [`HeapRows::finish`], a second pass with these in [`HeapOptions::site_names`] gives every
    /// row the name the trace gives its site.
    pub fn late_names(&self) -> SiteNames {
        let mut names = SiteNames::default();
        for &(space, site) in &self.unnamed {
            if let Some(n) = self.interp.site_name(space, site) {
                names.0.insert((space, site), n.into());
            }
        }
        names
    }

    /// The next batch made, if any.
    pub fn next_batch(&mut self) -> Option<RecordBatch> {
        self.ready.pop_front()
    }

    fn flush(&mut self) -> Result<(), HeapTableError> {
        let batch =
            RecordBatch::try_new(self.table.schema(), self.cols.columns()).map_err(|e| {
                HeapTableError::Arrow {
                    table: self.table,
                    message: e.to_string(),
                }
            })?;
        self.rows = 0;
        self.ready.push_back(batch);
        Ok(())
    }

    fn row_done(&mut self) -> Result<(), HeapTableError> {
        self.rows += 1;
        if self.rows >= self.opts.batch_rows {
            self.flush()?;
        }
        Ok(())
    }

    fn in_range(&self, record: u64) -> bool {
        self.opts.records.contains(&record)
    }

    fn event(&mut self, e: &HeapEvent, at: At) -> Result<(), HeapTableError> {
        let Some(Some(space)) = self.spaces.get(e.space as usize) else {
            return Ok(());
        };
        let sized = space.sized;
        let size_of = |s: u64| sized.then_some(s);
        // (kind, id, size, old id, old size, align) of the event's row.
        let row = match e.op {
            HeapOp::Alloc { id, size, align } => {
                self.alloc(e, id, size, None, at)?;
                ("alloc", id, size_of(size), None, None, align)
            }
            HeapOp::Free { id } => {
                let gone = self.take(e.space, e.key, id);
                let size = match gone {
                    Some(b) => {
                        self.end(&b, Ended::Free, e.thread, at)?;
                        size_of(b.size)
                    }
                    None => {
                        self.count(e.space, |n| n.unknown_frees += 1);
                        None
                    }
                };
                ("free", id, size, None, None, None)
            }
            HeapOp::Move {
                old,
                new,
                size: Some(size),
            } => {
                // A realloc: the old block's lifetime ends and a new one starts (as `stats`
                // counts it), at the old block's site unless the event names one.
                let gone = self.take(e.space, e.key, old);
                let mut site = None;
                let old_size = match gone {
                    Some(b) => {
                        self.end(&b, Ended::Realloc, e.thread, at)?;
                        if e.site.is_none() && e.stack.is_none() {
                            site = Some((b.site, b.stack));
                        }
                        size_of(b.size)
                    }
                    None => {
                        self.count(e.space, |n| n.unknown_frees += 1);
                        None
                    }
                };
                self.alloc(e, new, size, site, at)?;
                ("realloc", new, size_of(size), Some(old), old_size, None)
            }
            HeapOp::Move {
                old,
                new,
                size: None,
            } => {
                let size = match self.take(e.space, e.key, old) {
                    Some(b) => {
                        let size = size_of(b.size);
                        self.rename(b, new, e.thread, at)?;
                        size
                    }
                    None => {
                        self.count(e.space, |n| n.unknown_frees += 1);
                        None
                    }
                };
                ("move", new, size, Some(old), size, None)
            }
        };
        if self.table == HeapTable::Events && self.in_range(at.record) {
            let (kind, id, size, old_id, old_size, align) = row;
            let keyed = self.spaces[e.space as usize]
                .as_ref()
                .is_some_and(|s| s.keyed);
            let name = site_name(
                &mut self.site_names,
                &mut self.unnamed,
                &self.interp,
                e.space,
                e.site,
            );
            let Cols::Events(c) = &mut self.cols else {
                return Ok(());
            };
            c.record.append_value(at.record);
            c.record_index.append_value(at.index);
            c.kind.append_value(kind);
            c.namespace.append_value(
                self.spaces[e.space as usize]
                    .as_ref()
                    .map_or("", |s| &s.name),
            );
            c.key.append_option(keyed.then_some(e.key));
            c.id.append_value(id);
            c.size.append_option(size);
            c.old_id.append_option(old_id);
            c.old_size.append_option(old_size);
            c.align.append_option(align);
            c.time.append_option(at.time);
            c.thread.append_option(e.thread);
            c.site.append_option(e.site);
            c.site_name.append_option(name);
            c.stack.append_option(e.stack);
            self.row_done()?;
        }
        Ok(())
    }

    /// Counts in a namespace's reading.
    fn count(&mut self, space: SpaceId, f: impl FnOnce(&mut NamespaceReading)) {
        let i = self
            .spaces
            .get(space as usize)
            .and_then(|s| s.as_ref().map(|s| s.index));
        if let Some(n) = i.and_then(|i| self.reading.namespaces.get_mut(i)) {
            f(n);
        }
    }

    /// A block comes alive; an id alive in a namespace that is not shared ends its block.
    fn alloc(
        &mut self,
        e: &HeapEvent,
        id: u64,
        size: u64,
        site: Option<(Option<u64>, Option<u64>)>,
        at: At,
    ) -> Result<(), HeapTableError> {
        let (site, stack) = site.unwrap_or((e.site, e.stack));
        let mut b = Live {
            seq: self.seq,
            space: e.space,
            key: e.key,
            id,
            last_id: id,
            size,
            record: at.record,
            time: at.time,
            thread: e.thread,
            site,
            stack,
            below: 0,
        };
        self.seq += 1;
        self.put(&mut b, e.thread, at)
    }

    /// A block takes the id `new`, keeping its size and birth.
    fn rename(
        &mut self,
        mut b: Live,
        new: u64,
        thread: Option<u64>,
        at: At,
    ) -> Result<(), HeapTableError> {
        b.last_id = new;
        b.below = 0;
        self.put(&mut b, thread, at)
    }

    /// Puts `b` alive under its `last_id`.
    fn put(&mut self, b: &mut Live, thread: Option<u64>, at: At) -> Result<(), HeapTableError> {
        let k = (b.space, b.key, b.last_id);
        let shared = self.spaces[b.space as usize]
            .as_ref()
            .is_some_and(|s| s.shared);
        if let Some(&prev) = self.map.get(&k) {
            if shared {
                b.below = prev + 1;
            } else if let Some(old) = self.take(b.space, b.key, b.last_id) {
                self.count(b.space, |n| n.replaced += 1);
                self.end(&old, Ended::Replaced, thread, at)?;
            }
        }
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slab[s as usize] = Some(*b);
                s
            }
            None => {
                self.slab.push(Some(*b));
                (self.slab.len() - 1) as u32
            }
        };
        self.map.insert(k, slot);
        Ok(())
    }

    /// Takes the block holding `id` out of the live blocks (a shared id's most recent).
    fn take(&mut self, space: SpaceId, key: u64, id: u64) -> Option<Live> {
        let k = (space, key, id);
        let slot = self.map.remove(&k)?;
        let b = self.slab.get_mut(slot as usize)?.take()?;
        self.free_slots.push(slot);
        if b.below != 0 {
            self.map.insert(k, b.below - 1);
        }
        Some(b)
    }

    /// A lifetime ended.
    fn end(
        &mut self,
        b: &Live,
        how: Ended,
        thread: Option<u64>,
        at: At,
    ) -> Result<(), HeapTableError> {
        if self.table == HeapTable::Blocks && self.in_range(at.record) {
            self.block_row(b, Some((how, thread, at)))?;
        }
        Ok(())
    }

    fn block_row(
        &mut self,
        b: &Live,
        end: Option<(Ended, Option<u64>, At)>,
    ) -> Result<(), HeapTableError> {
        let Some(space) = self.spaces[b.space as usize].as_ref() else {
            return Ok(());
        };
        let (sized, keyed) = (space.sized, space.keyed);
        let name = site_name(
            &mut self.site_names,
            &mut self.unnamed,
            &self.interp,
            b.space,
            b.site,
        );
        let Cols::Blocks(c) = &mut self.cols else {
            return Ok(());
        };
        let Some(space) = self.spaces[b.space as usize].as_ref() else {
            return Ok(());
        };
        c.namespace.append_value(&space.name);
        c.key.append_option(keyed.then_some(b.key));
        c.id.append_value(b.id);
        c.last_id.append_value(b.last_id);
        c.size.append_option(sized.then_some(b.size));
        c.alloc_record.append_value(b.record);
        c.free_record.append_option(end.map(|e| e.2.record));
        c.alloc_time.append_option(b.time);
        c.free_time.append_option(end.and_then(|e| e.2.time));
        c.thread.append_option(b.thread);
        c.free_thread.append_option(end.and_then(|e| e.1));
        c.site.append_option(b.site);
        c.site_name.append_option(name);
        c.stack.append_option(b.stack);
        c.ended_by.append_option(end.map(|e| e.0.name()));
        self.row_done()
    }
}

/// The name of a site, as far as the trace has been read: from `names`, where it was found
/// before (no allocation per row), else from the interpreter (kept once found).
fn site_name<'n>(
    names: &'n mut HashMap<(SpaceId, u64), Box<str>, foldhash::fast::RandomState>,
    unnamed: &mut std::collections::HashSet<(SpaceId, u64), foldhash::fast::RandomState>,
    interp: &Interpreter<'_>,
    space: SpaceId,
    site: Option<u64>,
) -> Option<&'n str> {
    let site = site?;
    match names.entry((space, site)) {
        std::collections::hash_map::Entry::Occupied(e) => Some(&**e.into_mut()),
        std::collections::hash_map::Entry::Vacant(e) => match interp.site_name(space, site) {
            Some(n) => Some(&**e.insert(n.into())),
            None => {
                unnamed.insert((space, site));
                None
            }
        },
    }
}

/// The batches of one heap table of `reader`'s trace, for the data records `opts.records`
/// ([`HeapOptions`]), read from the start of the trace (the rows of a range need the live
/// blocks before it) up to the end of the range. A row's `site_name` is the name known when the
/// row is made: [`HeapBatches::late_names`] says, once the iterator is exhausted, which names
/// came later, for a second call with them in [`HeapOptions::site_names`].
pub fn batches<'r>(
    reader: &'r Reader<'r>,
    table: HeapTable,
    opts: HeapOptions,
) -> Result<HeapBatches<'r>, HeapTableError> {
    Ok(HeapBatches {
        rows: HeapRows::new(reader.schema(), table, opts)?,
        records: reader.records(),
        done: false,
    })
}

/// The batches of the `events` table for `opts.records`, resumed at a checkpoint of a seek
/// index: `records` read from it, `blob` the analysis state stored there
/// ([`HeapRows::resumed`]).
pub fn resumed_batches<'r>(
    reader: &'r Reader<'r>,
    records: Records<'r>,
    opts: HeapOptions,
    blob: &[u8],
) -> Result<HeapBatches<'r>, HeapTableError> {
    resumed_table_batches(reader, records, HeapTable::Events, opts, blob, None)
}

/// [`resumed_batches`] for either table: `blocks` needs `births`, what [`build_births`] made
/// at the same checkpoint ([`HeapRows::resumed_with`]).
pub fn resumed_table_batches<'r>(
    reader: &'r Reader<'r>,
    records: Records<'r>,
    table: HeapTable,
    opts: HeapOptions,
    blob: &[u8],
    births: Option<&[u8]>,
) -> Result<HeapBatches<'r>, HeapTableError> {
    Ok(HeapBatches {
        rows: HeapRows::resumed_with(reader.schema(), table, opts, blob, births)?,
        records,
        done: false,
    })
}

/// The births of the live blocks (what [`HeapRows::save_births`] writes) before each record
/// index of `at` (in increasing order: the checkpoints of a seek index): one pass over
/// `reader`'s trace. `None` where the trace has a problem or the interpreter stopped at its
/// limit (then no reading resumes from them).
pub fn build_births(reader: &Reader<'_>, at: &[u64]) -> Option<Vec<Vec<u8>>> {
    let opts = HeapOptions {
        records: 0..0,
        ..HeapOptions::default()
    };
    let mut rows = HeapRows::new(reader.schema(), HeapTable::Blocks, opts).ok()?;
    let mut records = reader.records();
    let mut out = Vec::with_capacity(at.len());
    loop {
        while out.len() < at.len() && records.count() >= at[out.len()] {
            let mut e = crate::index::analysis::Enc::default();
            rows.save_births(&mut e);
            out.push(e.out);
        }
        match records.next() {
            Some(Event::Record(v)) => rows.record(&v).ok()?,
            Some(Event::Problem(_) | Event::Damage(_)) => return None,
            None => break,
        }
        if rows.interp.stopped() {
            return None;
        }
    }
    if records.dropped_problems() > 0 {
        return None;
    }
    while out.len() < at.len() {
        let mut e = crate::index::analysis::Enc::default();
        rows.save_births(&mut e);
        out.push(e.out);
    }
    Some(out)
}

/// The births file of `index` ([`AnalysisState::births`](crate::index::analysis::AnalysisState::births),
/// docs/format.md §15.5): the births of the live blocks at each checkpoint that carries an
/// analysis state in `state` (none at the others). `None` where [`build_births`] gives none.
pub fn births_file(
    reader: &Reader<'_>,
    index: &crate::index::Index,
    state: &crate::index::analysis::AnalysisState,
) -> Option<crate::index::analysis::AnalysisState> {
    let at: Vec<u64> = index.entries().iter().map(|e| e.record).collect();
    let births = build_births(reader, &at)?;
    let entries = births
        .into_iter()
        .enumerate()
        .map(|(i, b)| state.entry(i).map(|_| b))
        .collect();
    let mut f = crate::index::analysis::AnalysisState::births(index, reader.schema(), entries);
    f.set_name(format!("{}.births", index.name()));
    Some(f)
}

/// The batches of a heap table ([`batches`]).
pub struct HeapBatches<'r> {
    rows: HeapRows<'r>,
    records: Records<'r>,
    done: bool,
}

impl HeapBatches<'_> {
    /// What the reading met so far (complete once the iterator is exhausted).
    pub fn reading(&self) -> &HeapReading {
        self.rows.reading()
    }

    /// [`HeapRows::late_names`], once the iterator is exhausted.
    pub fn late_names(&self) -> SiteNames {
        self.rows.late_names()
    }
}

impl Iterator for HeapBatches<'_> {
    type Item = Result<RecordBatch, HeapTableError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(b) = self.rows.next_batch() {
                return Some(Ok(b));
            }
            if self.done {
                return None;
            }
            let step = if !self.rows.wants_more() {
                None
            } else {
                match self.records.next() {
                    Some(Event::Record(v)) => Some(self.rows.record(&v)),
                    Some(Event::Problem(p)) => {
                        self.rows.problem(|| p.to_string());
                        Some(Ok(()))
                    }
                    Some(Event::Damage(d)) => {
                        self.rows.problem(|| d.to_string());
                        Some(Ok(()))
                    }
                    None => None,
                }
            };
            let r = match step {
                Some(r) => r,
                None => {
                    self.done = true;
                    let dropped = self.records.dropped_problems();
                    if dropped > 0 {
                        self.rows
                            .problem(|| format!("{dropped} more problems in one record"));
                        self.rows.reading.problems += dropped - 1;
                    }
                    self.rows.finish()
                }
            };
            if let Err(e) = r {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    use arrow_array::Array;

    fn path(rel: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
    }

    /// Every row of a table as `column=value` text, for the records of `range`.
    fn table(rel: &str, t: HeapTable, range: Range<u64>, batch_rows: usize) -> Vec<String> {
        let opts = HeapOptions {
            batch_rows,
            records: range,
            refuse_problems: true,
            ..HeapOptions::default()
        };
        table_of(rel, t, opts)
    }

    /// The rows of `blocks` with `opts`.
    fn table_with(rel: &str, opts: HeapOptions) -> Vec<String> {
        table_of(rel, HeapTable::Blocks, opts)
    }

    fn table_of(rel: &str, t: HeapTable, opts: HeapOptions) -> Vec<String> {
        let batch_rows = opts.batch_rows;
        let o = crate::open(path(rel)).unwrap();
        let reader = o.reader();
        rows_of(batches(&reader, t, opts).unwrap(), t, batch_rows)
    }

    /// Every row of the batches as `column=value` text.
    fn rows_of(batches: HeapBatches<'_>, t: HeapTable, batch_rows: usize) -> Vec<String> {
        let mut rows = Vec::new();
        for b in batches {
            let b = b.unwrap();
            assert!(b.num_rows() <= batch_rows);
            assert_eq!(b.schema(), t.schema());
            for i in 0..b.num_rows() {
                let cells: Vec<String> = b
                    .schema()
                    .fields()
                    .iter()
                    .zip(b.columns())
                    .map(|(f, c)| {
                        let v = if c.is_null(i) {
                            "-".to_string()
                        } else if let Some(s) = c.as_string_opt::<i32>() {
                            s.value(i).to_string()
                        } else {
                            c.as_primitive::<UInt64Type>().value(i).to_string()
                        };
                        format!("{}={v}", f.name())
                    })
                    .collect();
                rows.push(cells.join(" "));
            }
        }
        rows
    }

    /// What [`each_checkpoint`] calls: the trace, its reader, the index, the checkpoint, its
    /// state and its births.
    type AtCheckpoint<'f> =
        dyn FnMut(&str, &Reader<'_>, &crate::index::Index, usize, &[u8], &[u8]) + 'f;

    /// Calls `f` at every checkpoint that carries an analysis state of a seek index (every 7
    /// records) of each shipped trace with allocations: the trace, its reader, the index, the
    /// checkpoint, its state and the births made there.
    fn each_checkpoint(f: &mut AtCheckpoint<'_>) {
        use crate::index::{build, BuildOptions};
        for name in [
            "heaptrack.mtf",
            "android.mtf",
            "et3.mtf",
            "et_merlin.mtf",
            "malloclab.mtf",
            "tptp.mtf",
            "valgrind.mtf",
            "mtrace.mtf",
            "jvm_trace.mtf",
            "hatf-split-le64.mtf",
        ] {
            let rel = format!("traces/{name}");
            let o = crate::open(path(&rel)).unwrap();
            let reader = o.reader();
            if HeapRows::new(reader.schema(), HeapTable::Blocks, HeapOptions::default()).is_err() {
                continue;
            }
            let idx = build(
                &reader,
                &BuildOptions {
                    every_records: 7,
                    every_bytes: 1 << 20,
                },
            );
            let at: Vec<(u64, u64)> = idx.entries().iter().map(|e| (e.record, e.offset)).collect();
            let built = crate::analysis::stats::build_states(&reader, &at, u64::MAX).unwrap();
            let records_at: Vec<u64> = at.iter().map(|a| a.0).collect();
            let births = build_births(&reader, &records_at).unwrap();
            assert_eq!(births.len(), at.len());
            for (i, blob) in built.entries.iter().enumerate() {
                if let Some(blob) = blob {
                    f(&rel, &reader, &idx, i, blob, &births[i]);
                }
            }
        }
    }

    /// The rows of `table` resumed at checkpoint `i` for the data records `range`.
    fn resumed_rows(
        reader: &Reader<'_>,
        idx: &crate::index::Index,
        i: usize,
        table: HeapTable,
        range: Range<u64>,
        blob: &[u8],
        births: Option<&[u8]>,
    ) -> Vec<String> {
        let opts = HeapOptions {
            batch_rows: 3,
            records: range,
            refuse_problems: true,
            ..HeapOptions::default()
        };
        let records = idx.records_at(reader, i).unwrap();
        let batches = resumed_table_batches(reader, records, table, opts, blob, births).unwrap();
        rows_of(batches, table, 3)
    }

    /// From every analysis state of a seek index (every 7 records), the `events` rows of the
    /// records after it, and of a few records after it, are those a reading from the start
    /// gives them: on traces with reallocations, shared ids, sections, stacks and late names.
    #[test]
    fn events_resumed_at_every_checkpoint_are_the_rows_from_the_start() {
        let mut resumed = 0;
        each_checkpoint(&mut |rel, reader, idx, i, blob, _| {
            let data = crate::analysis::stats::state_head(blob).unwrap().data;
            for range in [data..u64::MAX, data..data + 5] {
                let ours =
                    resumed_rows(reader, idx, i, HeapTable::Events, range.clone(), blob, None);
                let theirs = table(rel, HeapTable::Events, range.clone(), 5);
                assert_eq!(ours, theirs, "{rel} from checkpoint {i}, records {range:?}");
                resumed += 1;
            }
        });
        assert!(resumed > 50, "{resumed}");
    }

    /// From every analysis state of a seek index (every 7 records) and the births made at the
    /// same checkpoints, the `blocks` rows of the records after it, and of a few records after
    /// it, are those a reading from the start gives them; and damaged births are an error.
    #[test]
    fn blocks_resumed_with_their_births_at_every_checkpoint_are_the_rows_from_the_start() {
        let mut resumed = 0;
        each_checkpoint(&mut |rel, reader, idx, i, blob, births| {
            let data = crate::analysis::stats::state_head(blob).unwrap().data;
            for range in [data..u64::MAX, data..data + 5] {
                let ours = resumed_rows(
                    reader,
                    idx,
                    i,
                    HeapTable::Blocks,
                    range.clone(),
                    blob,
                    Some(births),
                );
                let theirs = table(rel, HeapTable::Blocks, range.clone(), 5);
                assert_eq!(ours, theirs, "{rel} from checkpoint {i}, records {range:?}");
                resumed += 1;
            }
            // Births cut short are an error or other rows: never a panic.
            for cut in [0, births.len() / 2, births.len().saturating_sub(1)] {
                let _ = HeapRows::resumed_with(
                    reader.schema(),
                    HeapTable::Blocks,
                    HeapOptions::default(),
                    blob,
                    Some(&births[..cut]),
                );
            }
        });
        assert!(resumed > 50, "{resumed}");
    }

    /// `blocks` does not start at a checkpoint, and a damaged state is an error, not a panic.
    #[test]
    fn blocks_and_damaged_states_are_refused() {
        let o = crate::open(path("traces/android.mtf")).unwrap();
        let schema = o.schema();
        let e = HeapRows::resumed(schema, HeapTable::Blocks, HeapOptions::default(), &[0]);
        assert!(matches!(e, Err(HeapTableError::State { .. })));
        for bad in [&[][..], &[0xff; 9][..], &[1, 2, 3][..]] {
            let e = HeapRows::resumed(schema, HeapTable::Events, HeapOptions::default(), bad);
            assert!(matches!(e, Err(HeapTableError::State { .. })), "{bad:?}");
        }
    }

    fn col<'r>(row: &'r str, name: &str) -> &'r str {
        row.split(' ')
            .find_map(|c| c.strip_prefix(name).and_then(|c| c.strip_prefix('=')))
            .unwrap_or_else(|| panic!("no {name} in {row}"))
    }

    #[test]
    fn ranges_of_records_cut_both_tables_into_pieces_that_make_the_whole() {
        for t in HeapTable::ALL {
            for rel in [
                "traces/android.mtf",
                "traces/heaptrack.mtf",
                "traces/et3.mtf",
            ] {
                let whole = table(rel, t, 0..u64::MAX, 7);
                assert!(!whole.is_empty(), "{rel} {t}");
                for cut in [0, 1, 10, 40, 64, 1000] {
                    let mut parts = table(rel, t, 0..cut, 5);
                    parts.extend(table(rel, t, cut..u64::MAX, 3));
                    assert_eq!(parts, whole, "{rel} {t} cut at {cut}");
                }
            }
        }
    }

    #[test]
    fn blocks_come_in_the_order_lifetimes_end_and_the_live_ones_last_by_allocation() {
        let rows = table("traces/android.mtf", HeapTable::Blocks, 0..u64::MAX, 1000);
        let ends: Vec<Option<u64>> = rows
            .iter()
            .map(|r| col(r, "free_record").parse().ok())
            .collect();
        let first_live = ends.iter().position(Option::is_none).unwrap();
        assert!(ends[first_live..].iter().all(Option::is_none));
        assert!(ends[..first_live].windows(2).all(|w| w[0] <= w[1]));
        let births: Vec<u64> = rows[first_live..]
            .iter()
            .map(|r| col(r, "alloc_record").parse().unwrap())
            .collect();
        assert!(births.windows(2).all(|w| w[0] <= w[1]));
        // Every ended lifetime says how, and a freed block began before it ended.
        for r in &rows[..first_live] {
            assert!(["free", "realloc"].contains(&col(r, "ended_by")), "{r}");
            let (a, f): (u64, u64) = (
                col(r, "alloc_record").parse().unwrap(),
                col(r, "free_record").parse().unwrap(),
            );
            assert!(a <= f, "{r}");
        }
    }

    #[test]
    fn an_allocation_of_a_live_id_ends_the_old_lifetime_as_replaced() {
        // spec case analysis-redefined: `al 1`, `al 1`, `fr 1`.
        let rows = table(
            "tests/data/spec-cases/analysis-redefined/redefine.mtf",
            HeapTable::Blocks,
            0..u64::MAX,
            10,
        );
        let got: Vec<(&str, &str, &str)> = rows
            .iter()
            .map(|r| {
                (
                    col(r, "alloc_record"),
                    col(r, "free_record"),
                    col(r, "ended_by"),
                )
            })
            .collect();
        assert_eq!(got, [("0", "1", "replaced"), ("1", "2", "free")]);
        let events = table(
            "tests/data/spec-cases/analysis-redefined/redefine.mtf",
            HeapTable::Events,
            0..u64::MAX,
            10,
        );
        let kinds: Vec<&str> = events.iter().map(|r| col(r, "kind")).collect();
        assert_eq!(kinds, ["alloc", "alloc", "free"]);
    }

    #[test]
    fn a_move_keeps_the_lifetime_under_its_new_id() {
        // spec case analysis-move, mv1: `al 1`, then a record that moves 1 to 2.
        let base = "tests/data/spec-cases/analysis-move/mv1.mtf";
        let rows = table(base, HeapTable::Blocks, 0..u64::MAX, 10);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(col(&rows[0], "id"), "1");
        assert_eq!(col(&rows[0], "last_id"), "2");
        assert_eq!(col(&rows[0], "free_record"), "-");
        let events = table(base, HeapTable::Events, 0..u64::MAX, 10);
        let kinds: Vec<(&str, &str, &str)> = events
            .iter()
            .map(|r| (col(r, "kind"), col(r, "id"), col(r, "old_id")))
            .collect();
        assert_eq!(kinds, [("alloc", "1", "-"), ("move", "2", "1")]);
    }

    #[test]
    fn names_of_sites_given_after_their_rows_come_from_a_second_pass() {
        // An imported heaptrack trace routes its string and trace tables to the end: the first
        // pass knows the site's name only there.
        let o = crate::open(path("traces/heaptrack.mtf")).unwrap();
        let reader = o.reader();
        let mut rows =
            HeapRows::new(reader.schema(), HeapTable::Blocks, HeapOptions::default()).unwrap();
        let mut records = reader.records();
        while let Some(e) = records.next() {
            if let Event::Record(v) = e {
                rows.record(&v).unwrap();
            }
        }
        rows.finish().unwrap();
        let late = rows.late_names();
        assert_eq!(late.len(), 1);
        let first = rows.next_batch().unwrap();
        let names = first
            .column_by_name("site_name")
            .unwrap()
            .as_string::<i32>();
        assert!(
            names.is_null(0),
            "the freed block's row came before the name"
        );
        let again = table_with(
            "traces/heaptrack.mtf",
            HeapOptions {
                site_names: Arc::new(late),
                ..HeapOptions::default()
            },
        );
        let names: Vec<&str> = again.iter().map(|r| col(r, "site_name")).collect();
        assert_eq!(names, ["main", "main"]);
    }

    #[test]
    fn a_live_block_takes_the_bytes_docs_query_states() {
        // docs/query.md, "Order": a slab entry of 120 bytes.
        assert_eq!(std::mem::size_of::<Option<Live>>(), 120);
    }

    #[test]
    fn a_trace_without_namespaces_of_ids_has_no_heap_tables() {
        let loaded = crate::dtd::parse_str("t.dtd", "tag.width = 1; r : (tag) { tag.value = 4; }");
        let schema = match loaded {
            Ok(l) => l.schema,
            Err(e) => panic!("{e:?}"),
        };
        assert!(matches!(
            HeapRows::new(&schema, HeapTable::Blocks, HeapOptions::default()),
            Err(HeapTableError::NoAllocations(HeapTable::Blocks))
        ));
    }
}
