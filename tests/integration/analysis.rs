//! Extension analysis/1 (docs/format.md §14): for every shipped DTD, small traces written in the
//! text form with each kind of violation its declarations can see, checked for the finding and
//! the index of the record it is reported at; traces shaped like the real samples check clean;
//! the heap events and site names the producer gives.

use std::path::PathBuf;

use metatf::analysis::check::Check;
use metatf::analysis::{
    Finding, FindingKind, HeapEvent, HeapEvents, HeapOp, Interpreter, Severity, Sink,
};
use metatf::decode::Event;
use metatf::text::InputFormat;

use crate::util;

/// What checking a trace found, and the heap events.
struct Outcome {
    findings: Vec<Finding>,
    events: Vec<HeapEvent>,
    names: Vec<(u32, u64, Option<String>)>,
}

impl Outcome {
    /// (kind, severity, record index) of every finding.
    fn kinds(&self) -> Vec<(FindingKind, Severity, u64)> {
        self.findings
            .iter()
            .map(|f| (f.kind, f.severity, f.at.record))
            .collect()
    }

    /// The findings that make the trace inconsistent.
    fn errors(&self) -> Vec<(FindingKind, u64)> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| (f.kind, f.at.record))
            .collect()
    }
}

fn dtd_path(dtd: &str) -> PathBuf {
    util::root().join("dtds").join(dtd)
}

/// Pack text (whose header names `dtd`) and check it with the library: findings, events.
fn run(dtd: &str, text: &str) -> Outcome {
    run_limited(dtd, text, metatf::analysis::DEFAULT_MAX_TRACKED)
}

fn run_limited(dtd: &str, text: &str, limit: usize) -> Outcome {
    let schema = util::schema(&format!("dtds/{dtd}"));
    let bytes = metatf::pack::pack_to_vec(&schema, text.as_bytes(), InputFormat::Text)
        .unwrap_or_else(|e| panic!("pack: {e}"));
    let opened = metatf::OpenOptions::new()
        .dtd(dtd_path(dtd))
        .open_bytes(bytes)
        .unwrap();
    let reader = opened.reader();
    let mut check = Check::new(opened.schema());
    check.set_limit(limit);
    let mut interp = Interpreter::new(opened.schema());
    interp.set_limit(limit);
    let mut findings = Vec::new();
    let mut events = Vec::new();
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        match ev {
            Event::Record(r) => {
                findings.extend_from_slice(check.record(&r));
                interp.record(&r, &mut events);
            }
            Event::Problem(p) => panic!("decoding: {p}"),
            Event::Damage(d) => panic!("decoding: {d}"),
        }
    }
    findings.extend_from_slice(check.finish());
    let mut names = Vec::new();
    for e in &events {
        if let Some(s) = e.site {
            names.push((e.space, s, interp.site_name(e.space, s)));
        }
    }
    Outcome {
        findings,
        events,
        names,
    }
}

/// The record index of the line holding `needle`: record lines are counted from 0, skipping the
/// header, comments and blank lines (as `mtf pack` writes them, one record per line).
fn index_of(text: &str, needle: &str) -> u64 {
    let mut i = 0;
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with("%mtf") {
            continue;
        }
        if t.contains(needle) {
            return i;
        }
        i += 1;
    }
    panic!("no line holds {needle:?}");
}

/// [`index_of`] for a whole line.
fn index_of_line(text: &str, line: &str) -> u64 {
    let mut i = 0;
    for l in text.lines() {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with("%mtf") {
            continue;
        }
        if t == line {
            return i;
        }
        i += 1;
    }
    panic!("no line {line:?}");
}

fn space(dtd: &str, name: &str) -> u32 {
    util::schema(&format!("dtds/{dtd}"))
        .analysis
        .space_by_name(name)
        .unwrap_or_else(|| panic!("{dtd} has no namespace {name}"))
}

// ---- HATF 1.0 and its split variant -------------------------------------------------------

const HATF: &str = r#"%mtf 1 dtd="hatf10.dtd" class=32 order=little
section number=1
createThread thread=0 vfield.data=""
alloc size=16 address=4096 vfield.data=""
alloc size=32 address=4112 vfield.data=""
free address=4096 vfield.data=""
free address=0 vfield.data=""
realloc address=4112 address_2=8192 vfield.data="moved"
free address=4096 vfield.data="double"
free address=12345 vfield.data="unknown"
alloc size=8 address=8192 vfield.data="again"
destroyThread vfield.data=""
destroyThread vfield.data="twice"
"#;

#[test]
fn hatf10_frees_moves_and_redefines() {
    let o = run("hatf10.dtd", HATF);
    let t = HATF;
    assert_eq!(
        o.errors(),
        [
            (FindingKind::NotAlive, index_of(t, "\"double\"")),
            (FindingKind::Redefined, index_of(t, "\"again\"")),
            (FindingKind::NotAlive, index_of(t, "\"twice\"")),
        ]
    );
    let double = o
        .findings
        .iter()
        .find(|f| f.at.record == index_of(t, "\"double\""))
        .unwrap();
    // The double free names the free that ended the block.
    assert_eq!(
        double.defined.map(|d| d.record),
        Some(index_of(t, "free address=4096 vfield.data=\"\""))
    );
    // A free of a block never seen is information in HATF (a trace may start late).
    assert!(o.kinds().contains(&(
        FindingKind::NotAlive,
        Severity::Info,
        index_of(t, "\"unknown\"")
    )));
    // free(NULL) says nothing; the moved block is alive at the end, once.
    let at_end: Vec<u64> = o
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::AliveAtEnd)
        .map(|f| f.id)
        .collect();
    assert_eq!(at_end, [8192], "{:?}", o.kinds());
    let block = space("hatf10.dtd", "block");
    let ops: Vec<HeapOp> = o
        .events
        .iter()
        .filter(|e| e.space == block)
        .map(|e| e.op)
        .collect();
    assert_eq!(
        ops[..4],
        [
            HeapOp::Alloc {
                id: 4096,
                size: 16,
                align: None
            },
            HeapOp::Alloc {
                id: 4112,
                size: 32,
                align: None
            },
            HeapOp::Free { id: 4096 },
            // HATF's realloc has no size: the block keeps its 32 bytes.
            HeapOp::Move {
                old: 4112,
                new: 8192,
                size: None
            },
        ]
    );
}

#[test]
fn hatf10_split_reads_ids_through_the_address_stream() {
    // Addresses come from section `addresses`, read through `sectionStride`: the id is the
    // element's address, not its index.
    let text = r#"%mtf 1 dtd="hatf10-split.dtd" class=64 order=little
section addresses
addr address=0x1000
addr address=0x2000
addr address=0x1000
addr address=0x1000
section heap
metadata alloc.address sectionStride addresses 1
alloc size=16 vfield.data=""
alloc size=16 vfield.data=""
metadata free.address sectionStride addresses 1
free vfield.data=""
free vfield.data="again"
"#;
    let o = run("hatf10-split.dtd", text);
    // The frees read elements 0 and 1 of their own cursor: 0x1000 and 0x2000, so the
    // second is no double free; a third free of 0x1000 is.
    assert!(o.errors().is_empty(), "{:?}", o.kinds());
    let block = space("hatf10-split.dtd", "block");
    let ids: Vec<HeapOp> = o
        .events
        .iter()
        .filter(|e| e.space == block)
        .map(|e| e.op)
        .collect();
    assert_eq!(
        ids,
        [
            HeapOp::Alloc {
                id: 0x1000,
                size: 16,
                align: None
            },
            HeapOp::Alloc {
                id: 0x2000,
                size: 16,
                align: None
            },
            HeapOp::Free { id: 0x1000 },
            HeapOp::Free { id: 0x2000 },
        ]
    );
    let bad = text.replace(
        "free vfield.data=\"again\"",
        "free vfield.data=\"again\"\nfree vfield.data=\"third\"",
    );
    assert_eq!(
        run("hatf10-split.dtd", &bad).errors(),
        [(FindingKind::NotAlive, index_of(&bad, "\"third\""))]
    );
}

// ---- Android, valgrind, mtrace, malloc-lab --------------------------------------------------

const ANDROID: &str = r#"%mtf 1 dtd="hatf-android.dtd" class=64 order=little
section number=1
alloc size=48 address=0x4000000
metadata alloc.func default 1
metadata alloc.nmemb default 17
alloc size=8 address=0x4000100 func=1 nmemb=17
metadata alloc.func default 2
metadata alloc.nmemb default 0
metadata alloc.align default 16
alloc size=104 address=0x4000200 func=2 align=16
metadata alloc.func default 0
metadata alloc.align default 0
realloc size=64 old=0x4000000 address=0x4000000
reallocAllocFree size=256 old=0x4000100 address=0x4001000
reallocAlloc size=10 old=0x0 address=0x4002000
reallocFree size=0 old=0x4002000 address=0x0
free address=0x0
free address=0x4000200
free address=0x4000200
alloc size=1 address=0x4001000
destroyThread
"#;

#[test]
fn android_calloc_realloc_and_double_free() {
    let t = ANDROID;
    let o = run("hatf-android.dtd", t);
    assert_eq!(
        o.errors(),
        [
            (
                FindingKind::NotAlive,
                index_of(t, "free address=0x4000200") + 1
            ),
            (FindingKind::Redefined, index_of(t, "alloc size=1 ")),
        ]
    );
    let block = space("hatf-android.dtd", "block");
    let ops: Vec<HeapOp> = o
        .events
        .iter()
        .filter(|e| e.space == block)
        .map(|e| e.op)
        .collect();
    assert_eq!(
        ops,
        [
            HeapOp::Alloc {
                id: 0x400_0000,
                size: 48,
                align: Some(0)
            },
            // calloc(17, 8)
            HeapOp::Alloc {
                id: 0x400_0100,
                size: 136,
                align: Some(0)
            },
            HeapOp::Alloc {
                id: 0x400_0200,
                size: 104,
                align: Some(16)
            },
            HeapOp::Move {
                old: 0x400_0000,
                new: 0x400_0000,
                size: Some(64)
            },
            HeapOp::Move {
                old: 0x400_0100,
                new: 0x400_1000,
                size: Some(256)
            },
            // realloc(NULL, 10) allocates; realloc(p, 0) frees.
            HeapOp::Alloc {
                id: 0x400_2000,
                size: 10,
                align: None
            },
            HeapOp::Free { id: 0x400_2000 },
            HeapOp::Free { id: 0x400_0200 },
            // The redefined block: the old one is forgotten, the new one counts.
            HeapOp::Free { id: 0x400_1000 },
            HeapOp::Alloc {
                id: 0x400_1000,
                size: 1,
                align: Some(0)
            },
        ]
    );
}

#[test]
fn valgrind_calloc_and_usable_size() {
    let t = r#"%mtf 1 dtd="hatf-valgrind.dtd" class=64 order=little
section number=1
metadata alloc.func default 20
metadata alloc.nmemb default 3
alloc size=4 address=0x4a40040 func=20 nmemb=3
metadata alloc.func default 0
metadata alloc.nmemb default 0
alloc size=4 address=0x4a40080 func=0
usableSize address=0x4a40040 result=16
free address=0x4a40040 func=0
usableSize address=0x4a40040 result=16
free address=0x4a400c0 func=0
"#;
    let o = run("hatf-valgrind.dtd", t);
    assert_eq!(
        o.errors(),
        [
            (FindingKind::Undefined, index_of(t, "usableSize") + 2),
            // valgrind traces a program from its start: an unknown free is an error.
            (FindingKind::NotAlive, index_of(t, "0x4a400c0")),
        ]
    );
    let sizes: Vec<u64> = o
        .events
        .iter()
        .filter_map(|e| match e.op {
            HeapOp::Alloc { size, .. } => Some(size),
            _ => None,
        })
        .collect();
    assert_eq!(sizes, [12, 4]);
}

#[test]
fn mtrace_sites_are_the_callers() {
    let t = r#"%mtf 1 dtd="hatf-mtrace.dtd" class=64 order=little
section number=1
start
alloc size=16 address=0x405000 caller=@0
alloc size=32 address=0x405100 caller=@21
free address=0x405000 caller=@0
free address=0x999000 caller=@0
end
section number=2
string s.data="./a.out:[0x401136]"
string s.data="./a.out:[0x40114e]"
"#;
    let o = run("hatf-mtrace.dtd", t);
    assert!(o.errors().is_empty(), "{:?}", o.kinds());
    assert!(o.kinds().contains(&(
        FindingKind::NotAlive,
        Severity::Info,
        index_of(t, "0x999000")
    )));
    // Two allocations and the free of the first name their callers.
    let names: Vec<Option<String>> = o.names.iter().map(|n| n.2.clone()).collect();
    assert_eq!(
        names,
        [
            Some("./a.out:[0x401136]".to_string()),
            Some("./a.out:[0x40114e]".to_string()),
            Some("./a.out:[0x401136]".to_string())
        ]
    );
}

#[test]
fn malloclab_ids_are_reused_after_a_free() {
    let t = r#"%mtf 1 dtd="hatf-malloclab.dtd" class=64 order=little
section number=1
header2002 heapsize=20000 ids=2 ops=6 weight=1
alloc size=10 address=0 id=0
free address=0 id=0
alloc size=20 address=0 id=0
realloc size=40 old=0 address=0 id=0
free address=0 id=18446744073709551615
free address=0 id=0
free address=0 id=1
"#;
    let o = run("hatf-malloclab.dtd", t);
    assert_eq!(
        o.errors(),
        [(
            FindingKind::NotAlive,
            index_of_line(t, "free address=0 id=1")
        )]
    );
    assert!(o.events.iter().any(|e| e.op
        == HeapOp::Move {
            old: 0,
            new: 0,
            size: Some(40)
        }));
}

// ---- heaptrack ------------------------------------------------------------------------------

const HEAPTRACK: &str = r#"%mtf 1 dtd="hatf-heaptrack.dtd" class=64 order=little
section number=1
stringDef haslen=0 len=0 text=@0
stringDef haslen=0 len=0 text=@10
allocInfo size=32 trace=1
allocInfo size=100 trace=2
alloc info=0
alloc info=0
alloc info=1
timestamp ms=16
free info=0
free info=0
free info=0
alloc info=5
timestamp ms=15
section number=3
ipInfo ip=4198710 module=1 hasframe=1 function=2 file=1 line=10 hasmore=0 more.data=""
ipInfo ip=4198912 module=1 hasframe=1 function=1 file=1 line=3 hasmore=0 more.data=""
section number=4
traceRoot ip=1
traceNode ip=2 parent=@0
section number=2
string s.data="./a.out"
string s.data="main"
"#;

#[test]
fn heaptrack_shares_allocation_infos() {
    let t = HEAPTRACK;
    let o = run("hatf-heaptrack.dtd", t);
    let third_free = index_of(t, "free info=0") + 2;
    assert_eq!(
        o.errors(),
        [
            // Two blocks held info 0: the third free has none left.
            (FindingKind::NotAlive, third_free),
            // No allocation info 5, so no size for the block (docs/format.md §14.3).
            (FindingKind::Undefined, index_of(t, "alloc info=5")),
            (FindingKind::Bytes, index_of(t, "alloc info=5")),
            (FindingKind::Backwards, index_of(t, "ms=15")),
        ]
    );
    let block = space("hatf-heaptrack.dtd", "block");
    let allocs: Vec<(u64, Option<u64>, Option<u64>)> = o
        .events
        .iter()
        .filter(|e| e.space == block)
        .filter_map(|e| match e.op {
            HeapOp::Alloc { size, .. } => Some((size, e.site, e.time)),
            _ => None,
        })
        .collect();
    // Sizes and call stacks come from the allocation infos; times from the last `c` line.
    assert_eq!(
        allocs,
        [
            (32, Some(1), None),
            (32, Some(1), None),
            (100, Some(2), None),
            (0, None, Some(16)),
        ]
    );
    // Trace 1's innermost ip is 1, whose function is string 2 ("main"); trace 2's is string 1.
    let names: Vec<(u64, Option<String>)> = o
        .names
        .iter()
        .filter(|n| n.0 == block)
        .map(|n| (n.1, n.2.clone()))
        .collect();
    assert_eq!(names[0], (1, Some("main".to_string())));
    assert_eq!(names[2], (2, Some("./a.out".to_string())));
}

#[test]
fn heaptrack_raw_frees_by_address() {
    let t = r#"%mtf 1 dtd="hatf-heaptrack-raw.dtd" class=64 order=little
section number=1
alloc size=32 trace=1 address=0x1000
free address=0x1000
free address=0x1000
section number=4
traceRoot ip=4198710
"#;
    let o = run("hatf-heaptrack-raw.dtd", t);
    assert_eq!(
        o.errors(),
        [(FindingKind::NotAlive, index_of(t, "free address") + 1)]
    );
    // A raw file's frames are instruction pointers: its site is named by the address, in hex.
    assert_eq!(o.names[0].2.as_deref(), Some("0x401136"));
}

// ---- ET / Merlin, ET3, JVM, TPTP --------------------------------------------------------------

const MERLIN: &str = r#"%mtf 1 dtd="et_merlin.dtd" class=64 order=little
section number=1
entry methodid=12 receiver=0
alloc objid=100 size=24 typeid=7 site=3
arrayAlloc objid=101 size=80 typeid=9 site=4 arraylen=16
update target=100 source=101 fieldid=5
entry methodid=13 receiver=100
exit methodid=12
exit methodid=12
death objid=100 time=2000
death objid=100 time=2100
death objid=555 time=2200
death objid=101 time=1000
update target=777 source=0 fieldid=5
"#;

#[test]
fn et_merlin_deaths_nesting_and_times() {
    let t = MERLIN;
    let o = run("et_merlin.dtd", t);
    let exit = index_of(t, "exit methodid=12");
    assert_eq!(
        o.errors(),
        [
            // E 12 while method 13 is the innermost level.
            (FindingKind::Mismatched, exit),
            (FindingKind::NotAlive, index_of(t, "time=2100")),
            (FindingKind::NotAlive, index_of(t, "objid=555")),
            (FindingKind::Backwards, index_of(t, "time=1000")),
        ]
    );
    let mismatched = &o.findings[0];
    assert_eq!(mismatched.expected, Some(13));
    assert_eq!(
        mismatched.defined.map(|d| d.record),
        Some(index_of(t, "methodid=13"))
    );
    // A reference to an object made before tracing is information; a static field (0) nothing.
    assert!(o.kinds().contains(&(
        FindingKind::Undefined,
        Severity::Info,
        index_of(t, "target=777")
    )));
}

#[test]
fn et3_checks_clean_and_names_classes() {
    let t = r#"%mtf 1 dtd="et3.dtd" class=64 order=little
section number=1
entry methodid=2 receiver=0
alloc objid=5 size=16 typeid=7 site=3
witness objid=5 classid=7
update target=5 source=0 fieldid=1
exit methodid=2
death objid=5 time=4 more=0 extra=0
section number=2
classname classid=7 name=@0
section number=5
string s.data="Foo"
"#;
    let o = run("et3.dtd", t);
    assert!(o.findings.is_empty(), "{:?}", o.kinds());
    // The allocation and the death name the class.
    assert_eq!(
        o.names[0],
        (space("et3.dtd", "object"), 7, Some("Foo".into()))
    );
    assert_eq!(o.names.len(), 2);
    let bad = t.replace("exit methodid=2", "exit methodid=3");
    assert_eq!(
        run("et3.dtd", &bad).errors(),
        [(FindingKind::Mismatched, index_of(&bad, "exit"))]
    );
}

#[test]
fn jvm_trace_objects_threads_and_frames() {
    let t = r#"%mtf 1 dtd="jvm_trace.dtd" class=64 order=little
section number=1
vmStart time=10
threadStart time=11 threadid=1
objAlloc time=12 class=@0 objid=43
methodEntry time=13 class=@0 method=@0 objid=43
framePop time=14 class=@0 method=@0
objFree time=15 class=@0 objid=43
objFree time=16 class=@0 objid=43
threadEnd time=17 threadid=1
threadEnd time=18 threadid=1
methodExit time=17 class=@0 method=@0
section number=2
classname s.data="Foo"
section number=3
methodname s.data="run"
"#;
    let o = run("jvm_trace.dtd", t);
    assert_eq!(
        o.errors(),
        [
            (FindingKind::NotAlive, index_of(t, "time=16")),
            (FindingKind::NotAlive, index_of(t, "time=18")),
            (FindingKind::Backwards, index_of(t, "methodExit")),
            (FindingKind::Unbalanced, index_of(t, "methodExit")),
        ]
    );
    assert_eq!(
        o.names[0],
        (space("jvm_trace.dtd", "object"), 0, Some("Foo".into()))
    );
}

const TPTP: &str = r#"%mtf 1 dtd="tptp.dtd" class=64 order=little
section number=1
threadStart threadid=8 sec=10 ns=0 threadname=@0 groupname=@0 parentname=@0 objid=0
classDef name=@7 sourcename=@7 classid=6529 objid=6530 sec=10 ns=100
methodDef name=@13 signature=@13 startline=1 endline=2 methodid=6523 classid=6529
methodEntry sec=10 ns=200 methodid=6523 classid=6529 ticket=4336 depth=32
methodEntry sec=10 ns=300 methodid=6523 classid=6529 ticket=4400 depth=40
methodEntry sec=10 ns=400 methodid=6523 classid=6529 ticket=4500 depth=40
objAlloc sec=10 ns=500 isarray=0 transobjid=1 objid=77 classid=6529 size=24
methodExit methodid=6523 classid=6529 ticket=4500 sec=10 ns=600 ohsec=0 ohns=5
methodExit methodid=6523 classid=6529 ticket=4336 sec=10 ns=700 ohsec=0 ohns=5
objFree sec=9 ns=999999999 objid=77 transobjid=1
objFree sec=11 ns=0 objid=77 transobjid=1
threadEnd threadid=8 sec=12 ns=0
section number=2
string s.data="main"
string s.data="Foo"
string s.data="run"
"#;

#[test]
fn tptp_tickets_depths_and_times() {
    let t = TPTP;
    let o = run("tptp.dtd", t);
    assert_eq!(
        o.errors(),
        [
            // Not deeper than its caller (depth 40).
            (FindingKind::Depth, index_of(t, "ticket=4500 depth")),
            // Ticket 4336 closes while 4400 is the innermost level.
            (FindingKind::Mismatched, index_of(t, "ticket=4336 sec")),
            // 9.999999999 s after 10.0000007 s.
            (FindingKind::Backwards, index_of(t, "sec=9")),
            (FindingKind::NotAlive, index_of(t, "sec=11 ns=0 objid")),
        ]
    );
    let object = space("tptp.dtd", "object");
    let alloc = o.events.iter().find(|e| e.space == object).unwrap();
    assert_eq!(alloc.time, Some(10_000_000_500));
    assert_eq!(alloc.site, Some(6529));
    assert_eq!(o.names[0].2.as_deref(), Some("Foo"));
}

#[test]
fn the_limit_stops_interpretation_with_one_finding() {
    let o = run_limited("hatf-android.dtd", ANDROID, 2);
    let limits: Vec<u64> = o
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::Limit)
        .map(|f| f.at.record)
        .collect();
    // Two blocks fit; the third allocation crosses the limit.
    assert_eq!(limits, [index_of(ANDROID, "func=2")]);
}

// ---- shaped like the real samples ----------------------------------------------------------

#[test]
fn shipped_samples_check_as_their_data_says() {
    // Every sample trace of the repository checks clean, except the hand-written ET/Merlin
    // oddities, which close method 12 twice (an `X` exception exit, then an `E`).
    for entry in std::fs::read_dir(util::root().join("traces")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().and_then(|e| e.to_str()) != Some("mtf") {
            continue;
        }
        let opened = metatf::open(&p).unwrap();
        let reader = opened.reader();
        let mut check = Check::new(opened.schema());
        assert!(check.is_declared(), "{}", p.display());
        let mut errors = Vec::new();
        let mut records = reader.records();
        while let Some(ev) = records.next() {
            if let Event::Record(r) = ev {
                let found = check.record(&r).to_vec();
                for f in &found {
                    if f.severity == Severity::Error {
                        errors.push(check.describe(f));
                    }
                }
            }
        }
        let name = p.file_stem().unwrap().to_str().unwrap();
        // By DTD, not file name: copies of a sample check as the sample does.
        if opened.schema().name.ends_with("et_merlin.dtd") {
            assert_eq!(
                errors,
                [
                    "record 20 (exit) at byte 1322: closes frame 12 (thread 1), but no level is open",
                    "record 41 (exit) at byte 1577: closes frame 12 (thread 1), but no level is open",
                ]
            );
        } else {
            assert!(errors.is_empty(), "{name}: {errors:?}");
        }
    }
}

#[test]
fn heap_events_stream_the_android_sample() {
    let opened = metatf::open(util::root().join("traces/android.mtf")).unwrap();
    let reader = opened.reader();
    let events: Vec<HeapEvent> = HeapEvents::new(&reader).collect();
    // An independent count over the excerpt's text: every malloc/calloc/memalign line and every
    // realloc with a non-null result allocates; frees of blocks outside the excerpt do not count.
    let text =
        std::fs::read_to_string(util::root().join("tests/data/import/alloc/android-systemui.txt"))
            .unwrap();
    let mut live = std::collections::HashSet::new();
    let mut allocs = 0;
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
        match w.get(1).copied() {
            Some("malloc" | "calloc" | "memalign") => {
                allocs += 1;
                live.insert(hex(w[2]));
            }
            Some("free") => {
                live.remove(&hex(w[2]));
            }
            Some("realloc") => {
                let (new, old) = (hex(w[2]), hex(w[3]));
                live.remove(&old);
                if new != 0 {
                    live.insert(new);
                }
            }
            _ => {}
        }
    }
    let n_alloc = events
        .iter()
        .filter(|e| matches!(e.op, HeapOp::Alloc { .. }))
        .count();
    let reallocs_of_unknown = text
        .lines()
        .filter(|l| l.contains("realloc") && !l.contains(" 0x0 "))
        .count();
    assert!(n_alloc >= allocs && n_alloc <= allocs + reallocs_of_unknown);
    // Replaying the events leaves exactly the blocks the text leaves.
    let mut replay = std::collections::HashSet::new();
    for e in &events {
        match e.op {
            HeapOp::Alloc { id, .. } => {
                replay.insert(id);
            }
            HeapOp::Free { id } => {
                replay.remove(&id);
            }
            HeapOp::Move { old, new, .. } => {
                replay.remove(&old);
                replay.insert(new);
            }
        }
    }
    assert_eq!(replay, live);
    // Records come in trace order.
    assert!(events.windows(2).all(|w| w[0].record <= w[1].record));
}

/// A sink that counts, to show the trait in use.
#[derive(Default)]
struct Count(u64, u64);

impl Sink for Count {
    fn event(&mut self, _: HeapEvent) {
        self.0 += 1;
    }
    fn finding(&mut self, _: Finding) {
        self.1 += 1;
    }
}

#[test]
fn a_dtd_without_declarations_yields_nothing() {
    let schema = util::schema("tests/independent/t/t1.dtd");
    assert!(!schema.analysis.is_declared());
    let mut c = Count::default();
    let mut i = Interpreter::new(&schema);
    i.finish(&mut c);
    assert_eq!((c.0, c.1), (0, 0));
}

#[test]
fn mtf_check_reports_and_skips_semantics() {
    let dir = util::tempdir();
    let src = dir.path().join("t.txt");
    std::fs::write(&src, MERLIN).unwrap();
    let trace = dir.path().join("t.mtf");
    let out = util::mtf(&["pack", src.to_str().unwrap(), "-o", trace.to_str().unwrap()]);
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let t = trace.to_str().unwrap();
    let out = util::mtf(&["check", t]);
    assert_eq!(out.status.code(), Some(1));
    let s = util::text(&out.stdout);
    assert!(
        s.contains(&format!(
            "record {} (exit) at byte",
            index_of(MERLIN, "exit methodid=12")
        )),
        "{s}"
    );
    assert!(s.contains("close of another level"), "{s}");
    assert!(s.contains("INVALID, 4 problem(s)"), "{s}");
    let out = util::mtf(&["check", "--no-semantic", t]);
    assert_eq!(out.status.code(), Some(0));
    assert!(util::text(&out.stdout).contains("semantic checks skipped"));
    // From a pipe, the same.
    let out = util::mtf_stdin(&["check", "-"], &std::fs::read(&trace).unwrap());
    assert_eq!(out.status.code(), Some(1));
    assert!(util::text(&out.stdout).contains("INVALID, 4 problem(s)"));
    let out = util::mtf(&["check", "--max-ids", "1", t]);
    assert!(util::text(&out.stdout).contains("too many ids"));
}

// ---- random heaps against a model ------------------------------------------------------------

use proptest::prelude::*;

/// One operation of a random Android-shaped trace over a few addresses.
#[derive(Debug, Clone)]
enum Op {
    Malloc(u64, u64),
    Free(u64),
    Realloc(u64, u64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    let addr = (0u64..6).prop_map(|a| a * 0x100);
    prop_oneof![
        (addr.clone(), 1u64..100).prop_map(|(a, s)| Op::Malloc(a, s)),
        addr.clone().prop_map(Op::Free),
        (addr.clone(), addr, 1u64..100).prop_map(|(n, o, s)| Op::Realloc(n, o, s)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The live blocks, their bytes and the inconsistencies the checker finds are those of a
    /// plain model of the heap (address 0 is NULL).
    #[test]
    fn random_heaps_match_a_model(ops in proptest::collection::vec(op(), 0..60)) {
        let mut text = String::from("%mtf 1 dtd=\"hatf-android.dtd\" class=64 order=little\nsection number=1\n");
        let mut live: std::collections::BTreeMap<u64, u64> = Default::default();
        let mut problems = 0usize;
        for o in &ops {
            match *o {
                Op::Malloc(a, s) => {
                    text.push_str(&format!("alloc size={s} address={a:#x}\n"));
                    if a != 0 && live.insert(a, s).is_some() {
                        problems += 1; // a define of a live block
                    }
                }
                Op::Free(a) => {
                    text.push_str(&format!("free address={a:#x}\n"));
                    if a != 0 && live.remove(&a).is_none() {
                        problems += 1; // info for a never-seen block, error for a dead one
                    }
                }
                Op::Realloc(n, o, s) => {
                    let rec = if o == 0 { "reallocAlloc" } else if n == 0 { "reallocFree" } else if n == o { "realloc" } else { "reallocAllocFree" };
                    text.push_str(&format!("{rec} size={s} old={o:#x} address={n:#x}\n"));
                    if o != 0 && live.remove(&o).is_none() {
                        problems += 1;
                    }
                    if n != 0 && live.insert(n, s).is_some() {
                        problems += 1;
                    }
                }
            }
        }
        let out = run("hatf-android.dtd", &text);
        let found = out
            .findings
            .iter()
            .filter(|f| matches!(f.kind, FindingKind::NotAlive | FindingKind::Redefined))
            .count();
        prop_assert_eq!(found, problems, "{}", text);
        // Replaying the events with their sizes leaves the model's heap.
        let mut replay: std::collections::BTreeMap<u64, u64> = Default::default();
        for e in &out.events {
            match e.op {
                HeapOp::Alloc { id, size, .. } => {
                    replay.insert(id, size);
                }
                HeapOp::Free { id } => {
                    replay.remove(&id);
                }
                HeapOp::Move { old, new, size } => {
                    let s = replay.remove(&old).unwrap_or(0);
                    replay.insert(new, size.unwrap_or(s));
                }
            }
        }
        prop_assert_eq!(&replay, &live, "{}", text);
        let at_end: std::collections::BTreeSet<u64> = out
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::AliveAtEnd)
            .map(|f| f.id)
            .collect();
        prop_assert_eq!(at_end, live.keys().copied().collect());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The interpreter's live-id table (packed entries per namespace) and its memory of the ids
    /// undefined recently against a naive model, finding by finding: the record, severity and id
    /// of each, the record that defined (or last undefined) the id, the events with the sizes a
    /// realloc keeps, and what is alive at the end in the order it was defined.
    #[test]
    fn the_live_table_agrees_with_a_naive_model(ops in proptest::collection::vec(op(), 0..80)) {
        type Seen = (FindingKind, Severity, u64, u64, Option<u64>);
        let mut text = String::from("%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection number=1\n");
        // id → (defining record, size); id → record of its last undefine.
        let mut live: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
        let mut dead: std::collections::BTreeMap<u64, u64> = Default::default();
        let mut want: Vec<Seen> = Vec::new();
        let mut events: Vec<HeapOp> = Vec::new();
        let mut undefine = |r: u64, a: u64, live: &mut std::collections::BTreeMap<u64, (u64, u64)>, want: &mut Vec<Seen>| {
            match live.remove(&a) {
                Some(l) => {
                    dead.insert(a, r);
                    Some(l)
                }
                None => {
                    let d = dead.get(&a).copied();
                    let sev = if d.is_some() { Severity::Error } else { Severity::Info };
                    want.push((FindingKind::NotAlive, sev, r, a, d));
                    None
                }
            }
        };
        for (i, o) in ops.iter().enumerate() {
            let r = i as u64 + 1;
            match *o {
                Op::Malloc(a, s) => {
                    text.push_str(&format!("alloc size={s} address={a} vfield.data=\"\"\n"));
                    if a == 0 {
                        continue;
                    }
                    if let Some((d, _)) = live.insert(a, (r, s)) {
                        want.push((FindingKind::Redefined, Severity::Error, r, a, Some(d)));
                        events.push(HeapOp::Free { id: a });
                    }
                    events.push(HeapOp::Alloc { id: a, size: s, align: None });
                }
                Op::Free(a) => {
                    text.push_str(&format!("free address={a} vfield.data=\"\"\n"));
                    if a != 0 && undefine(r, a, &mut live, &mut want).is_some() {
                        events.push(HeapOp::Free { id: a });
                    }
                }
                Op::Realloc(n, o, _) => {
                    text.push_str(&format!("realloc address={o} address_2={n} vfield.data=\"\"\n"));
                    let freed = if o != 0 { undefine(r, o, &mut live, &mut want) } else { None };
                    if n == 0 {
                        if freed.is_some() {
                            events.push(HeapOp::Free { id: o });
                        }
                        continue;
                    }
                    // The block keeps its size.
                    let size = freed.map_or(0, |(_, s)| s);
                    if let Some((d, _)) = live.insert(n, (r, size)) {
                        want.push((FindingKind::Redefined, Severity::Error, r, n, Some(d)));
                        events.push(HeapOp::Free { id: n });
                    }
                    events.push(match freed {
                        Some(_) => HeapOp::Move { old: o, new: n, size: None },
                        None => HeapOp::Alloc { id: n, size: 0, align: None },
                    });
                }
            }
        }
        let mut end: Vec<(u64, u64)> = live.iter().map(|(&a, &(d, _))| (d, a)).collect();
        end.sort();
        for (d, a) in end {
            want.push((FindingKind::AliveAtEnd, Severity::Info, d, a, Some(d)));
        }
        let out = run("hatf10.dtd", &text);
        let got: Vec<Seen> = out
            .findings
            .iter()
            .map(|f| (f.kind, f.severity, f.at.record, f.id, f.defined.map(|d| d.record)))
            .collect();
        prop_assert_eq!(got, want, "{}", text);
        let ops: Vec<HeapOp> = out.events.iter().map(|e| e.op).collect();
        prop_assert_eq!(ops, events, "{}", text);
        // The moved blocks' sizes: replayed, the events leave the model's heap.
        let mut replay: std::collections::BTreeMap<u64, u64> = Default::default();
        for e in &out.events {
            match e.op {
                HeapOp::Alloc { id, size, .. } => {
                    replay.insert(id, size);
                }
                HeapOp::Free { id } => {
                    replay.remove(&id);
                }
                HeapOp::Move { old, new, size } => {
                    let s = replay.remove(&old).unwrap_or(0);
                    replay.insert(new, size.unwrap_or(s));
                }
            }
        }
        let model: std::collections::BTreeMap<u64, u64> = live.iter().map(|(&a, &(_, s))| (a, s)).collect();
        prop_assert_eq!(replay, model);
    }
}

#[test]
fn site_names_come_from_the_name_maps_at_the_end() {
    // The ET3 sample's class map is a section after the events: names are known once the
    // stream has been read.
    let opened = metatf::open(util::root().join("traces/et3.mtf")).unwrap();
    let reader = opened.reader();
    let mut events = HeapEvents::new(&reader);
    let mut sites = Vec::new();
    for e in events.by_ref() {
        if let (HeapOp::Alloc { size, .. }, Some(s)) = (e.op, e.site) {
            sites.push((e.space, s, size));
        }
    }
    let named: Vec<(u64, u64, Option<String>)> = sites
        .iter()
        .map(|&(sp, s, size)| (s, size, events.site_name(sp, s)))
        .collect();
    assert_eq!(
        named,
        [
            (2, 24, Some("SimpleTrace$Node".to_string())),
            (4, 32, Some("java.lang.String".to_string())),
        ]
    );
    let i = events.interpreter();
    assert!(!i.stopped());
    let object = i.declarations().space_by_name("object").unwrap();
    let ns = &i.namespaces()[object as usize];
    assert!(ns.sized && ns.key.is_none() && !ns.shared);
    assert_eq!(i.time_unit(), Some(metatf::analysis::TimeUnit::Tick));
}

// ---- the one live table against a table of the statistics' own -------------------------------

/// A source that hides the places of its events: `HeapStats` then keeps its own map of live
/// blocks (the path of `HeapStats::event`). After a slice that ends early it reads every record
/// on for its sites' names (no `naming_types`) where the `bool` is true, and none where false.
pub(crate) struct Unplaced<'s>(
    pub(crate) metatf::analysis::stats::Declared<'s>,
    pub(crate) bool,
);

impl metatf::analysis::stats::HeapEventSource for Unplaced<'_> {
    fn spaces(&self) -> Vec<metatf::analysis::stats::SpaceInfo> {
        self.0.spaces()
    }
    fn record(
        &mut self,
        view: &metatf::decode::RecordView<'_>,
        out: &mut Vec<HeapEvent>,
    ) -> Option<u64> {
        self.0.record(view, out)
    }
    fn site_name(&mut self, space: u32, site: u64) -> Option<String> {
        self.0.site_name(space, site)
    }
    fn unknown_frees(&self, space: u32) -> u64 {
        self.0.unknown_frees(space)
    }
    fn unknown_frees_total(&self) -> Option<u64> {
        self.0.unknown_frees_total()
    }
    fn names_later(&self) -> bool {
        self.1 && self.0.names_later()
    }
    fn stack_profile(
        &self,
        space: u32,
        leaves: &[metatf::analysis::stats::LeafSummary],
    ) -> Option<metatf::stacks::StackProfile> {
        self.0.stack_profile(space, leaves)
    }
}

/// `stats` finds a block's figures by the number the interpreter gives it (the one live
/// table); on random Android-shaped traces over a few addresses (allocations of live blocks,
/// reallocations onto live blocks, in place and moving, frees of dead blocks), whole and
/// sliced, every figure is the one a table of the statistics' own gives.
#[test]
fn blocks_found_by_place_give_the_figures_of_blocks_looked_up() {
    use metatf::analysis::stats::{compute, Bound, Declared, Window};
    let dtd = "hatf-android.dtd";
    let schema = util::schema(&format!("dtds/{dtd}"));
    let mut x = 0x853c_49e6_748f_ea9bu64;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut redefined = 0;
    for _ in 0..40 {
        let mut t = String::from(
            "%mtf 1 dtd=\"hatf-android.dtd\" class=64 order=little\nsection number=1\n",
        );
        for _ in 0..200 {
            let (a, o, s) = (next(6) * 0x100, next(6) * 0x100, 1 + next(100));
            let line = match next(4) {
                0 | 1 => format!("alloc size={s} address={a:#x}\n"),
                2 => format!("free address={a:#x}\n"),
                _ => {
                    let rec = match (a, o) {
                        (_, 0) => "reallocAlloc",
                        (0, _) => "reallocFree",
                        _ if a == o => "realloc",
                        _ => "reallocAllocFree",
                    };
                    format!("{rec} size={s} old={o:#x} address={a:#x}\n")
                }
            };
            t.push_str(&line);
        }
        let bytes = metatf::pack::pack_to_vec(&schema, t.as_bytes(), InputFormat::Text)
            .unwrap_or_else(|e| panic!("pack: {e}"));
        let opened = metatf::OpenOptions::new()
            .dtd(dtd_path(dtd))
            .open_bytes(bytes)
            .unwrap();
        let reader = opened.reader();
        for window in [
            Window::all(),
            Window {
                from: Some(Bound::Record(50)),
                to: Some(Bound::Record(150)),
            },
        ] {
            let placed = compute(&reader, &mut Declared::new(opened.schema()), window);
            let looked = compute(
                &reader,
                &mut Unplaced(Declared::new(opened.schema()), true),
                window,
            );
            assert_eq!(format!("{placed:?}"), format!("{looked:?}"), "{t}");
            redefined += placed.spaces.iter().map(|s| s.redefined).sum::<u64>();
        }
    }
    assert!(redefined > 100, "{redefined} allocations of live blocks");
}
