//! heaptrack's own data file, as `heaptrack_interpret` writes it and `heaptrack_print` and
//! `heaptrack_gui` read it (file format version 3): `v` the versions, `X` the program, `s`
//! strings, `i` instruction pointers with their frames, `t` nodes of the trace tree, `a`
//! allocation infos (size, trace), `+`/`-` an allocation and a free by allocation-info index,
//! `c` the time in milliseconds. Every number is hexadecimal; strings and indices count from 1
//! (0 is none), allocation infos from 0.
//!
//! The file is written from a trace's heap events in trace order, so that heaptrack's reader,
//! which keeps a running total, finds the peak, the leaks, the allocations and the temporary
//! allocations `mtf stats` gives (docs/formats.md, *Exports for viewers*).

// Design: heaptrack's reader calls a free temporary when its allocation-info index equals the
// index of the allocation line just before it (and, after a free, when it is 0). That is a
// property of indices, not of blocks: two live blocks of the same size and stack share an
// index, so the free of one right after the allocation of the other would count. The writer
// keeps heaptrack's count equal to mtf's (a free of the block allocated just before, with no
// free between) with two devices that cost nothing in the figures: allocation info 0 is a
// placeholder no free names, and a free that must not count but whose index equals the last
// allocation's is written with the index's twin, a second `a` line of the same size and trace
// (the same bytes, the same stack for every figure heaptrack shows).

use std::collections::HashMap;
use std::io::{BufWriter, Write};

use crate::analysis::{HeapEvents, HeapOp, Interpreter, SpaceKind, TimeUnit};
use crate::decode::Reader;
use crate::stacks::{Costs, StackProfile};

use super::ViewerError;

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The file format version written (heaptrack 1.4's: sized strings).
const FILE_VERSION: u32 = 3;
/// The heaptrack version the file says it comes from (1.4.0).
const HEAPTRACK_VERSION: u32 = 0x010400;
/// The name of the one frame of allocations without a site or stack.
pub const NO_SITE: &str = "(no allocation site)";

/// What [`write_heaptrack`] writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaptrackOptions {
    /// The namespace whose allocations are written (default: the first that allocates with
    /// stacks and sizes, or with sizes; else the first with sizes; else the first that
    /// allocates).
    pub space: Option<String>,
    /// The program's name on the `X` line (heaptrack_print's "Debuggee command was").
    pub executable: String,
}

/// What was written: the figures heaptrack's reader will find in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaptrackReport {
    /// The namespace written.
    pub space: String,
    /// Whether the stacks are the trace's own (extension stacks/1); else one frame per
    /// allocation site (or one frame for all).
    pub stacks: bool,
    /// Whether the `c` lines are the trace's declared times (else the event's index).
    pub timed: bool,
    /// Nodes of the trace tree written.
    pub traces: usize,
    /// Allocations (`+` lines; a realloc is a free and an allocation).
    pub allocations: u64,
    /// Frees (`-` lines).
    pub frees: u64,
    /// Temporary allocations, as heaptrack's reader counts them.
    pub temporary: u64,
    /// The peak of live bytes.
    pub peak: u128,
    /// Live bytes at the end.
    pub leaked: u128,
    /// The last `c` value (milliseconds).
    pub last_time: u64,
}

/// One frame of an `i` line.
struct HtFrame {
    function: Option<String>,
    file: Option<String>,
    line: u64,
}

/// One node of the trace tree: an instruction pointer with its frames (the innermost first,
/// the frames it was inlined into after it), and its caller's node (0: none).
struct HtNode {
    parent: u32,
    address: Option<u64>,
    module: Option<String>,
    frames: Vec<HtFrame>,
}

/// A leaf: an allocation site under a stack (or calling context), as the events give it.
type Key = (Option<u64>, Option<u64>);

/// Writes the heap events of `reader`'s trace as a heaptrack data file (uncompressed text; an
/// [`crate::io::Output`] named `.zst` or `.gz` compresses it, as heaptrack reads either). Two
/// passes over the records: the sites and stacks first (the trace tree comes before the
/// allocations), then the events.
pub fn write_heaptrack<W: Write + ?Sized>(
    reader: &Reader<'_>,
    options: &HeaptrackOptions,
    out: &mut W,
) -> Result<HeaptrackReport, ViewerError> {
    let decl = &reader.schema().analysis;
    let spaces = &decl.namespaces;
    if !spaces.iter().any(|n| n.kind == SpaceKind::Ids) {
        return Err(ViewerError::NoAllocations);
    }
    // Pass 1: every namespace's leaves, in the order first allocated from.
    let mut keys: Vec<indexmap::IndexSet<Key, foldhash::fast::RandomState>> =
        spaces.iter().map(|_| Default::default()).collect();
    let mut allocs = vec![0u64; spaces.len()];
    let mut timed = vec![false; spaces.len()];
    // Per namespace whose temporary rule compares with an id after a free (heaptrack's own
    // reading, `temporaryReset`): the size and leaf of the first block of that id.
    let mut reset_block: Vec<Option<(u64, Key)>> = vec![None; spaces.len()];
    let mut events = HeapEvents::new(reader);
    for e in events.by_ref() {
        let s = e.space as usize;
        timed[s] |= e.time.is_some();
        match e.op {
            HeapOp::Alloc { id, size, .. } => {
                keys[s].insert((e.site, e.stack));
                allocs[s] += 1;
                if spaces[s].temporary_reset == Some(id) && reset_block[s].is_none() {
                    reset_block[s] = Some((size, (e.site, e.stack)));
                }
            }
            HeapOp::Move { size: Some(_), .. } => {
                keys[s].insert((e.site, e.stack));
                allocs[s] += 1;
            }
            _ => {}
        }
    }
    let interp = events.interpreter();
    if interp.stopped() {
        return Err(ViewerError::Limit {
            limit: crate::analysis::DEFAULT_MAX_TRACKED as u64,
            record: None,
        });
    }
    let space = super::error::choose_space_of(interp, Some(&allocs), options.space.as_deref())?;
    let ns = &spaces[space as usize];
    let keys = std::mem::take(&mut keys[space as usize]);
    let stacks = interp.has_stacks(space);
    let (nodes, leaf_trace) = if stacks {
        let profile = interp.stack_profile(
            space,
            keys.iter().map(|&(site, stack)| {
                let name = site.and_then(|s| interp.site_name(space, s));
                (site, stack, name, Costs::default())
            }),
        );
        tree_of_profile(&profile)
    } else {
        tree_of_sites(interp, space, &keys)
    };
    drop(events);

    let mut w = Body {
        out: BufWriter::new(out),
        infos: Vec::new(),
        primary: Map::default(),
        twin: Map::default(),
        last_plus: 0,
        report: HeaptrackReport {
            space: ns.name.clone(),
            stacks,
            traces: nodes.len(),
            ..HeaptrackReport::default()
        },
        live_bytes: 0,
    };
    let exe = one_line(&options.executable);
    let what = "heaptrack file";
    (|| -> std::io::Result<()> {
        writeln!(w.out, "v {HEAPTRACK_VERSION:x} {FILE_VERSION:x}")?;
        writeln!(
            w.out,
            "# written by mtf export --to heaptrack: namespace {}",
            one_line(&ns.name)
        )?;
        writeln!(w.out, "X {exe}")?;
        write_tree(&mut w.out, &nodes, &exe)
    })()
    .map_err(ViewerError::write(what))?;
    // Allocation info 0: a placeholder no free names (see the design note); or, where the
    // namespace's temporary rule compares with an id after a free (a heaptrack recording,
    // whose ids are its allocation infos), the size and stack of the blocks of that id, so
    // that heaptrack's reader compares as mtf does.
    let block0 = reset_block[space as usize];
    let (size0, trace0) = match block0 {
        Some((size, key)) => (
            if ns.sized { size } else { 0 },
            keys.get_index_of(&key).map_or(1, |i| leaf_trace[i]),
        ),
        None => (0, 1),
    };
    let zero = w.info(size0, trace0).map_err(ViewerError::write(what))?;
    if block0.is_some() {
        w.primary.insert((size0, trace0), zero);
    }

    // Pass 2: the events.
    // Declared times where the namespace's events have them, else each event's index.
    let unit = decl.time_unit.filter(|_| timed[space as usize]);
    w.report.timed = unit.is_some();
    let mut live = Live::default();
    let mut last_alloc: Option<(u64, u64)> = None;
    let mut t0: Option<u64> = None;
    let mut last_c: Option<u64> = None;
    let mut index = 0u64;
    let none_trace = keys
        .get_index_of(&(None, None))
        .map_or(1, |i| leaf_trace[i]);
    let trace_of = |site: Option<u64>, stack: Option<u64>| {
        keys.get_index_of(&(site, stack))
            .map_or(none_trace, |i| leaf_trace[i])
    };
    let sized = ns.sized;
    let reset = ns.temporary_reset;
    let shared = ns.shared;
    let mut events = HeapEvents::new(reader);
    for e in events.by_ref() {
        if e.space != space {
            continue;
        }
        // The time of the event in milliseconds from the first declared time, else its index.
        let ms = match (unit, e.time) {
            (Some(u), Some(t)) => Some(to_ms(u, t.saturating_sub(*t0.get_or_insert(t)))),
            (Some(_), None) => None,
            (None, _) => Some(index),
        };
        index += 1;
        let io = (|| -> std::io::Result<()> {
            if let Some(ms) = ms.filter(|&m| last_c.is_none_or(|c| m > c)) {
                writeln!(w.out, "c {ms:x}")?;
                last_c = Some(ms);
                w.report.last_time = ms;
            }
            let key = e.key;
            match e.op {
                HeapOp::Alloc { id, size, .. } => {
                    let size = if sized { size } else { 0 };
                    let info = w.info_for(size, trace_of(e.site, e.stack))?;
                    if let Some(lost) = live.put(key, id, info, shared) {
                        // A second allocation of a live id: the first block is gone without
                        // a free the trace shows (mtf stats counts it no more).
                        w.minus(lost, false)?;
                    }
                    w.plus(info)?;
                    last_alloc = Some((key, id));
                }
                HeapOp::Free { id } => {
                    if let Some(info) = live.take(key, id) {
                        let temporary = last_alloc == Some((key, id));
                        last_alloc = reset.map(|r| (key, r));
                        w.minus(info, temporary)?;
                    }
                }
                HeapOp::Move {
                    old,
                    new,
                    size: Some(size),
                } => {
                    let size = if sized { size } else { 0 };
                    let gone = live.take(key, old);
                    if let Some(info) = gone {
                        let temporary = last_alloc == Some((key, old));
                        last_alloc = reset.map(|r| (key, r));
                        w.minus(info, temporary)?;
                    }
                    // The new block keeps the old one's stack unless the event names its own.
                    let trace = match (e.site, e.stack, gone) {
                        (None, None, Some(info)) => w.infos[info as usize].1,
                        _ => trace_of(e.site, e.stack),
                    };
                    let info = w.info_for(size, trace)?;
                    if let Some(lost) = live.put(key, new, info, shared) {
                        w.minus(lost, false)?;
                    }
                    w.plus(info)?;
                    last_alloc = Some((key, new));
                }
                HeapOp::Move {
                    old,
                    new,
                    size: None,
                } => {
                    // Renamed, no allocator call: the same block under its new id.
                    if let Some(info) = live.take(key, old) {
                        if let Some(lost) = live.put(key, new, info, shared) {
                            w.minus(lost, false)?;
                        }
                    }
                }
            }
            Ok(())
        })();
        io.map_err(ViewerError::write(what))?;
    }
    if events.interpreter().stopped() {
        return Err(ViewerError::Limit {
            limit: crate::analysis::DEFAULT_MAX_TRACKED as u64,
            record: None,
        });
    }
    w.out.flush().map_err(ViewerError::write(what))?;
    w.report.leaked = w.live_bytes;
    Ok(w.report)
}

/// A time difference in the trace's unit, in milliseconds (a logical clock's ticks as they
/// are).
fn to_ms(unit: TimeUnit, t: u64) -> u64 {
    match unit {
        TimeUnit::Ns => t / 1_000_000,
        TimeUnit::Us => t / 1_000,
        TimeUnit::Ms | TimeUnit::Tick => t,
        TimeUnit::S => t.saturating_mul(1_000),
    }
}

/// The trace tree of a stack profile: its nodes as they are (node `n` is trace `n + 1`), and
/// for a calling-context profile the site's name (a Java trace's allocated class) as one more
/// node under the leaf's, as `mtf flamegraph` draws it. Returns the nodes and each leaf's
/// trace index.
fn tree_of_profile(p: &StackProfile) -> (Vec<HtNode>, Vec<u32>) {
    let mut nodes: Vec<HtNode> = p
        .nodes
        .iter()
        .map(|n| {
            // The instruction pointer's address and module, on whichever of its frames holds
            // them.
            let frames = || n.frames.iter().filter_map(|&f| p.frames.get(f as usize));
            HtNode {
                parent: n.parent.map_or(0, |q| q + 1),
                address: frames().find_map(|f| f.address),
                module: frames().find_map(|f| f.module.clone()),
                frames: n
                    .frames
                    .iter()
                    .filter_map(|&f| p.frames.get(f as usize))
                    .map(|f| HtFrame {
                        function: match (&f.owner, &f.function) {
                            (Some(o), Some(fun)) => Some(format!("{o}.{fun}")),
                            (_, fun) => fun.clone(),
                        },
                        file: f.file.clone(),
                        line: f.line.unwrap_or(0),
                    })
                    .collect(),
            }
        })
        .collect();
    let mut extra: Map<(u32, String), u32> = Map::default();
    let mut root: Option<u32> = None;
    let traces = p
        .leaves
        .iter()
        .map(|l| {
            let base = l.node.map_or(0, |n| n + 1);
            match (&l.site, p.contexts, l.node) {
                (Some(site), true, _) | (Some(site), false, None) => {
                    *extra.entry((base, site.clone())).or_insert_with(|| {
                        nodes.push(site_node(base, site));
                        nodes.len() as u32
                    })
                }
                (_, _, Some(_)) => base,
                (None, _, None) => *root.get_or_insert_with(|| {
                    nodes.push(site_node(0, NO_SITE));
                    nodes.len() as u32
                }),
            }
        })
        .collect();
    if nodes.is_empty() {
        // Trace 1 exists in every file: allocation info 0 names it.
        nodes.push(site_node(0, NO_SITE));
    }
    (nodes, traces)
}

/// A node of one frame named `name` under `parent`.
fn site_node(parent: u32, name: &str) -> HtNode {
    HtNode {
        parent,
        address: None,
        module: None,
        frames: vec![HtFrame {
            function: Some(name.to_string()),
            file: None,
            line: 0,
        }],
    }
}

/// The trace tree of a trace without stacks: one root node per allocation site, named as the
/// trace names it, and one for allocations without a site.
fn tree_of_sites(
    interp: &Interpreter<'_>,
    space: u32,
    keys: &indexmap::IndexSet<Key, foldhash::fast::RandomState>,
) -> (Vec<HtNode>, Vec<u32>) {
    let mut nodes = Vec::new();
    let mut by_site: Map<Option<u64>, u32> = Map::default();
    let traces = keys
        .iter()
        .map(|&(site, _)| {
            *by_site.entry(site).or_insert_with(|| {
                let name = match site {
                    Some(s) => interp
                        .site_name(space, s)
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| format!("site {s}")),
                    None => NO_SITE.to_string(),
                };
                nodes.push(site_node(0, &name));
                nodes.len() as u32
            })
        })
        .collect();
    if nodes.is_empty() {
        nodes.push(site_node(0, NO_SITE));
    }
    (nodes, traces)
}

/// Text on one line (a string of heaptrack's file ends at the line's end).
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Writes the strings, instruction pointers and trace nodes: node `n` (0-based) is instruction
/// pointer and trace `n + 1`.
fn write_tree(out: &mut impl Write, nodes: &[HtNode], exe: &str) -> std::io::Result<()> {
    let mut strings: Map<String, u64> = Map::default();
    let mut intern = |out: &mut dyn Write, s: &str| -> std::io::Result<u64> {
        // No text is no string (index 0), as heaptrack writes an unknown name.
        if s.is_empty() {
            return Ok(0);
        }
        if let Some(&i) = strings.get(s) {
            return Ok(i);
        }
        let s = one_line(s);
        let i = strings.len() as u64 + 1;
        writeln!(out, "s {:x} {s}", s.len())?;
        strings.insert(s, i);
        Ok(i)
    };
    for (n, node) in nodes.iter().enumerate() {
        let module = intern(out, node.module.as_deref().unwrap_or(exe))?;
        let mut line = format!("i {:x} {module:x}", node.address.unwrap_or(n as u64 + 1));
        let only_address = node.frames.len() == 1
            && node.frames[0].function.is_none()
            && node.frames[0].file.is_none();
        if !only_address {
            for f in &node.frames {
                let fun = match &f.function {
                    Some(s) => intern(out, s)?,
                    None => 0,
                };
                let file = match &f.file {
                    Some(s) => intern(out, s)?,
                    None => 0,
                };
                line.push_str(&format!(" {fun:x} {file:x} {:x}", f.line));
            }
        }
        writeln!(out, "{line}")?;
        writeln!(out, "t {:x} {:x}", n + 1, node.parent)?;
    }
    Ok(())
}

/// The live blocks: each id's allocation info, and in a shared namespace the blocks below the
/// newest holder of an id.
#[derive(Default)]
struct Live {
    top: Map<(u64, u64), (u32, u32)>,
    below: Vec<(u32, u32)>,
    free: Vec<u32>,
}

impl Live {
    /// Puts a block; returns the info of the block it replaces (an id alive in a namespace
    /// that is not shared).
    fn put(&mut self, key: u64, id: u64, info: u32, shared: bool) -> Option<u32> {
        let old = self.top.insert((key, id), (info, 0))?;
        if !shared {
            if old.1 != 0 {
                self.free.push(old.1 - 1);
            }
            return Some(old.0);
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.below[i as usize] = old;
                i
            }
            None => {
                self.below.push(old);
                (self.below.len() - 1) as u32
            }
        };
        if let Some(t) = self.top.get_mut(&(key, id)) {
            t.1 = i + 1;
        }
        None
    }

    /// Takes the newest block of an id; its info.
    fn take(&mut self, key: u64, id: u64) -> Option<u32> {
        let (info, below) = self.top.remove(&(key, id))?;
        if below != 0 {
            let i = below - 1;
            self.top.insert((key, id), self.below[i as usize]);
            self.free.push(i);
        }
        Some(info)
    }
}

/// The lines after the trace tree, and what heaptrack's reader will count in them.
struct Body<W: Write> {
    out: BufWriter<W>,
    /// Allocation infos: (size, trace).
    infos: Vec<(u64, u32)>,
    primary: Map<(u64, u32), u32>,
    twin: Map<u32, u32>,
    /// The info of the last `+` line, 0 after a `-` line (heaptrack's `lastAllocationPtr`).
    last_plus: u32,
    report: HeaptrackReport,
    live_bytes: u128,
}

impl<W: Write> Body<W> {
    /// A new allocation info (an `a` line).
    fn info(&mut self, size: u64, trace: u32) -> std::io::Result<u32> {
        writeln!(self.out, "a {size:x} {trace:x}")?;
        self.infos.push((size, trace));
        Ok((self.infos.len() - 1) as u32)
    }

    /// The allocation info of a size and trace, made at its first use.
    fn info_for(&mut self, size: u64, trace: u32) -> std::io::Result<u32> {
        if let Some(&i) = self.primary.get(&(size, trace)) {
            return Ok(i);
        }
        let i = self.info(size, trace)?;
        self.primary.insert((size, trace), i);
        Ok(i)
    }

    fn plus(&mut self, info: u32) -> std::io::Result<()> {
        writeln!(self.out, "+ {info:x}")?;
        self.last_plus = info;
        let size = self.infos[info as usize].0;
        self.live_bytes += u128::from(size);
        self.report.allocations += 1;
        self.report.peak = self.report.peak.max(self.live_bytes);
        Ok(())
    }

    /// A free of a block of allocation info `info`; `temporary`: whether mtf counts it so.
    fn minus(&mut self, info: u32, temporary: bool) -> std::io::Result<()> {
        let mut i = info;
        if !temporary && info == self.last_plus {
            i = match self.twin.get(&info) {
                Some(&t) => t,
                None => {
                    let (size, trace) = self.infos[info as usize];
                    let t = self.info(size, trace)?;
                    self.twin.insert(info, t);
                    self.twin.insert(t, info);
                    t
                }
            };
        }
        writeln!(self.out, "- {i:x}")?;
        if i == self.last_plus {
            self.report.temporary += 1;
        }
        self.last_plus = 0;
        self.live_bytes -= u128::from(self.infos[i as usize].0);
        self.report.frees += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A HATF 1.0 trace (dtds/hatf10.dtd) of the given records in its text form.
    fn trace(records: &[&str]) -> crate::Opened {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/dtds/hatf10.dtd");
        let dtd = std::fs::read_to_string(path).unwrap();
        let schema = crate::dtd::parse_str("hatf10.dtd", &dtd).unwrap().schema;
        let mut text = String::from(
            "%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection number=1:heap\n\
             createThread thread=0 vfield.length=0 vfield.data=x\"\"\n\
             createHeap thread=0 heap=0 vfield.length=0 vfield.data=x\"\"\n\
             metadata alloc.time baseOffset 0\nmetadata alloc.time width 4\n\
             metadata free.time baseOffset 0\nmetadata free.time width 4\n",
        );
        for r in records {
            text.push_str(r);
            text.push_str(" thread=0 heap=0 vfield.length=0 vfield.data=x\"\"\n");
        }
        let bytes =
            crate::pack::pack_to_vec(&schema, text.as_bytes(), crate::text::InputFormat::Text)
                .unwrap();
        crate::OpenOptions::default().open_bytes(bytes).unwrap()
    }

    /// What heaptrack's reader counts in a file, read here by its rules
    /// (accumulatedtracedata.cpp): `+` adds its info's size and sets the last allocation to
    /// its index, `-` is temporary when its index is the last allocation's and sets it to 0,
    /// the peak is the highest running total; `c` is the time.
    #[derive(Debug, Default, PartialEq, Eq)]
    struct Read {
        allocations: u64,
        temporary: u64,
        peak: u64,
        leaked: u64,
        time: u64,
        infos: Vec<(u64, u64)>,
    }

    fn read(text: &str) -> Read {
        let mut r = Read::default();
        let (mut last, mut live) = (0usize, 0u64);
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            match f[0] {
                "a" => r.infos.push((hex(f[1]), hex(f[2]))),
                "+" => {
                    let i = hex(f[1]) as usize;
                    r.allocations += 1;
                    live += r.infos[i].0;
                    r.peak = r.peak.max(live);
                    last = i;
                }
                "-" => {
                    let i = hex(f[1]) as usize;
                    if i == last {
                        r.temporary += 1;
                    }
                    last = 0;
                    live -= r.infos[i].0;
                }
                "c" => r.time = hex(f[1]),
                _ => {}
            }
        }
        r.leaked = live;
        r
    }

    #[test]
    fn heaptrack_counts_the_temporary_allocations_mtf_does_for_blocks_sharing_an_info() {
        let o = trace(&[
            "alloc size=16 address=4096 time=0",  // A: live 16
            "alloc size=16 address=4112 time=1",  // B, A's size and site: 32
            "free address=4096 time=2",           // A: not temporary (B came after): 16
            "alloc size=32 address=4128 time=3",  // C: 48, the peak
            "free address=4128 time=4",           // C: temporary (1): 16
            "free address=4112 time=5",           // B, after a free: not temporary: 0
            "alloc size=8 address=4200 time=6",   // D: 8
            "free address=4999 time=7",           // not alive: no event
            "free address=4200 time=8",           // D: temporary (2): 0
            "alloc size=100 address=5000 time=9", // E, leaked: 100, the new peak
        ]);
        let mut out = Vec::new();
        let report = write_heaptrack(
            &o.reader(),
            &HeaptrackOptions {
                space: None,
                executable: "prog\nname".into(),
            },
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let r = read(&text);
        assert_eq!(
            (r.allocations, r.temporary, r.peak, r.leaked, r.time),
            (5, 2, 100, 100, 9),
            "{text}"
        );
        // A was freed under the twin of the info it shares with B, so that the free did not
        // look temporary to heaptrack.
        assert_eq!(r.infos.iter().filter(|i| i.0 == 16).count(), 2, "{text}");
        assert_eq!(
            (
                report.allocations,
                report.temporary,
                report.peak,
                report.leaked
            ),
            (5, 2, 100, 100)
        );
        assert!(text.starts_with("v 10400 3\n"));
        // A name with a line end stays on its line.
        assert!(text.contains("\nX prog name\n"), "{text}");
        assert!(report.timed && !report.stacks);
    }

    #[test]
    fn a_namespace_that_is_not_there_is_named_with_those_that_are() {
        let o = trace(&["alloc size=16 address=4096 time=0"]);
        let e = write_heaptrack(
            &o.reader(),
            &HeaptrackOptions {
                space: Some("nope".into()),
                ..HeaptrackOptions::default()
            },
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("`nope`; the trace has: block"),
            "{e}"
        );
    }
}
