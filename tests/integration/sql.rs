//! `mtf sql` (feature `sql`): the tables read in place by DataFusion, set against independent
//! readings — the record count of tests/independent/mtfread.py (written from docs/format.md
//! alone), the peak live bytes of bionic's memory_replay and of malloc-lab's mdriver over the
//! original text — and against `mtf stats`; the command line's inputs, formats and errors.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bionic::bionic;
use crate::malloclab;
use crate::util::{self, mtf, mtf_stdin, text};

/// The peak live bytes per namespace in DataFusion's dialect: docs/query.md's query (DuckDB's
/// `HUGEINT` is `DECIMAL(38, 0)` here, its `QUALIFY` a filter over `row_number()`).
pub(crate) const PEAK: &str = "WITH deltas AS (
        SELECT namespace, alloc_record AS record, CAST(size AS DECIMAL(38,0)) AS delta
        FROM blocks WHERE size IS NOT NULL
        UNION ALL
        SELECT namespace, free_record, -CAST(size AS DECIMAL(38,0))
        FROM blocks WHERE size IS NOT NULL AND free_record IS NOT NULL),
     live AS (
        SELECT namespace, record,
               sum(sum(delta)) OVER (PARTITION BY namespace ORDER BY record) AS bytes
        FROM deltas GROUP BY namespace, record),
     ranked AS (
        SELECT namespace, bytes, record,
               row_number() OVER (PARTITION BY namespace ORDER BY bytes DESC, record) AS n
        FROM live)
SELECT namespace, CAST(bytes AS VARCHAR) AS peak_live_bytes, record AS at_data_record
FROM ranked WHERE n = 1 ORDER BY namespace";

/// `mtf sql -f json QUERY TRACES…`: the rows, as JSON objects.
fn sql(query: &str, traces: &[&Path]) -> Vec<Value> {
    let mut args = vec!["sql", "-f", "json", query];
    args.extend(traces.iter().map(|t| t.to_str().unwrap()));
    let o = mtf(&args);
    assert!(
        o.status.success(),
        "{query} over {traces:?}: {}",
        text(&o.stderr)
    );
    lines(&o.stdout)
}

fn lines(out: &[u8]) -> Vec<Value> {
    text(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// A number of a JSON row (a number, or a decimal's text).
fn n(v: &Value) -> u128 {
    match v {
        Value::String(s) => s.parse().unwrap_or_else(|e| panic!("{s}: {e}")),
        v => u128::from(v.as_u64().unwrap_or_else(|| panic!("{v}"))),
    }
}

/// The one number a query returns.
fn scalar(query: &str, trace: &Path) -> u128 {
    let rows = sql(query, &[trace]);
    assert_eq!(rows.len(), 1, "{query}: {rows:?}");
    let row = rows[0].as_object().unwrap();
    assert_eq!(row.len(), 1, "{query}: {rows:?}");
    n(row.values().next().unwrap())
}

fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(util::root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    v.sort();
    assert!(v.len() >= 13, "{v:?}");
    v
}

/// The records of a trace as the independent reader counts them: the lines of its dump after
/// the header line (it checks the count against the header's).
fn independent_count(trace: &Path) -> u64 {
    let o = std::process::Command::new("python3")
        .arg(util::root().join("tests/independent/mtfread.py"))
        .arg(trace)
        .output()
        .expect("python3 runs tests/independent/mtfread.py");
    assert!(
        o.status.success(),
        "{}: {}",
        trace.display(),
        text(&o.stderr)
    );
    let out = text(&o.stdout);
    let mut lines = out.lines();
    assert!(lines.next().is_some_and(|l| l.starts_with("%mtf")));
    lines.count() as u64
}

#[test]
fn sql_count_of_records_is_the_independent_readers_count_for_every_shipped_trace() {
    for t in shipped() {
        let want = independent_count(&t);
        assert!(want > 0, "{}", t.display());
        let got = scalar("SELECT count(*) AS n FROM records", &t);
        assert_eq!(got, u128::from(want), "{}", t.display());
        // The per-type tables hold every record but `section`/`metadata` records and the
        // elements of tables: their counts add up to the records of those types in `records`.
        let per_type = sql(
            "SELECT record, count(*) AS n FROM records GROUP BY record ORDER BY record",
            &[&t],
        );
        assert!(!per_type.is_empty());
    }
}

/// `mtf stats -f json`'s (peak bytes, its data record, allocations) per namespace.
fn stats_peaks(trace: &Path) -> Vec<(String, u128, u64, u64)> {
    let o = mtf(&["stats", "-f", "json", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut v: Vec<_> = j["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ns| {
            (
                ns["name"].as_str().unwrap().to_string(),
                n(&ns["peak"]["bytes"]),
                ns["peak"]["at"]["data_record"].as_u64().unwrap_or(0),
                ns["allocations"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The peak per namespace from SQL: (namespace, bytes, data record).
fn sql_peaks(trace: &Path) -> Vec<(String, u128, u64)> {
    sql(PEAK, &[trace])
        .iter()
        .map(|r| {
            (
                r["namespace"].as_str().unwrap().to_string(),
                n(&r["peak_live_bytes"]),
                r["at_data_record"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The SQL peak and allocations of every namespace of `trace` equal `mtf stats`'s.
fn peaks_agree(trace: &Path) -> Vec<(String, u128, u64, u64)> {
    let want = stats_peaks(trace);
    let got = sql_peaks(trace);
    let allocs = sql(
        "SELECT namespace, count(*) AS n FROM blocks GROUP BY namespace ORDER BY namespace",
        &[trace],
    );
    for (ns, peak, at, count) in &want {
        let what = format!("{} {ns}", trace.display());
        let a = allocs
            .iter()
            .find(|r| r["namespace"] == ns.as_str())
            .map_or(0, |r| n(&r["n"]));
        assert_eq!(a, u128::from(*count), "{what}: allocations");
        // A namespace without byte counts (threads, heaps) has no sizes: no deltas, no peak.
        if *count == 0 || *peak == 0 {
            continue;
        }
        let (_, p, r) = got
            .iter()
            .find(|g| g.0 == *ns)
            .unwrap_or_else(|| panic!("{what}: no SQL peak in {got:?}"));
        assert_eq!(p, peak, "{what}: peak");
        assert_eq!(r, at, "{what}: the peak's data record");
    }
    want
}

#[test]
fn sql_peak_over_blocks_is_the_stats_peak_of_every_shipped_trace() {
    let mut checked = 0;
    for t in shipped() {
        // A trace whose DTD declares no allocations has no `blocks`.
        let o = mtf(&["sql", "SHOW TABLES", t.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        if !text(&o.stdout).contains(" blocks ") {
            continue;
        }
        peaks_agree(&t);
        checked += 1;
    }
    assert!(checked >= 9, "{checked} traces with blocks");
}

#[test]
fn sql_peak_is_bionics_on_android_samples_and_mdrivers_on_malloclab_samples() {
    let dir = util::tempdir();
    for name in [
        "android-systemui.txt",
        "android-failed-realloc.txt",
        "android-timed.txt",
    ] {
        let src = util::root().join("tests/data/import/alloc").join(name);
        let (peak, _, allocs, events) = bionic(&std::fs::read_to_string(&src).unwrap());
        let t = util::import_into(dir.path(), &src, Some("android"));
        let got = sql_peaks(&t);
        assert_eq!(got.len(), 1, "{name}: {got:?}");
        assert_eq!(got[0].1, peak, "{name}: peak");
        assert_eq!(
            scalar("SELECT count(*) FROM blocks", &t),
            u128::from(allocs)
        );
        assert_eq!(
            scalar("SELECT count(*) FROM events", &t),
            u128::from(events)
        );
        peaks_agree(&t);
    }
    for (name, header, _) in malloclab::FIXTURES {
        let path = malloclab::fixture(name);
        let want = malloclab::mdriver(&std::fs::read_to_string(&path).unwrap(), header);
        let t = util::import_into(dir.path(), &path, Some("malloclab"));
        let got = sql_peaks(&t);
        assert_eq!(got[0].1, u128::from(want.peak), "{name}: peak");
        assert_eq!(
            scalar("SELECT count(*) FROM blocks", &t),
            u128::from(want.allocations)
        );
        assert_eq!(
            scalar("SELECT count(*) FROM blocks WHERE free_record IS NULL", &t),
            u128::from(want.leaked_blocks)
        );
        peaks_agree(&t);
    }
}

#[test]
fn sql_per_type_tables_projection_and_record_type_filters() {
    let t = util::root().join("traces/android.mtf");
    let counts = sql(
        "SELECT record, count(*) AS n FROM records GROUP BY record ORDER BY record",
        &[&t],
    );
    let mut checked = 0;
    for row in &counts {
        let record = row["record"].as_str().unwrap();
        if matches!(record, "section" | "metadata") {
            continue;
        }
        let q = format!("SELECT count(*) FROM \"{record}\"");
        assert_eq!(scalar(&q, &t), n(&row["n"]), "{record}");
        // The same count with a WHERE on the record type.
        let q = format!("SELECT count(*) FROM records WHERE record = '{record}'");
        assert_eq!(scalar(&q, &t), n(&row["n"]), "{record}");
        checked += 1;
    }
    assert!(checked >= 3, "{counts:?}");
    // One column of a per-type table: the sizes of the allocations, in trace order, are those of
    // the `alloc` records `mtf dump` prints.
    let sizes: Vec<u128> = sql("SELECT size FROM alloc ORDER BY record_index", &[&t])
        .iter()
        .map(|r| {
            assert_eq!(r.as_object().unwrap().len(), 1);
            n(&r["size"])
        })
        .collect();
    let o = mtf(&["dump", t.to_str().unwrap()]);
    let dumped: Vec<u128> = text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("alloc "))
        .map(|l| {
            let v = l.split(" size=").nth(1).unwrap();
            v.split(' ').next().unwrap().parse().unwrap()
        })
        .collect();
    assert!(!dumped.is_empty());
    assert_eq!(sizes, dumped);
    // A join of a records table with `events` on the record's index.
    let joined = scalar(
        "SELECT count(*) FROM alloc a JOIN events e ON a.record_index = e.record_index \
         WHERE e.kind = 'alloc'",
        &t,
    );
    assert_eq!(joined, dumped.len() as u128);
}

#[test]
fn sql_over_two_traces_names_the_second_t2() {
    let a = util::root().join("traces/android.mtf");
    let b = util::root().join("traces/malloclab.mtf");
    let rows = sql(
        "SELECT 'plain' AS t, count(*) AS n FROM records UNION ALL \
         SELECT 't1', count(*) FROM t1.records UNION ALL \
         SELECT 't2', count(*) FROM t2.records ORDER BY t",
        &[&a, &b],
    );
    let get = |k: &str| n(&rows.iter().find(|r| r["t"] == k).unwrap()["n"]);
    assert_eq!(get("plain"), u128::from(independent_count(&a)));
    assert_eq!(get("t1"), get("plain"));
    assert_eq!(get("t2"), u128::from(independent_count(&b)));
}

#[test]
fn sql_reads_standard_input_and_compressed_traces() {
    let t = util::root().join("traces/android.mtf");
    let bytes = std::fs::read(&t).unwrap();
    let want = independent_count(&t);
    let o = mtf_stdin(
        &["sql", "-f", "csv", "SELECT count(*) AS n FROM records", "-"],
        &bytes,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), format!("n\n{want}\n"));
    let dir = util::tempdir();
    let z = dir.path().join("android.mtf.zst");
    std::fs::write(&z, util::compress("zst", &bytes)).unwrap();
    // The DTD is not beside the copy: the header's name is found among the built-in DTDs.
    assert_eq!(scalar("SELECT count(*) FROM records", &z), u128::from(want));
    assert_eq!(sql_peaks(&z), sql_peaks(&t));
}

#[test]
fn sql_errors_name_the_query_the_tables_and_the_trace() {
    let t = util::root().join("traces/android.mtf");
    let ts = t.to_str().unwrap();
    // Bad SQL: status 2, DataFusion's message with the query.
    let o = mtf(&["sql", "SELEC count(*) FROM records", ts]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("mtf::sql::plan"), "{e}");
    assert!(e.contains("SELEC count(*) FROM records"), "{e}");
    assert!(o.stdout.is_empty());
    // An unknown table: the tables there are.
    let o = mtf(&["sql", "SELECT * FROM nosuch", ts]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("nosuch"), "{e}");
    assert!(e.contains("records, events, blocks"), "{e}");
    // A missing trace: named.
    let o = mtf(&["sql", "SELECT 1", "/nonexistent/x.mtf"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("/nonexistent/x.mtf"),
        "{}",
        text(&o.stderr)
    );
    // No trace: a usage error.
    let o = mtf(&["sql", "SELECT 1"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn sql_formats_table_csv_json_and_output_file() {
    let t = util::root().join("traces/malloclab.mtf");
    let ts = t.to_str().unwrap();
    let q =
        "SELECT namespace, count(*) AS blocks, sum(size) AS bytes FROM blocks GROUP BY namespace";
    let o = mtf(&["sql", q, ts]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let table = text(&o.stdout);
    let mut lines = table.lines();
    let head = lines.next().unwrap();
    assert!(head.starts_with("namespace  blocks"), "{table}");
    assert!(lines.next().unwrap().starts_with("---------"), "{table}");
    // Numbers right-aligned under their header: the line ends where the header's `bytes` ends.
    let row = lines.next().unwrap();
    assert_eq!(row.len(), head.len(), "{table}");
    assert_eq!(lines.next(), Some("(1 row)"));
    let o = mtf(&["sql", "-f", "csv", q, ts]);
    let csv = text(&o.stdout);
    assert!(csv.starts_with("namespace,blocks,bytes\nblock,"), "{csv}");
    let o = mtf(&["sql", "-f", "json", q, ts]);
    let rows = lines_of(&o.stdout);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["namespace"], "block");
    assert!(rows[0]["blocks"].is_u64());
    let dir = util::tempdir();
    let out = dir.path().join("r.csv");
    let o = mtf(&["sql", "-f", "csv", q, ts, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), csv);
    // An empty result keeps its header.
    let o = mtf(&["sql", "-f", "csv", "SELECT id FROM blocks WHERE id < 0", ts]);
    assert_eq!(text(&o.stdout), "id\n");
}

fn lines_of(out: &[u8]) -> Vec<Value> {
    lines(out)
}

#[test]
fn sql_records_tables_are_cut_at_the_seek_index_and_give_the_same_rows() {
    let dir = util::tempdir();
    let t = dir.path().join("android.mtf");
    std::fs::copy(util::root().join("traces/android.mtf"), &t).unwrap();
    std::fs::copy(
        util::root().join("dtds/hatf-android.dtd"),
        dir.path().join("hatf-android.dtd"),
    )
    .unwrap();
    let q = "SELECT record_index, byte_offset, record FROM records ORDER BY record_index";
    let before = sql(q, &[&t]);
    let sizes = sql(
        "SELECT record_index, size FROM alloc ORDER BY record_index",
        &[&t],
    );
    let o = mtf(&["index", "--every", "10", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Four parts at most (DataFusion's target partitions, set from the environment: the
    // machine's cores otherwise), at 4 of the 10 checkpoints.
    let plan = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args(["sql", "-f", "csv", "EXPLAIN SELECT size FROM alloc"])
        .arg(&t)
        .env("DATAFUSION_EXECUTION_TARGET_PARTITIONS", "4")
        .output()
        .unwrap();
    let plan = text(&plan.stdout);
    assert!(plan.contains(", 4 part(s)"), "{plan}");
    assert_eq!(sql(q, &[&t]), before);
    assert_eq!(
        sql(
            "SELECT record_index, size FROM alloc ORDER BY record_index",
            &[&t]
        ),
        sizes
    );
}

/// A malloc-lab trace of 600 operations imported into `dir`: allocations, reallocations that
/// grow and shrink, frees, ids reused after their free.
fn generated_rep(dir: &Path) -> PathBuf {
    let mut rep = String::from("0\n40\n600\n1\n");
    for k in 0..600u64 {
        let id = (k * 7) % 40;
        rep += &match k % 5 {
            0 | 1 => format!("a {id} {}\n", 8 + k % 97),
            2 => format!("r {id} {}\n", 16 + k % 300),
            _ => format!("f {id}\n"),
        };
    }
    let src = dir.join("gen.rep");
    std::fs::write(&src, rep).unwrap();
    util::import_into(dir, &src, None)
}

/// The plan of a scan of `table` of `t` with three target partitions (its `N part(s)`).
fn plan_of(table: &str, t: &Path) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args([
            "sql",
            "-f",
            "csv",
            &format!("EXPLAIN SELECT size FROM {table}"),
        ])
        .arg(t)
        .env("DATAFUSION_EXECUTION_TARGET_PARTITIONS", "3")
        .output()
        .unwrap();
    text(&o.stdout)
}

#[test]
fn sql_events_are_cut_at_checkpoints_with_a_state_and_give_the_same_rows() {
    let dir = util::tempdir();
    let made = generated_rep(dir.path());
    let android = dir.path().join("android.mtf");
    std::fs::copy(util::root().join("traces/android.mtf"), &android).unwrap();
    std::fs::copy(
        util::root().join("dtds/hatf-android.dtd"),
        dir.path().join("hatf-android.dtd"),
    )
    .unwrap();
    for t in [made, android] {
        let q = "SELECT * FROM events ORDER BY record, kind, namespace, key, id, size, old_id";
        let before = sql(q, &[&t]);
        assert!(before.len() > 50, "{}: {}", t.display(), before.len());
        let explain = |t: &Path| plan_of("events", t);
        assert!(explain(&t).contains(", 1 part(s)"), "{}", explain(&t));
        // An index with analysis states: three parts, each after the first resumed from one.
        let o = mtf(&["index", "--every", "10", t.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(explain(&t).contains(", 3 part(s)"), "{}", explain(&t));
        assert_eq!(sql(q, &[&t]), before, "{}", t.display());
        // Without states (budget 0), `events` is one part again, read from the start.
        let o = mtf(&[
            "index",
            "--every",
            "10",
            "--state-budget",
            "0",
            t.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(explain(&t).contains(", 1 part(s)"), "{}", explain(&t));
        assert_eq!(sql(q, &[&t]), before, "{}", t.display());
    }
}

#[test]
fn sql_a_filter_on_the_record_of_events_reads_only_that_range() {
    let dir = util::tempdir();
    let mut rep = String::from("0\n50\n2000\n1\n");
    for k in 0..2000u64 {
        let id = (k * 13) % 50;
        rep += &match k % 4 {
            0 | 1 => format!("a {id} {}\n", 8 + k % 89),
            2 => format!("r {id} {}\n", 24 + k % 200),
            _ => format!("f {id}\n"),
        };
    }
    let src = dir.path().join("gen.rep");
    std::fs::write(&src, rep).unwrap();
    let t = util::import_into(dir.path(), &src, None);
    let o = mtf(&["index", "--every", "100", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let all = sql(
        "SELECT * FROM events ORDER BY record, kind, id, size, old_id",
        &[&t],
    );
    let record = |v: &Value| v["record"].as_u64().unwrap();
    for (filter, keep) in [
        (
            "record >= 1000 AND record < 1010",
            &(|r: u64| (1000..1010).contains(&r)) as &dyn Fn(u64) -> bool,
        ),
        ("record BETWEEN 1500 AND 1502", &|r| {
            (1500..=1502).contains(&r)
        }),
        ("1990 < record", &|r| r > 1990),
        ("record = 7", &|r| r == 7),
        ("record <= 3 OR record = 1999", &|r| r <= 3 || r == 1999),
        ("record < 0", &|_| false),
    ] {
        let q =
            format!("SELECT * FROM events WHERE {filter} ORDER BY record, kind, id, size, old_id");
        let want: Vec<Value> = all.iter().filter(|v| keep(record(v))).cloned().collect();
        assert_eq!(sql(&q, &[&t]), want, "{filter}");
    }
    // The plan says which data records the scan reads, from the checkpoint before them.
    let o = mtf(&[
        "sql",
        "-f",
        "csv",
        "EXPLAIN SELECT * FROM events WHERE record >= 1000 AND record < 1010",
        t.to_str().unwrap(),
    ]);
    let plan = text(&o.stdout);
    assert!(plan.contains("data records 1000..1010"), "{plan}");
}

#[test]
fn sql_blocks_are_cut_at_checkpoints_with_births_and_give_the_same_rows() {
    let dir = util::tempdir();
    let made = generated_rep(dir.path());
    let heaptrack = dir.path().join("heaptrack.mtf");
    std::fs::copy(util::root().join("traces/heaptrack.mtf"), &heaptrack).unwrap();
    std::fs::copy(
        util::root().join("dtds/hatf-heaptrack.dtd"),
        dir.path().join("hatf-heaptrack.dtd"),
    )
    .unwrap();
    for t in [made, heaptrack] {
        let q = "SELECT * FROM blocks ORDER BY namespace, alloc_record, id, free_record, size";
        let before = sql(q, &[&t]);
        let explain = |t: &Path| plan_of("blocks", t);
        // An index with states but no births: one part, from the start.
        let o = mtf(&["index", "--every", "10", t.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(explain(&t).contains(", 1 part(s)"), "{}", explain(&t));
        // With the births: parts, each after the first resumed from a state and its births.
        let o = mtf(&["index", "--every", "3", "--births", t.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            text(&o.stdout).contains("births of the live blocks"),
            "{}",
            text(&o.stdout)
        );
        let births = format!("{}.idx.births", t.display());
        assert!(Path::new(&births).is_file());
        assert!(explain(&t).contains(", 3 part(s)"), "{}", explain(&t));
        assert_eq!(sql(q, &[&t]), before, "{}", t.display());
        // An index made again without --births removes the births left from before.
        let o = mtf(&["index", "--every", "3", t.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(!Path::new(&births).exists());
        assert!(explain(&t).contains(", 1 part(s)"), "{}", explain(&t));
    }
}
