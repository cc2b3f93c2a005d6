//! `mtf export --to parquet|arrow --table blocks,events`: the heap tables read back with the
//! parquet and arrow-ipc readers, and the peak live bytes swept from `blocks` (+size at
//! `alloc_record`, −size at `free_record`, summed per data record, running maximum) set
//! against an independent reading of the original text — mdriver's for malloc-lab
//! (`malloclab::mdriver`), bionic memory_replay's for Android — and against `mtf stats`.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use crate::bionic::bionic;
use crate::malloclab;
use crate::util::{self, mtf, text};

/// Every batch of a Parquet or Arrow IPC file (by its extension).
fn batches(path: &Path) -> Vec<RecordBatch> {
    let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "arrow") {
        arrow_ipc::reader::FileReader::try_new(f, None)
            .unwrap()
            .map(|b| b.unwrap())
            .collect()
    } else {
        ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect()
    }
}

/// A column of u64 (nulls as `None`).
fn u64s(b: &RecordBatch, name: &str) -> Vec<Option<u64>> {
    let c = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no {name}"));
    let a = c.as_primitive::<UInt64Type>();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i)))
        .collect()
}

/// A column of strings (nulls as `None`).
fn strs(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let c = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no {name}"));
    let a = c.as_string::<i32>();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
        .collect()
}

/// A row of `blocks` as the sweep needs it.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    namespace: String,
    size: Option<u64>,
    alloc: u64,
    free: Option<u64>,
    ended_by: Option<String>,
}

fn blocks(path: &Path) -> Vec<Block> {
    let mut v = Vec::new();
    for b in batches(path) {
        let ns = strs(&b, "namespace");
        let size = u64s(&b, "size");
        let alloc = u64s(&b, "alloc_record");
        let free = u64s(&b, "free_record");
        let end = strs(&b, "ended_by");
        for i in 0..b.num_rows() {
            v.push(Block {
                namespace: ns[i].clone().unwrap(),
                size: size[i],
                alloc: alloc[i].unwrap(),
                free: free[i],
                ended_by: end[i].clone(),
            });
        }
    }
    v
}

/// The peak live bytes of namespace `ns` and the first data record where it is reached: +size
/// at the allocation's record, −size at the free's, summed per record, the running maximum.
fn sweep(rows: &[Block], ns: &str) -> (u128, u64) {
    let mut delta: BTreeMap<u64, i128> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.namespace == ns) {
        let s = i128::from(r.size.unwrap_or(0));
        *delta.entry(r.alloc).or_default() += s;
        if let Some(f) = r.free {
            *delta.entry(f).or_default() -= s;
        }
    }
    let (mut live, mut peak, mut at) = (0i128, 0i128, 0u64);
    for (rec, d) in delta {
        live += d;
        assert!(live >= 0, "live bytes below 0 at {rec}");
        if live > peak {
            peak = live;
            at = rec;
        }
    }
    (peak as u128, at)
}

/// `mtf stats -f json` of a trace.
fn stats(trace: &Path) -> Value {
    let o = mtf(&["stats", "-f", "json", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn u(v: &Value) -> u128 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        v => u128::from(v.as_u64().unwrap_or_else(|| panic!("{v}"))),
    }
}

/// A namespace's figures from `mtf stats`: (peak bytes, its data record, allocations).
fn stats_peak(j: &Value, ns: &str) -> (u128, u64, u64) {
    let n = j["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == ns)
        .unwrap_or_else(|| panic!("no namespace {ns} in {j}"));
    let at = n["peak"]["at"]["data_record"].as_u64().unwrap_or(0);
    (
        u(&n["peak"]["bytes"]),
        at,
        n["allocations"].as_u64().unwrap(),
    )
}

/// Exports `trace`'s `tables` as `format` into a new folder of `dir`; returns the folder.
fn export(dir: &Path, trace: &Path, format: &str, tables: &str) -> PathBuf {
    let out = dir.join(format!(
        "{}-{format}-{}",
        trace
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace('.', "_"),
        tables.replace(',', "+")
    ));
    let o = mtf(&[
        "export",
        "--to",
        format,
        "--table",
        tables,
        trace.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "{}: {}",
        trace.display(),
        text(&o.stderr)
    );
    out
}

/// The rows of a Parquet or Arrow file.
fn rows(path: &Path) -> u64 {
    batches(path).iter().map(|b| b.num_rows() as u64).sum()
}

#[test]
fn columnar_blocks_give_the_peak_of_bionic_and_of_stats_on_android_traces() {
    let dir = util::tempdir();
    for name in [
        "android-systemui.txt",
        "android-failed-realloc.txt",
        "android-timed.txt",
    ] {
        let src = util::root().join("tests/data/import/alloc").join(name);
        let text = std::fs::read_to_string(&src).unwrap();
        let t = util::import_into(dir.path(), &src, Some("android"));
        let j = stats(&t);
        let (speak, sat, sallocs) = stats_peak(&j, "block");
        let (peak, line, allocs, events) = bionic(&text);
        // The independent reading and mtf stats agree, the peak's line too (a data record is
        // not a line: the import's records of the input come first).
        assert_eq!((speak, sallocs), (peak, allocs), "{name}: stats");
        let n = &j["namespaces"][0];
        if peak > 0 {
            assert_eq!(n["peak"]["at"]["line"].as_u64(), Some(line), "{name}: line");
        }
        for format in ["parquet", "arrow"] {
            let out = export(dir.path(), &t, format, "blocks,events");
            let b = blocks(&out.join(format!("blocks.{format}")));
            let what = format!("{name} ({format})");
            assert_eq!(b.len() as u64, allocs, "{what}: a row per allocation");
            let (p, a) = sweep(&b, "block");
            assert_eq!(p, peak, "{what}: peak");
            assert_eq!(a, sat, "{what}: the peak's data record in stats");
            let ev = rows(&out.join(format!("events.{format}")));
            assert_eq!(ev, events, "{what}: a row per heap event");
        }
    }
}

#[test]
fn columnar_blocks_give_the_peak_of_mdriver_and_of_stats_on_malloclab_traces() {
    let dir = util::tempdir();
    for (name, header, _) in malloclab::FIXTURES {
        let path = malloclab::fixture(name);
        let want = malloclab::mdriver(&std::fs::read_to_string(&path).unwrap(), header);
        let t = util::import_into(dir.path(), &path, Some("malloclab"));
        let (speak, _, sallocs) = stats_peak(&stats(&t), "block");
        assert_eq!((speak, sallocs), (u128::from(want.peak), want.allocations));
        for format in ["parquet", "arrow"] {
            let out = export(dir.path(), &t, format, "all");
            let b = blocks(&out.join(format!("blocks.{format}")));
            let what = format!("{name} ({format})");
            assert_eq!(b.len() as u64, want.allocations, "{what}");
            assert_eq!(sweep(&b, "block").0, u128::from(want.peak), "{what}");
            let alive: Vec<&Block> = b.iter().filter(|r| r.free.is_none()).collect();
            assert_eq!(alive.len() as u64, want.leaked_blocks, "{what}");
            let leaked: u64 = alive.iter().map(|r| r.size.unwrap()).sum();
            assert_eq!(leaked, want.leaked_bytes, "{what}");
            let freed = b.iter().filter(|r| r.ended_by.is_some()).count() as u64;
            assert_eq!(freed, want.frees, "{what}");
            // The alive blocks come last, in allocation order; the others by their end.
            let first_alive = b.len() - alive.len();
            assert!(b[first_alive..].iter().all(|r| r.free.is_none()), "{what}");
            assert!(b[..first_alive].windows(2).all(|w| w[0].free <= w[1].free));
            assert!(b[first_alive..]
                .windows(2)
                .all(|w| w[0].alloc <= w[1].alloc));
        }
    }
}

#[test]
fn columnar_blocks_give_the_stats_peak_and_allocations_for_every_shipped_trace() {
    let dir = util::tempdir();
    for name in [
        "android.mtf",
        "android-timed.mtf",
        "malloclab.mtf",
        "mtrace.mtf",
        "valgrind.mtf",
        "heaptrack.mtf",
        "et3.mtf",
        "hatf-le32.mtf",
        "hatf-split-le64.mtf",
    ] {
        let t = util::root().join("traces").join(name);
        let j = stats(&t);
        let out = export(dir.path(), &t, "arrow", "blocks");
        let b = blocks(&out.join("blocks.arrow"));
        if name == "heaptrack.mtf" {
            // Its tables come after the rows (the import routes them to the end): the export
            // reads it again to name every site, as `mtf stats` names them ("main").
            let names: Vec<Option<String>> = batches(&out.join("blocks.arrow"))
                .iter()
                .flat_map(|b| strs(b, "site_name"))
                .collect();
            assert_eq!(names, [Some("main".to_string()), Some("main".to_string())]);
        }
        for n in j["namespaces"].as_array().unwrap() {
            let ns = n["name"].as_str().unwrap();
            let (peak, at, allocs) = stats_peak(&j, ns);
            let mine: Vec<Block> = b.iter().filter(|r| r.namespace == ns).cloned().collect();
            assert_eq!(mine.len() as u64, allocs, "{name} {ns}: allocations");
            let (p, a) = sweep(&mine, ns);
            assert_eq!(p, peak, "{name} {ns}: peak");
            if peak > 0 {
                assert_eq!(a, at, "{name} {ns}: the peak's record");
            }
        }
    }
}

#[test]
fn columnar_export_refuses_heap_tables_of_a_trace_without_allocations() {
    // Every shipped trace declares namespaces of ids: a small one of the check tests' DTD.
    let dtd = util::root().join("tests/data/check/t.dtd");
    let dtd = dtd.to_str().unwrap();
    let (o, t, dir) = util::pack_stdin(
        dtd,
        b"%mtf 1 dtd=\"t.dtd\" class=32 order=little\nsection number=1\nev a=1 b=2\n",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = dir.path().join("x");
    let o = mtf(&[
        "export",
        "--to",
        "arrow",
        "--table",
        "blocks",
        "-d",
        dtd,
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("declares no allocations"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists());
    // `all` writes the records and says why there are no heap tables.
    let o = mtf(&[
        "export",
        "--to",
        "arrow",
        "--table",
        "all",
        "-d",
        dtd,
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no events or blocks tables"));
    assert!(!out.join("blocks.arrow").exists());
    assert!(out.join("ev.arrow").exists());
    // --table without a columnar format is a usage error.
    let o = mtf(&[
        "export",
        "--table",
        "blocks",
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn columnar_arrow_records_tables_hold_the_parquet_values() {
    // The records tables of both formats: the same columns and rows (the Arrow files write the
    // Parquet files' dictionaries as plain values).
    let dir = util::tempdir();
    for name in ["et3.mtf", "heaptrack.mtf", "hatf-split-le64.mtf"] {
        let t = util::root().join("traces").join(name);
        let pq = export(dir.path(), &t, "parquet", "records");
        let ar = export(dir.path(), &t, "arrow", "records");
        let mut files: Vec<String> = std::fs::read_dir(&pq)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        files.sort();
        assert!(!files.is_empty());
        for f in files {
            let a = ar.join(f.replace(".parquet", ".arrow"));
            let (p, a) = (batches(&pq.join(&f)), batches(&a));
            let plain = |bs: &[RecordBatch]| -> Vec<Vec<String>> {
                bs.iter()
                    .flat_map(|b| {
                        (0..b.num_rows()).map(move |i| {
                            b.columns()
                                .iter()
                                .map(|c| arrow_cast_free_text(c.as_ref(), i))
                                .collect()
                        })
                    })
                    .collect()
            };
            assert_eq!(plain(&p), plain(&a), "{name} {f}");
        }
    }
}

/// A cell as text, dictionaries looked through, without arrow-cast.
fn arrow_cast_free_text(a: &dyn Array, i: usize) -> String {
    use arrow_schema::DataType;
    if a.is_null(i) {
        return "null".into();
    }
    match a.data_type() {
        DataType::Dictionary(..) => {
            let d = a.as_any_dictionary();
            let k = d.normalized_keys()[i];
            arrow_cast_free_text(d.values().as_ref(), k)
        }
        DataType::Utf8 => a.as_string::<i32>().value(i).to_string(),
        DataType::Binary => format!("{:?}", a.as_binary::<i32>().value(i)),
        DataType::Struct(_) => {
            let s = a.as_struct();
            let v: Vec<String> = s
                .columns()
                .iter()
                .map(|c| arrow_cast_free_text(c.as_ref(), i))
                .collect();
            format!("{{{}}}", v.join(","))
        }
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let items = l.value(i);
            let v: Vec<String> = (0..items.len())
                .map(|j| arrow_cast_free_text(items.as_ref(), j))
                .collect();
            format!("[{}]", v.join(","))
        }
        _ => {
            // Integers: their debug form is the value.
            let s = format!("{:?}", a.slice(i, 1));
            s.lines()
                .nth(1)
                .unwrap_or("")
                .trim()
                .trim_end_matches(',')
                .to_string()
        }
    }
}

/// The files of a partitioned table, `TABLE/part=K/data.EXT`, by K.
fn parts(table: &Path) -> Vec<(u64, PathBuf)> {
    parts_named(table, "part=")
}

/// The files of a partitioned table, `TABLE/{prefix}K/data.EXT`, by K.
fn parts_named(table: &Path, prefix: &str) -> Vec<(u64, PathBuf)> {
    let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(table)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let k = name.strip_prefix(prefix).unwrap().parse().unwrap();
            let files: Vec<_> = std::fs::read_dir(e.path())
                .unwrap()
                .map(|f| f.unwrap().path())
                .collect();
            assert_eq!(files.len(), 1, "{files:?}");
            (k, files[0].clone())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn columnar_partitions_by_records_hold_the_unpartitioned_rows_in_hive_folders() {
    let dir = util::tempdir();
    let src = util::root().join("tests/data/import/alloc/android-systemui.txt");
    let t = util::import_into(dir.path(), &src, Some("android"));
    let n: u64 = 71; // data records of the trace (mtf stats)
    assert!(text(&mtf(&["stats", t.to_str().unwrap()]).stdout).contains("data records 71"));
    for format in ["parquet", "arrow"] {
        let whole = export(dir.path(), &t, format, "all");
        let out = dir.path().join(format!("parts-{format}"));
        for _ in 0..2 {
            // Twice: an earlier partitioned export of the same trace is replaced.
            let o = mtf(&[
                "export",
                "--to",
                format,
                "--table",
                "all",
                "--partition-by",
                "records:20",
                t.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", text(&o.stderr));
        }
        // A folder that is not a table's parts is not the export's: refused, left alone.
        let notes = out.join("notes");
        std::fs::create_dir(&notes).unwrap();
        std::fs::write(notes.join("n.txt"), "mine").unwrap();
        let o = mtf(&[
            "export",
            "--to",
            format,
            "--partition-by",
            "records:20",
            t.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains("notes"), "{}", text(&o.stderr));
        assert_eq!(
            std::fs::read_to_string(notes.join("n.txt")).unwrap(),
            "mine"
        );
        std::fs::remove_dir_all(&notes).unwrap();
        for table in ["blocks", "events", "alloc", "free"] {
            let key = match table {
                "blocks" => "free_record",
                "events" => "record",
                _ => "record_index",
            };
            let mut rows = Vec::new();
            for (k, file) in parts(&out.join(table)) {
                for b in batches(&file) {
                    for (i, v) in u64s(&b, key).into_iter().enumerate() {
                        if key != "record_index" {
                            // A row is in the part of its record; alive blocks at the end's.
                            assert_eq!(v.unwrap_or(n) / 20, k, "{format} {table} part {k}");
                        }
                        rows.push((v, b.slice(i, 1)));
                    }
                }
            }
            let want: Vec<RecordBatch> = batches(&whole.join(format!("{table}.{format}")));
            let want: Vec<RecordBatch> = want
                .iter()
                .flat_map(|b| (0..b.num_rows()).map(move |i| b.slice(i, 1)))
                .collect();
            let got: Vec<RecordBatch> = rows.into_iter().map(|r| r.1).collect();
            assert_eq!(got.len(), want.len(), "{format} {table}");
            assert!(
                got == want,
                "{format} {table}: the rows of the whole table, in order"
            );
        }
        let b: Vec<Block> = parts(&out.join("blocks"))
            .iter()
            .flat_map(|(_, f)| blocks(f))
            .collect();
        assert_eq!(sweep(&b, "block"), (22508, 64), "{format}");
    }
}

/// Every row of a table's parts, one-row batches, in the order of the parts and of their rows;
/// checks that `key` never goes down within a part (rows sorted by record; NULL last).
fn rows_of_parts(files: &[(u64, PathBuf)], key: &str) -> Vec<(u64, RecordBatch)> {
    let mut rows = Vec::new();
    for (k, file) in files {
        let mut last = None;
        for b in batches(file) {
            for (i, v) in u64s(&b, key).into_iter().enumerate() {
                let v = v.unwrap_or(u64::MAX);
                assert!(last.is_none_or(|l| l <= v), "{key} goes down in {file:?}");
                last = Some(v);
                rows.push((*k, b.slice(i, 1)));
            }
        }
    }
    rows
}

/// An unsigned integer column of any width, as u64 (no nulls).
fn uints(b: &RecordBatch, name: &str) -> Vec<u64> {
    use arrow_array::types::{UInt16Type, UInt32Type, UInt8Type};
    let c = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no {name}"));
    match c.data_type() {
        arrow_schema::DataType::UInt8 => c
            .as_primitive::<UInt8Type>()
            .values()
            .iter()
            .map(|&v| v as u64)
            .collect(),
        arrow_schema::DataType::UInt16 => c
            .as_primitive::<UInt16Type>()
            .values()
            .iter()
            .map(|&v| v as u64)
            .collect(),
        arrow_schema::DataType::UInt32 => c
            .as_primitive::<UInt32Type>()
            .values()
            .iter()
            .map(|&v| v as u64)
            .collect(),
        _ => c.as_primitive::<UInt64Type>().values().to_vec(),
    }
}

/// The one-row batches of a whole table's file.
fn rows_of_file(path: &Path) -> Vec<RecordBatch> {
    batches(path)
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |i| b.slice(i, 1)))
        .collect()
}

#[test]
fn columnar_partitions_by_time_put_each_row_in_the_bucket_of_its_record() {
    // android-timed.mtf: bionic's times in ns, 1 µs apart, some lines without one (the time of
    // the latest record that had one, docs/format.md §14.4).
    let dir = util::tempdir();
    let t = util::root().join("traces/android-timed.mtf");
    let span = 2000u64; // time:2us
    for format in ["parquet", "arrow"] {
        let whole = export(dir.path(), &t, format, "all");
        let out = dir.path().join(format!("time-{format}"));
        let o = mtf(&[
            "export",
            "--to",
            format,
            "--table",
            "all",
            "--partition-by",
            "time:2us",
            t.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        // The clock of every record, from the records tables' own fields: the running
        // maximum of `start` over the records that carry one, in trace order.
        let mut times: BTreeMap<u64, Option<u64>> = BTreeMap::new();
        let mut tables = Vec::new();
        for e in std::fs::read_dir(&whole).unwrap() {
            let p = e.unwrap().path();
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            if stem == "events" || stem == "blocks" || p.extension().is_none_or(|x| x != format) {
                continue;
            }
            tables.push(stem.clone());
            for b in batches(&p) {
                let idx = u64s(&b, "record_index");
                // bionic's lines: an operation's START_NS, or thread_done's END_NS; 0 when
                // the line has no times.
                let field = if b.column_by_name("start").is_some() {
                    Some("start")
                } else if stem == "destroyThread" {
                    Some("end")
                } else {
                    None
                };
                let start = field.map(|f| {
                    uints(&b, f)
                        .into_iter()
                        .map(|t| (t != 0).then_some(t))
                        .collect::<Vec<_>>()
                });
                for (i, r) in idx.iter().enumerate() {
                    times.insert(r.unwrap(), start.as_ref().and_then(|s| s[i]));
                }
            }
        }
        let mut clock = None;
        let mut bucket_of: BTreeMap<u64, u64> = BTreeMap::new();
        for (r, time) in &times {
            if let Some(t) = time {
                clock = Some(clock.map_or(*t, |c: u64| c.max(*t)));
            }
            bucket_of.insert(*r, clock.map_or(0, |c| c - c % span));
        }
        let first = bucket_of.values().copied().find(|&b| b > 0).unwrap();
        let last = *bucket_of.values().last().unwrap();
        let bucket = |r: u64| match bucket_of[&r] {
            0 => first, // before the first time: the first bucket
            b => b,
        };
        assert!(tables.contains(&"alloc".to_string()), "{tables:?}");
        for table in tables
            .iter()
            .map(String::as_str)
            .chain(["events", "blocks"])
        {
            let key = match table {
                "blocks" => "free_record",
                "events" => "record",
                _ => "record_index",
            };
            let files = parts_named(&out.join(table), "time_bucket=");
            assert!(
                files.iter().all(|(k, _)| k % span == 0),
                "{format} {table}: {files:?}"
            );
            let rows = rows_of_parts(&files, key);
            for (k, b) in &rows {
                let want = match table {
                    "blocks" => match u64s(b, "free_time")[0] {
                        Some(t) => {
                            // free_time is the freeing record's clock where times only rise
                            let r = u64s(b, "free_record")[0].unwrap();
                            assert_eq!(t - t % span, *k, "{format} blocks at record {r}");
                            *k
                        }
                        None => last,
                    },
                    "events" => {
                        let r = u64s(b, "record_index")[0].unwrap();
                        bucket(r)
                    }
                    _ => bucket(u64s(b, "record_index")[0].unwrap()),
                };
                assert_eq!(*k, want, "{format} {table}");
            }
            let whole_rows = rows_of_file(&whole.join(format!("{table}.{format}")));
            let got: Vec<RecordBatch> = rows.into_iter().map(|r| r.1).collect();
            assert!(
                got == whole_rows,
                "{format} {table}: the rows of the whole table, in order"
            );
        }
        assert!(parts_named(&out.join("blocks"), "time_bucket=").len() > 2);
    }
}

#[test]
fn columnar_partitions_by_time_refuse_a_trace_without_a_clock_and_bad_spans() {
    let dir = util::tempdir();
    let root = util::root();
    let out = dir.path().join("out");
    let run = |trace: &str, by: &str| {
        let o = mtf(&[
            "export",
            "--to",
            "parquet",
            "--partition-by",
            by,
            root.join(trace).to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        (o.status.code(), text(&o.stderr))
    };
    for (trace, by, says) in [
        (
            "traces/malloclab.mtf",
            "time:1s",
            "its DTD declares no time",
        ),
        ("traces/android.mtf", "time:1s", "no record carries a time"),
        (
            "traces/heaptrack.mtf",
            "time:10",
            "every record has the same time",
        ),
        ("traces/et3.mtf", "time:1ms", "counts ticks"),
        (
            "traces/android-timed.mtf",
            "time:",
            "a span is a whole number above 0",
        ),
        (
            "traces/android-timed.mtf",
            "time:-1",
            "a span is a whole number above 0",
        ),
        (
            "traces/android-timed.mtf",
            "time:1h",
            "a span is a whole number above 0",
        ),
        (
            "traces/android-timed.mtf",
            "bogus:3",
            "or by time, `time:SPAN`",
        ),
    ] {
        let (code, err) = run(trace, by);
        assert_eq!(code, Some(2), "{trace} {by}: {err}");
        assert!(err.contains(says), "{trace} {by}: {err}");
        if by.starts_with("time:1") && !by.ends_with('h') {
            assert!(err.contains(trace.trim_start_matches("traces/")), "{err}");
        }
        assert!(!out.exists(), "{trace} {by}: nothing written");
    }
    // A clock of ticks takes a span in ticks.
    let (code, err) = run("traces/et3.mtf", "time:1000");
    assert_eq!(code, Some(0), "{err}");
}

/// A memory_replay text (bionic's format) of `ops` operations on three threads: allocations of
/// a few sizes, callocs, reallocs and frees in random order, the threads done at the end.
fn android_text(seed: u64, ops: u64) -> String {
    let mut r = util::Rng(seed);
    let mut out = String::new();
    let mut live: Vec<u64> = Vec::new();
    let mut next = 0xb400_0000u64;
    let threads = [202u64, 317, 4711];
    for _ in 0..ops {
        let tid = threads[r.below(3) as usize];
        let size = [16u64, 24, 32, 48, 64, 128, 1024][r.below(7) as usize];
        let k = r.below(100);
        if live.is_empty() || k < 50 {
            if k < 5 {
                out.push_str(&format!("{tid}: calloc 0x{next:x} 4 {}\n", size / 4));
            } else {
                out.push_str(&format!("{tid}: malloc 0x{next:x} {size}\n"));
            }
            live.push(next);
            next += size;
        } else if k < 60 {
            let i = r.below(live.len() as u64) as usize;
            let old = live.swap_remove(i);
            out.push_str(&format!("{tid}: realloc 0x{next:x} 0x{old:x} {size}\n"));
            live.push(next);
            next += size;
        } else {
            let i = r.below(live.len() as u64) as usize;
            let old = live.swap_remove(i);
            out.push_str(&format!("{tid}: free 0x{old:x}\n"));
        }
    }
    for tid in threads {
        out.push_str(&format!("{tid}: thread_done 0x0\n"));
    }
    out
}

/// A table's schema as engines see it: per column its name, type and nullability (the
/// key-value metadata, which names the DTD, is left out: a split trace's DTD is derived).
fn schema_of(path: &Path) -> Vec<(String, arrow_schema::DataType, bool)> {
    let f = File::open(path).unwrap();
    let schema = if path.extension().is_some_and(|e| e == "arrow") {
        arrow_ipc::reader::FileReader::try_new(f, None)
            .unwrap()
            .schema()
    } else {
        ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .schema()
            .clone()
    };
    schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
        .collect()
}

/// Every file of an export, by its path under the folder, with its schema.
fn schemas(dir: &Path) -> BTreeMap<String, Vec<(String, arrow_schema::DataType, bool)>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .is_some_and(|x| x == "parquet" || x == "arrow")
            {
                let name = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(name, schema_of(&p));
            }
        }
    }
    out
}

#[test]
fn columnar_schemas_are_the_same_for_every_encoding_of_a_trace() {
    let dir = util::tempdir();
    let src = dir.path().join("replay.txt");
    std::fs::write(&src, android_text(29, 6000)).unwrap();
    let mut traces = vec![util::import_into(dir.path(), &src, Some("android"))];
    traces.push(util::root().join("traces/et3.mtf"));
    traces.push(util::root().join("traces/heaptrack.mtf"));
    for t in &traces {
        let mut encodings = vec![(t.clone(), "original")];
        // Split streams pay on a small trace once compressed: `--split` compressed with zstd
        // keeps them (and the input is then a compressed trace).
        for (how, flags, ext) in [
            ("compact", vec![], "mtf"),
            ("split", vec!["--split", "--compress", "zstd"], "mtf.zst"),
            ("live", vec!["--live"], "mtf"),
        ] {
            let out = dir.path().join(format!(
                "{}.{how}.{ext}",
                t.file_stem().unwrap().to_string_lossy()
            ));
            let mut args = vec!["compact", t.to_str().unwrap(), "-o", out.to_str().unwrap()];
            args.extend(flags);
            let o = mtf(&args);
            assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
            let err = text(&o.stderr);
            // The synthetic trace is large enough for both encodings to pay: they are used.
            if t.starts_with(dir.path()) {
                assert!(
                    !err.contains("not kept") && !err.contains("no field pays"),
                    "{how}: {err}"
                );
            }
            encodings.push((out, how));
        }
        for format in ["parquet", "arrow"] {
            for by in [None, Some("records:1000")] {
                let mut first: Option<(&str, BTreeMap<_, _>)> = None;
                for (e, how) in &encodings {
                    let out = dir.path().join(format!(
                        "x-{}-{how}-{format}-{}",
                        t.file_stem().unwrap().to_string_lossy().replace('.', "_"),
                        by.is_some()
                    ));
                    let mut args = vec!["export", "--to", format, "--table", "all"];
                    if let Some(b) = by {
                        args.extend(["--partition-by", b]);
                    }
                    args.extend([e.to_str().unwrap(), "-o", out.to_str().unwrap()]);
                    let o = mtf(&args);
                    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
                    let s = schemas(&out);
                    assert!(s.keys().any(|k| k.starts_with("blocks")), "{s:?}");
                    match &first {
                        None => first = Some((how, s)),
                        Some((h0, s0)) => {
                            assert_eq!(
                                s0.keys().collect::<Vec<_>>(),
                                s.keys().collect::<Vec<_>>(),
                                "{t:?} {format}: the files of {h0} and {how}"
                            );
                            for (k, v) in s0 {
                                assert_eq!(v, &s[k], "{t:?} {format} {k}: {h0} and {how}");
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn columnar_partitions_by_time_keep_a_record_whose_time_goes_back_in_the_clock_s_bucket() {
    // memory_replay lines with START_NS END_NS; the third goes back (another thread's line
    // written late) and the fifth has none (the latest time: docs/format.md §14.4).
    let replay = "1: malloc 0xa000 16 1000 1001\n\
                1: malloc 0xb000 16 1150 1151\n\
                2: malloc 0xc000 16 1090 1091\n\
                1: free 0xa000 1210 1211\n\
                2: malloc 0xd000 16\n\
                1: free 0xb000 1305 1306\n";
    // Independently: each line's bucket of 100 ns is that of the largest START so far.
    let mut clock = 0u64;
    let mut want: BTreeMap<u64, u64> = BTreeMap::new(); // address -> bucket of its malloc line
    for line in replay.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let Some(t) = w.get(if w[1] == "malloc" { 4 } else { 3 }) {
            clock = clock.max(t.parse().unwrap());
        }
        if w[1] == "malloc" {
            want.insert(
                u64::from_str_radix(&w[2][2..], 16).unwrap(),
                clock / 100 * 100,
            );
        }
    }
    assert_eq!(
        want[&0xc000], 1100,
        "the line going back stays in the clock's bucket"
    );
    let dir = util::tempdir();
    let src = dir.path().join("back.txt");
    std::fs::write(&src, replay).unwrap();
    let t = util::import_into(dir.path(), &src, Some("android"));
    let out = dir.path().join("parts");
    let o = mtf(&[
        "export",
        "--to",
        "parquet",
        "--table",
        "all",
        "--partition-by",
        "time:100",
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut got = BTreeMap::new();
    for (k, file) in parts_named(&out.join("alloc"), "time_bucket=") {
        for b in batches(&file) {
            for a in uints(&b, "address") {
                got.insert(a, k);
            }
        }
    }
    assert_eq!(got, want);
    // `events.time` is the record's own time; its bucket the clock's.
    let mut events = Vec::new();
    for (k, file) in parts_named(&out.join("events"), "time_bucket=") {
        for b in batches(&file) {
            let (ids, times, kinds) = (u64s(&b, "id"), u64s(&b, "time"), strs(&b, "kind"));
            for i in 0..b.num_rows() {
                events.push((k, ids[i].unwrap(), kinds[i].clone(), times[i]));
            }
        }
    }
    assert!(
        events.contains(&(1100, 0xc000, Some("alloc".into()), Some(1090))),
        "{events:?}"
    );
    // Blocks by their free's bucket; the two alive at the end in the last bucket.
    let mut blocks = Vec::new();
    for (k, file) in parts_named(&out.join("blocks"), "time_bucket=") {
        for b in batches(&file) {
            blocks.extend(u64s(&b, "id").into_iter().map(|id| (id.unwrap(), k)));
        }
    }
    blocks.sort();
    assert_eq!(
        blocks,
        [
            (0xa000, 1200),
            (0xb000, 1300),
            (0xc000, 1300),
            (0xd000, 1300)
        ]
    );
}
