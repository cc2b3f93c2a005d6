//! The heap view the speedscope, DHAT and Chrome trace-event exports are written from: one
//! pass over a trace's heap events ([`super::read`]) gives a [`HeapView`] — figures by program
//! point (a site under a stack, or a site where the trace has no stacks) and the live bytes and
//! blocks over time, bounded.

use crate::analysis::TimeUnit;
use crate::stacks::StackProfile;

/// What a viewer export reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewOptions {
    /// The namespace whose allocations are exported (default: the first with stacks and
    /// sizes, else the first with sizes, else the first of ids).
    pub space: Option<String>,
    /// At most this many points of each curve (live bytes and blocks over time, in total and
    /// per thread; at least 3): the lowest, highest and last point of every stretch are kept,
    /// so the peak is exact.
    pub points: usize,
}

impl Default for ViewOptions {
    fn default() -> ViewOptions {
        ViewOptions {
            space: None,
            points: DEFAULT_POINTS,
        }
    }
}

/// The default of [`ViewOptions::points`].
pub const DEFAULT_POINTS: usize = 10_000;

/// The figures of one program point (a site under one stack), beside its
/// [`crate::stacks::Leaf`] in [`HeapView::profile`], as DHAT names them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PointFigures {
    /// The blocks' lifetimes added up, in [`HeapView::time_unit`] (or data records), blocks
    /// alive at the end counted to the end (DHAT's `tl`).
    pub lifetimes: u128,
    /// The point's own highest live bytes (of blocks where the namespace has no sizes) over
    /// the trace (DHAT's `mb`).
    pub max_bytes: u128,
    /// Its live blocks when its live bytes were highest (DHAT's `mbk`).
    pub max_blocks: u64,
}

/// One point of a curve: the live state after an event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// The event's place among the events that changed the live state of the namespace (from
    /// 0): what orders points of equal time.
    pub event: u64,
    /// The data record it belongs to (from 0, as `mtf stats` counts positions).
    pub record: u64,
    /// Its time: the declared time in [`HeapView::time_unit`], else the data record.
    pub time: u64,
    /// Live bytes after it.
    pub bytes: u128,
    /// Live blocks after it.
    pub blocks: u64,
}

/// A curve of live bytes and blocks, bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Curve {
    /// The points kept, in event order.
    pub points: Vec<Sample>,
    /// Whether points were left out (more changes than [`ViewOptions::points`]).
    pub thinned: bool,
}

/// The heap of one namespace of a trace, for the viewers. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct HeapView {
    /// The namespace (`block`, `object`).
    pub space: String,
    /// Whether its allocations have sizes (else every byte figure counts blocks).
    pub sized: bool,
    /// The declared time's unit, where the trace declares times; else times are data records.
    pub time_unit: Option<TimeUnit>,
    /// The program points: frames, the stack tree and one leaf per site and stack, with
    /// allocations, bytes allocated, live bytes and blocks at the peak and at the end (the
    /// `temporary` figure is not computed here: 0).
    pub profile: StackProfile,
    /// Beside each leaf of `profile`, DHAT's further figures.
    pub points: Vec<PointFigures>,
    /// The first moment live bytes (blocks, where unsized) were highest; `None` without any
    /// allocation.
    pub peak: Option<Sample>,
    /// The end: the last data record's place and time, live bytes and blocks then.
    pub end: Sample,
    /// The time of the first data record (declared times), 0 for data records.
    pub start: u64,
    /// Live bytes and blocks over time.
    pub curve: Curve,
    /// Per thread (the allocating thread of each block), where the trace declares threads.
    pub threads: Vec<(u64, Curve)>,
    /// Data records read.
    pub records: u64,
}

impl HeapView {
    /// The unit of [`Sample::time`] and lifetimes, as a word: the declared unit (`ns`, `us`,
    /// `ms`, `s`, `ticks`) or `records`.
    pub fn time_word(&self) -> &'static str {
        match self.time_unit {
            Some(TimeUnit::Tick) => "ticks",
            Some(u) => u.keyword(),
            None => "records",
        }
    }

    /// A time in microseconds, where the unit converts (`None`: ticks or data records).
    pub fn micros(&self, t: u64) -> Option<f64> {
        let t = t as f64;
        match self.time_unit? {
            TimeUnit::Ns => Some(t / 1000.0),
            TimeUnit::Us => Some(t),
            TimeUnit::Ms => Some(t * 1000.0),
            TimeUnit::S => Some(t * 1_000_000.0),
            TimeUnit::Tick => None,
        }
    }
}

/// A frame as the viewers show it: a name, and a file and line where known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ViewFrame {
    pub name: String,
    pub file: Option<String>,
    pub line: Option<u64>,
}

impl ViewFrame {
    /// The frame as one line of text: `name (file:line)`.
    pub fn text(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{} ({f}:{l})", self.name),
            (Some(f), None) => format!("{} ({f})", self.name),
            _ => self.name.clone(),
        }
    }
}

/// The frames of every program point, deduplicated: a table of frames and, per leaf of the
/// profile, its stack as indices into it, root first. A leaf's site name is its innermost frame
/// where the stacks are calling contexts or the leaf has no stack; a leaf with neither stack nor
/// site is the one frame `(no allocation site)` ([`super::heaptrack::NO_SITE`]), as in every export.
pub(crate) struct Stacks {
    pub frames: Vec<ViewFrame>,
    pub stacks: Vec<Vec<u32>>,
}

impl Stacks {
    /// With `addresses`, a frame's instruction pointer leads its name (`0x4005d4: main`, as
    /// DHAT writes frames), so that frames at different addresses stay apart.
    pub fn of(p: &StackProfile, addresses: bool) -> Stacks {
        use std::collections::HashMap;
        let mut frames: Vec<ViewFrame> = Vec::new();
        let mut index: HashMap<ViewFrame, u32> = HashMap::new();
        let mut by_profile: HashMap<u32, u32> = HashMap::new();
        let mut intern = |f: ViewFrame, frames: &mut Vec<ViewFrame>| -> u32 {
            *index.entry(f.clone()).or_insert_with(|| {
                frames.push(f);
                (frames.len() - 1) as u32
            })
        };
        let mut stacks = Vec::with_capacity(p.leaves.len());
        for leaf in &p.leaves {
            let mut s = Vec::new();
            for (_, f) in p.stack_of(leaf) {
                let i = match by_profile.get(&f) {
                    Some(&i) => i,
                    None => {
                        let fr = p.frames.get(f as usize).cloned().unwrap_or_default();
                        let name = match &fr.function {
                            Some(func) => match &fr.owner {
                                Some(o) => format!("{o}.{func}"),
                                None => func.clone(),
                            },
                            // An unresolved frame is its address, as heaptrack_print shows it.
                            None => fr
                                .address
                                .map_or_else(|| "??".to_string(), |a| format!("0x{a:x}")),
                        };
                        let name = if name.is_empty() {
                            "??".to_string()
                        } else {
                            name
                        };
                        let name = match fr.address {
                            Some(a) if addresses && fr.function.is_some() => {
                                format!("0x{a:x}: {name}")
                            }
                            _ => name,
                        };
                        let i = intern(
                            ViewFrame {
                                name,
                                file: fr.file.clone(),
                                line: fr.line.filter(|&l| l > 0),
                            },
                            &mut frames,
                        );
                        by_profile.insert(f, i);
                        i
                    }
                };
                s.push(i);
            }
            if p.contexts || s.is_empty() {
                let site = leaf.site.as_deref().filter(|n| !n.is_empty());
                let name = match (site, s.is_empty()) {
                    (Some(site), _) => Some(site.to_string()),
                    (None, true) => Some(super::heaptrack::NO_SITE.to_string()),
                    (None, false) => None,
                };
                if let Some(name) = name {
                    s.push(intern(
                        ViewFrame {
                            name,
                            file: None,
                            line: None,
                        },
                        &mut frames,
                    ));
                }
            }
            stacks.push(s);
        }
        Stacks { frames, stacks }
    }
}

/// A figure as a JSON number: the viewers read numbers as doubles, so a figure beyond `u64`
/// (never met in practice) is written as the largest.
pub(crate) fn num(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}
