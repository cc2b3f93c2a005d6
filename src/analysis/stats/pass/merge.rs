//! The statistics of the whole trace from chunks passed on their own (`mtf stats -j N`): the
//! first chunk from the start of the trace, each other from the analysis state at the seek
//! index's checkpoint where it starts (docs/format.md §15.4), joined in trace order into the
//! figures of one pass.
//!
//! A resumed chunk's pass holds what a pass from the start holds there (data records before,
//! the clock, the input lines, the interpreter, the live part of the heap figures); inside the
//! whole trace's slice from its first record, it counts flows from zero and joins them to those
//! of the chunks before ([`HeapStats::absorb`](super::super::HeapStats) has the rules, figure by
//! figure). Its start is compared with where the chunks before end: a state that does not match
//! refuses the join, and the caller reads on one thread.

use crate::decode::EventStream;
use crate::dtd::Schema;
use crate::index::analysis::{Dec, StateError};

use super::super::heap::Glance;
use super::super::{
    Declared, HeapStats, Position, RecordCounter, SourceLines, Stats, StatsScope, Window,
};
use super::Pass;

/// The figures of one chunk of the trace, to join ([`ChunkStats::absorb`]) and finish
/// ([`ChunkStats::finish`]) in trace order.
pub struct ChunkStats<'s> {
    counter: RecordCounter,
    heap: HeapStats,
    lines: SourceLines,
    problems: u64,
    other: u64,
    data: u64,
    time: Option<u64>,
    first_time: Option<u64>,
    moved: bool,
    start: Option<Position>,
    unknown_inside: Vec<u64>,
    lean: bool,
    /// Where a resumed chunk started: the data records before it and the live state.
    began: Option<(u64, Option<u64>, Glance)>,
    /// The interpreter at the chunk's end (the last chunk's names the sites and stacks).
    source: Option<Declared<'s>>,
}

impl std::fmt::Debug for ChunkStats<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkStats")
            .field("data", &self.data)
            .field("problems", &self.problems)
            .finish_non_exhaustive()
    }
}

/// The figures of the chunk whose events are `records`: from the start of the trace (`blob`
/// none), or resumed from the analysis state `blob` of the checkpoint where `records` starts.
/// `keep` keeps the interpreter at its end (for the last chunk: the names of sites and stacks).
pub fn compute_chunk<'s>(
    schema: &'s Schema,
    records: &mut dyn EventStream,
    blob: Option<&[u8]>,
    scope: StatsScope,
    keep: bool,
) -> Result<ChunkStats<'s>, StateError> {
    let mut source = Declared::new(schema);
    let mut pass = Pass::new(schema, &mut source, Window::all());
    if scope == StatsScope::Heap {
        pass.lean = true;
        pass.heap.heap_only();
    }
    let mut began = None;
    if let Some(blob) = blob {
        // The state holds blocks by id (docs/format.md §15.4): restored into the statistics'
        // own map.
        pass.placed = false;
        // The blocks at the interpreter's numbers for them, where every one has one: the chunk
        // then runs as one pass does (no look-up of its own per event).
        pass.placed = pass.restore_placing(&mut Dec::new(blob), true)?;
        began = Some((pass.data, pass.time, pass.heap.glance()));
        let at = Position {
            record: pass.data,
            time: pass.time,
            source: None,
        };
        // Inside the slice from the first record (the whole trace's opened at its first data
        // record, in the first chunk), on the whole trace's curve slots (its origin: record 0).
        pass.start = Some(at);
        pass.heap.resume_chunk(at, 0);
    }
    pass.feed(records);
    pass.problems += records.dropped_problems();
    pass.heap.settle_chunk();
    let Pass {
        counter,
        heap,
        lines,
        problems,
        other,
        data,
        time,
        first_time,
        moved,
        start,
        unknown_inside,
        lean,
        ..
    } = pass;
    Ok(ChunkStats {
        counter,
        heap,
        lines,
        problems,
        other,
        data,
        time,
        first_time,
        moved,
        start,
        unknown_inside,
        lean,
        began,
        source: keep.then_some(source),
    })
}

impl<'s> ChunkStats<'s> {
    /// Decoding problems and damage met in the chunk(s).
    pub fn problems(&self) -> u64 {
        self.problems
    }

    /// Join `next`, the chunk that follows (resumed where these end); `Err` with what differs
    /// when its start is not where these end (these figures are then not to be used).
    pub fn absorb(&mut self, next: ChunkStats<'s>) -> Result<(), &'static str> {
        let Some((data, time, glance)) = &next.began else {
            return Err("a chunk not resumed from a state");
        };
        if self.start.is_none() {
            return Err("no data record before the first checkpoint");
        }
        if *data != self.data || *time != self.time || *glance != self.heap.glance() {
            return Err("its analysis state differs from the one the pass reaches there");
        }
        if next.lean != self.lean {
            return Err("other figures");
        }
        self.counter.absorb(&next.counter);
        self.heap.absorb(next.heap)?;
        if !self.lean {
            // A lean pass follows no input lines (its state's are those of a full pass).
            self.lines = next.lines;
        }
        self.problems += next.problems;
        self.other += next.other;
        self.data = next.data;
        self.time = next.time;
        self.first_time = next.first_time;
        self.moved = next.moved;
        for (a, b) in self.unknown_inside.iter_mut().zip(&next.unknown_inside) {
            *a += b;
        }
        if next.source.is_some() {
            self.source = next.source;
        }
        Ok(())
    }

    /// The statistics of the whole trace, once every chunk is joined (the last one kept its
    /// interpreter); `None` when it did not.
    pub fn finish(self, schema: &'s Schema) -> Option<Stats> {
        let mut source = self.source?;
        let pass = Pass {
            schema,
            source: &mut source,
            window: Window::all(),
            counter: self.counter,
            heap: self.heap,
            lines: self.lines,
            events: Vec::new(),
            places: Vec::new(),
            placed: false,
            problems: self.problems,
            other: self.other,
            time: self.time,
            first_time: self.first_time,
            moved: self.moved,
            start: self.start,
            end: None,
            data: self.data,
            unknown_seen: Vec::new(),
            unknown_seen_total: 0,
            unknown_inside: self.unknown_inside,
            lean: self.lean,
            direct: false,
        };
        Some(pass.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::compute_scoped;
    use crate::analysis::stats::pass::resume::tests::indexed_states;
    use crate::decode::Event;

    /// Every shipped trace with a namespace of ids, cut at every checkpoint with a state (one
    /// every few records): the joined figures, as text and at the peak, are one pass's.
    #[test]
    fn joined_chunks_equal_one_pass() {
        for name in ["heaptrack.mtf", "android.mtf", "et3.mtf"] {
            let path = format!("{}/traces/{name}", env!("CARGO_MANIFEST_DIR"));
            let o = crate::open(&path).expect("a shipped trace");
            for every in [3, 7, 50] {
                joined_equal_one_pass(&o.reader(), name, every);
            }
        }
    }

    /// `reader`'s trace cut at every checkpoint with a state, one every `every` records: the
    /// joined figures, as text and at the peak, are one pass's.
    fn joined_equal_one_pass(reader: &crate::decode::Reader<'_>, name: &str, every: u64) {
        let (idx, at, built) = indexed_states(reader, every);
        for scope in [StatsScope::All, StatsScope::Heap] {
            let mut source = Declared::new(reader.schema());
            let one = compute_scoped(
                reader,
                &mut reader.records(),
                &mut source,
                Window::all(),
                scope,
            );
            let cuts: Vec<usize> = (0..at.len())
                .filter(|&i| built.entries[i].is_some())
                .collect();
            let mut acc: Option<ChunkStats<'_>> = None;
            for k in 0..=cuts.len() {
                let until = cuts.get(k).map(|&i| at[i].0);
                let mut records = match k {
                    0 => reader.records(),
                    _ => idx.records_at(reader, cuts[k - 1]).expect("resumes"),
                };
                let mut chunk = Bounded {
                    records: &mut records,
                    until,
                };
                let blob = (k > 0).then(|| built.entries[cuts[k - 1]].as_deref());
                let part = compute_chunk(
                    reader.schema(),
                    &mut chunk,
                    blob.flatten(),
                    scope,
                    k == cuts.len(),
                )
                .expect("a chunk");
                match &mut acc {
                    None => acc = Some(part),
                    Some(a) => a.absorb(part).expect("joins"),
                }
            }
            let joined = acc.and_then(|a| a.finish(reader.schema())).expect("stats");
            let shown = |s: &Stats| format!("{}{}{:?}", s.to_text(50), s.at_peak_text(50), s);
            assert_eq!(
                shown(&joined),
                shown(&one),
                "{name} every {every} {scope:?}"
            );
        }
    }

    /// A trace whose ids are held by several live blocks at once (a shared namespace, as
    /// heaptrack's allocation-info index): `n` records allocating and freeing blocks of a few
    /// infos, with time stamps.
    fn shared_trace(n: usize) -> crate::Opened {
        let dtd = "tag.width = 1;\nsize.width = 4; size.interpretation = none;\n\
                   info.width = 4; info.interpretation = none;\n\
                   ms.width = 2; ms.interpretation = delta 0;\n\
                   analysis.version = 1;\nsize.size = bytes;\nblock.shared = yes;\n\
                   block.unknown = info;\nallocinfo.atEnd = normal;\n\
                   section heap 1 {\n\
                   allocInfo : (tag, size) { tag.value = 4; size.definesNext = allocinfo; }\n\
                   alloc : (tag, info) { tag.value = 5; info.defines = block; \
                   info.refers = allocinfo; info.bytes = allocinfo.size.value; }\n\
                   free : (tag, info) { tag.value = 6; info.undefines = block; }\n\
                   timestamp : (tag, ms) { tag.value = 7; ms.time = ms; ms.monotonic = trace; }\n\
                   }\n";
        let schema = crate::dtd::parse_str("t.dtd", dtd).expect("a DTD").schema;
        let mut text =
            String::from("%mtf 1 dtd=\"t.dtd\" class=32 order=little\nsection number=1\n");
        for size in [8, 24, 100, 4096, 17] {
            text.push_str(&format!("allocInfo size={size}\n"));
        }
        let (mut held, mut x) = ([0u32; 5], 11u64);
        for k in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (r, info) = ((x >> 33) % 100, ((x >> 50) % 5) as usize);
            if r < 55 {
                held[info] += 1;
                text.push_str(&format!("alloc info={info}\n"));
            } else if r < 95 {
                // Now and then a free of an info with no block (before tracing began).
                held[info] = held[info].saturating_sub(1);
                text.push_str(&format!("free info={info}\n"));
            } else {
                text.push_str(&format!("timestamp ms={}\n", k % 7));
            }
        }
        let bytes =
            crate::pack::pack_to_vec(&schema, text.as_bytes(), crate::text::InputFormat::Text)
                .expect("packs");
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("t.dtd");
        std::fs::write(&path, dtd).expect("written");
        crate::OpenOptions::default()
            .dtd(path)
            .open_bytes(bytes)
            .expect("opens")
    }

    /// A chunk resumed where ids are held by several live blocks at once (a shared namespace)
    /// runs with every block at the interpreter's number for it, as a pass from the start does,
    /// rather than in a map by id; the joined figures are one pass's.
    #[test]
    fn shared_ids_resumed_are_placed() {
        let o = shared_trace(4000);
        let reader = o.reader();
        let (_, _, built) = indexed_states(&reader, 97);
        let (mut placed, mut shared) = (0, 0);
        for blob in built.entries.iter().flatten() {
            let mut source = Declared::new(reader.schema());
            let mut pass = Pass::new(reader.schema(), &mut source, Window::all());
            pass.placed = false;
            let ok = pass
                .restore_placing(&mut Dec::new(blob), true)
                .expect("restores");
            placed += usize::from(ok);
            // The same state restored by id: blocks hidden under a newer one of the same id.
            let mut source = Declared::new(reader.schema());
            let mut by_id = Pass::new(reader.schema(), &mut source, Window::all());
            by_id.placed = false;
            by_id.restore(&mut Dec::new(blob)).expect("restores");
            let hidden = by_id.heap.hidden();
            shared += usize::from(hidden > 0);
            assert!(ok, "a state with {hidden} blocks hidden not placed");
        }
        assert!(
            placed > 20 && shared > 20,
            "{placed} placed, {shared} shared"
        );
        joined_equal_one_pass(&reader, "shared ids", 97);
    }

    /// A decode stopped before a record index.
    struct Bounded<'r, 'a> {
        records: &'r mut crate::decode::Records<'a>,
        until: Option<u64>,
    }

    impl EventStream for Bounded<'_, '_> {
        fn next_event(&mut self) -> Option<Event<'_>> {
            if self
                .until
                .is_some_and(|u| self.records.count() >= u && self.records.at_record_boundary())
            {
                return None;
            }
            self.records.next_event()
        }
        fn dropped_problems(&self) -> u64 {
            self.records.dropped_problems()
        }
    }
}
