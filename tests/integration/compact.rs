//! The compact encoder (metatf::compact, `mtf compact`): every sample trace and random traces of
//! random DTDs re-encode to traces that decode to the same values, record for record.

use std::path::Path;

use metatf::compact::{compact, verify, CompactOptions, Measure};
use metatf::container::{ByteOrder, Class, Trace};
use metatf::decode::Reader;
use metatf::dtd::Schema;
use metatf::encode::{In, TraceWriter};
use metatf::MetaProperty;
use proptest::prelude::*;

use crate::util::Rng;

fn reencode(
    schema: &Schema,
    input: &Reader<'_>,
    class: Class,
    order: ByteOrder,
    opts: CompactOptions,
) -> Vec<u8> {
    let mut w = TraceWriter::in_memory(schema, class, order, "x.dtd");
    compact(input, &mut w, &opts).unwrap_or_else(|e| panic!("{e}"));
    w.finish_to_vec().unwrap_or_else(|e| panic!("{e}"))
}

/// Re-encode with every varying field in a stream (a derived DTD), and check the values.
fn check_split(
    schema: &Schema,
    dtd_text: &str,
    original: &[u8],
    class: Class,
    order: ByteOrder,
    opts: CompactOptions,
) {
    let a = Trace::from_bytes(original.to_vec()).unwrap();
    let ra = Reader::new(&a, schema);
    let Some(plan) = metatf::compact::plan_split(&ra, dtd_text, &opts).unwrap() else {
        return;
    };
    let derived = metatf::dtd::parse_str("derived.dtd", &plan.dtd_text)
        .unwrap_or_else(|e| panic!("{}\n{}", plan.dtd_text, metatf::dtd::render_plain(&e)))
        .schema;
    let mut w = TraceWriter::in_memory(&derived, class, order, "derived.dtd");
    metatf::compact::compact_split(&ra, &mut w, &opts, &plan, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let bytes = w.finish_to_vec().unwrap_or_else(|e| panic!("{e}"));
    let b = Trace::from_bytes(bytes).unwrap();
    let rb = Reader::new(&b, &derived);
    verify(&ra, &rb).unwrap_or_else(|e| panic!("{e}"));
}

fn check_equal(schema: &Schema, original: &[u8], encoded: Vec<u8>) -> usize {
    let a = Trace::from_bytes(original.to_vec()).unwrap();
    let b = Trace::from_bytes(encoded.clone()).unwrap();
    let ra = Reader::new(&a, schema);
    let rb = Reader::new(&b, schema);
    verify(&ra, &rb).unwrap_or_else(|e| panic!("{e}"));
    encoded.len()
}

#[test]
fn every_sample_trace_reencodes_to_the_same_values() {
    let samples = [
        ("traces/hatf-le32.mtf", "dtds/hatf10.dtd"),
        ("traces/hatf-be64.mtf", "dtds/hatf10.dtd"),
        ("traces/hatf-split-le64.mtf", "dtds/hatf10-split.dtd"),
        ("traces/et3.mtf", "dtds/et3.dtd"),
        ("traces/et_merlin.mtf", "dtds/et_merlin.dtd"),
        ("traces/jvm_trace.mtf", "dtds/jvm_trace.dtd"),
        ("traces/tptp.mtf", "dtds/tptp.dtd"),
    ];
    for (trace, dtd) in samples {
        let root = crate::util::root();
        let o = metatf::OpenOptions::new()
            .dtd(root.join(dtd))
            .open(root.join(trace))
            .unwrap();
        let h = o.trace().header();
        for measure in [Measure::Bytes, Measure::Compressed] {
            for window in [1, 3, 4096] {
                for live in [false, true] {
                    let bytes = reencode(
                        o.schema(),
                        &o.reader(),
                        h.class,
                        h.byte_order,
                        CompactOptions {
                            window,
                            measure,
                            live,
                            force_live: live && window == 3,
                        },
                    );
                    if !live {
                        assert_eq!(bytes[8], 0, "{trace}: a 1.0 trace unless asked");
                    }
                    check_equal(o.schema(), o.trace().bytes(), bytes);
                }
            }
        }
        // Streams (`--split`), with and without live sets.
        let text = std::fs::read_to_string(root.join(dtd)).unwrap();
        for live in [false, true] {
            let opts = CompactOptions {
                measure: Measure::Compressed,
                live,
                ..CompactOptions::default()
            };
            check_split(
                o.schema(),
                &text,
                o.trace().bytes(),
                h.class,
                h.byte_order,
                opts,
            );
        }
    }
}

#[test]
fn a_regular_trace_shrinks() {
    let dtd = std::fs::read_to_string(crate::util::root().join("dtds/hatf10.dtd")).unwrap();
    let schema = metatf::dtd::parse_str("hatf10.dtd", &dtd).unwrap().schema;
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "hatf10.dtd");
    w.section_named("heap").unwrap();
    let mut x = 7u64;
    for i in 0..5000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        w.write("alloc")
            .int("size", 16 + (x >> 60))
            .int("address", 0x1000_0000 + 64 * i)
            .bytes("vfield.data", "")
            .done()
            .unwrap();
    }
    let original = w.finish_to_vec().unwrap();
    let t = Trace::from_bytes(original.clone()).unwrap();
    let r = Reader::new(&t, &schema);
    let encoded = reencode(
        &schema,
        &r,
        Class::Bits64,
        ByteOrder::Little,
        CompactOptions {
            live: false,
            ..CompactOptions::default()
        },
    );
    let n = check_equal(&schema, &original, encoded);
    // tag + one byte of size + a stride address + the empty vfield: 3 bytes a record.
    assert!(n < 3 * 5000 + 400, "{n} bytes for 5000 records");
    assert!(n * 3 < original.len(), "{n} vs {}", original.len());
}

#[test]
fn mtf_compact_writes_compressed_traces_that_every_subcommand_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mtf = env!("CARGO_BIN_EXE_mtf");
    for (c, ext) in [("none", "mtf"), ("zstd", "mtf.zst"), ("xz", "mtf.xz")] {
        let out = dir.path().join(format!("t.{ext}"));
        let s = std::process::Command::new(mtf)
            .current_dir(crate::util::root())
            .args([
                "compact",
                "traces/hatf-le32.mtf",
                "--verify",
                "--compress",
                c,
                "-o",
            ])
            .arg(&out)
            .args(["--dtd", "dtds/hatf10.dtd"])
            .output()
            .unwrap();
        assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
        assert!(String::from_utf8_lossy(&s.stderr).contains("verified: 20 records"));
        let check = std::process::Command::new(mtf)
            .current_dir(crate::util::root())
            .args(["check", "--dtd", "dtds/hatf10.dtd"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stdout)
        );
    }
    let report = std::process::Command::new(mtf)
        .current_dir(crate::util::root())
        .args([
            "size-report",
            "traces/hatf-le32.mtf",
            "--dtd",
            "dtds/hatf10.dtd",
        ])
        .output()
        .unwrap();
    assert!(report.status.success());
    let text = String::from_utf8_lossy(&report.stdout);
    for row in [
        "simple binary",
        "ASCII",
        "naive Meta-TF",
        "mtf compact",
        "split stream",
        "split address",
    ] {
        assert!(text.contains(row), "{text}");
    }
    assert!(Path::new(mtf).exists());
}

/// Checks the rows of the input and of its text form (`mtf dump --data-only --no-header`) in
/// `mtf size-report TRACE` against gzip -6, zstd -3 and xz -1 of those bytes compressed in
/// memory (with `--best`: gzip -9, zstd -19 and xz -9, 64 MiB dictionary), to the printed
/// precision.
#[cfg(feature = "compression")]
fn check_size_report(trace: &str) {
    check_size_report_at(trace, false);
}

#[cfg(feature = "compression")]
fn check_size_report_at(trace: &str, best: bool) {
    use std::io::Write;
    let (gzip, zstd, xz) = if best { (9, 19, 9) } else { (6, 3, 1) };
    let mut args = vec!["size-report", trace];
    if best {
        args.push("--best");
    }
    let report = crate::util::mtf(&args);
    let text = String::from_utf8_lossy(&report.stdout).into_owned();
    assert!(report.status.success(), "{trace}: {text}");
    let heading = text.lines().nth(1).unwrap_or_default();
    for column in [
        format!(" gzip -{gzip} "),
        format!(" zstd -{zstd} "),
        format!(" xz -{xz}"),
    ] {
        assert!(heading.contains(&column), "{trace}: {column} in {text}");
    }
    let data: f64 = text
        .split(": ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("{trace}: no record count in {text}"))
        .max(1) as f64;
    let dump = crate::util::mtf(&["dump", "--data-only", "--no-header", trace]);
    assert!(dump.status.success(), "{trace}");
    let input = std::fs::read(crate::util::root().join(trace)).unwrap();
    for (row, bytes) in [("naive Meta-TF", input), ("ASCII", dump.stdout)] {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(gzip));
        gz.write_all(&bytes).unwrap();
        let gz = gz.finish().unwrap().len();
        let zst = zstd::encode_all(&bytes[..], zstd).unwrap().len();
        let mut x = xz2::write::XzEncoder::new(Vec::new(), xz);
        x.write_all(&bytes).unwrap();
        let x = x.finish().unwrap().len();
        let want = [bytes.len(), gz, zst, x]
            .map(|n| format!("{:>9.3}", n as f64 / data))
            .join(" ");
        let line = text
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("{trace}: no row {row} in {text}"));
        assert!(line.ends_with(&want), "{trace}: {line}\nwanted {want}");
    }
}

/// `mtf size-report` streams each form through the compressors instead of compressing it as
/// one buffer, and gives xz a dictionary no longer than the form (at least 4 KiB): the figures
/// are still those of compressing each form whole, on every sample trace and on a trace of
/// 8,000 records whose forms are longer than the smallest dictionary; at the usual levels and,
/// with `--best`, at the top ones.
#[cfg(feature = "compression")]
#[test]
fn size_report_rows_equal_compressing_the_whole_form() {
    let mut traces: Vec<String> = std::fs::read_dir(crate::util::root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".mtf"))
        .map(|n| format!("traces/{n}"))
        .collect();
    traces.sort();
    assert!(traces.len() >= 10, "{traces:?}");
    for t in &traces {
        check_size_report(t);
    }
    check_size_report_at("traces/android.mtf", true);
    let schema = crate::util::schema("dtds/hatf10.dtd");
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "hatf10.dtd");
    w.section_named("heap").unwrap();
    let mut rng = Rng(11);
    for _ in 0..4_000u64 {
        let address = 0x1000_0000 + 16 * rng.below(1 << 20);
        w.write("alloc")
            .int("size", 8 * (1 + rng.below(64)))
            .int("address", address)
            .bytes("vfield.data", "")
            .done()
            .unwrap();
        w.write("free")
            .int("address", address)
            .bytes("vfield.data", "")
            .done()
            .unwrap();
    }
    let dir = crate::util::tempdir();
    let path = dir.path().join("big.mtf");
    std::fs::write(&path, w.finish_to_vec().unwrap()).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 40_000);
    check_size_report(path.to_str().unwrap());
    check_size_report_at(path.to_str().unwrap(), true);
}

/// A field of the random DTD and how to give it values.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `none` of this width, maybe signed.
    Plain(u8, bool),
    /// `default` or `stride`: the writer derives the value.
    Auto,
    /// `delta v` of this width: values near the previous one.
    Delta(u8, u64),
    /// A repeat of one-byte `none` items.
    Repeat,
    /// A vfield.
    Bytes,
    /// `sectionStride` into the table.
    Stride,
}

fn random_schema(r: &mut Rng) -> (String, Vec<Vec<Kind>>) {
    let mut text = String::from("tag.width = 1;\nsection main 1 {\n");
    let mut kinds = Vec::new();
    for i in 0..1 + r.below(3) {
        let mut fields = vec!["tag".to_string()];
        let mut body = format!("tag.value = {};", 4 + i);
        let mut ks = Vec::new();
        for j in 0..1 + r.below(5) {
            let w = 1 + r.below(8) as u8;
            let k = match r.below(8) {
                0 | 1 => Kind::Plain(w, r.below(3) == 0),
                2 => Kind::Auto,
                3 => Kind::Delta(w, r.below(1000)),
                4 => Kind::Repeat,
                5 => Kind::Bytes,
                6 => Kind::Stride,
                _ => Kind::Plain(8, false),
            };
            match k {
                Kind::Plain(w, signed) => {
                    fields.push(format!("f{j}"));
                    body += &format!(" f{j}.width = {w}; f{j}.interpretation = none;");
                    if signed {
                        body += &format!(" f{j}.display = signed;");
                    }
                }
                Kind::Auto => {
                    fields.push(format!("f{j}"));
                    if r.below(2) == 0 {
                        body += &format!(" f{j}.interpretation = default {};", r.below(99));
                    } else {
                        body += &format!(
                            " f{j}.interpretation = stride {} {};",
                            r.below(99),
                            r.below(9) as i64 - 4
                        );
                    }
                }
                Kind::Delta(w, v) => {
                    fields.push(format!("f{j}"));
                    body += &format!(" f{j}.width = {w}; f{j}.interpretation = delta {v};");
                }
                Kind::Repeat => {
                    fields.push(format!("n{j}*x{j}"));
                    body += &format!(
                        " n{j}.width = 1; n{j}.interpretation = none; x{j}.width = 2; x{j}.interpretation = none;"
                    );
                }
                Kind::Bytes => fields.push("vfield".into()),
                Kind::Stride => {
                    fields.push(format!("s{j}"));
                    body += &format!(" s{j}.interpretation = sectionStride table 1;");
                }
            }
            ks.push(k);
        }
        text += &format!("  r{i} : ({}) {{ {body} }}\n", fields.join(", "));
        kinds.push(ks);
    }
    text += "}\nsection table 2 { e : (tag, v) { tag.value = 4; v.width = 2; v.interpretation = none; } }\n";
    (text, kinds)
}

fn random_trace(r: &mut Rng, schema: &Schema, kinds: &[Vec<Kind>]) -> (Vec<u8>, Class, ByteOrder) {
    let class = if r.below(2) == 0 {
        Class::Bits32
    } else {
        Class::Bits64
    };
    let order = if r.below(2) == 0 {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };
    let mut w = TraceWriter::in_memory(schema, class, order, "random.dtd");
    // One trace in three is long and mostly takes values back from the pool, so that the
    // encoder finds live sets in it.
    let pooled = r.below(3) == 0;
    let n = if pooled {
        500 + r.below(1500)
    } else {
        1 + r.below(300)
    };
    w.section_named("table").unwrap();
    let e = w.lookup("e").unwrap();
    for i in 0..n + 1 {
        w.record(e, &[In::Int(i * 7 % 65536)]).unwrap();
    }
    w.section_named("main").unwrap();
    let mut prev: Vec<Vec<u64>> = kinds
        .iter()
        .map(|ks| {
            ks.iter()
                .map(|k| if let Kind::Delta(_, v) = k { *v } else { 0 })
                .collect()
        })
        .collect();
    let mut strides = 0u64;
    let mut base = r.next();
    // Values that other fields take again (as a free takes an allocation's address).
    let mut pool: Vec<u64> = Vec::new();
    for _ in 0..n {
        let ri = r.below(kinds.len() as u64) as usize;
        let rid = w.lookup(&format!("r{ri}")).unwrap();
        let regime = if pooled && r.below(5) != 0 {
            2
        } else {
            r.below(4)
        };
        if regime == 0 {
            base = r.next();
        }
        let mut vals = Vec::new();
        let mut uses_stride = false;
        for (j, k) in kinds[ri].iter().enumerate() {
            match *k {
                Kind::Plain(wd, signed) => {
                    let v = match regime {
                        0 => 5,
                        1 => base.wrapping_add(r.below(300)),
                        2 if !pool.is_empty() && ri % 2 == 1 => {
                            let i = r.below(pool.len() as u64) as usize;
                            pool.swap_remove(i)
                        }
                        2 => r.next() >> (8 * r.below(8)),
                        _ => r.next(),
                    };
                    let v = if signed {
                        let s = 64 - 8 * wd as u32;
                        (((v << s) as i64) >> s) as u64
                    } else if wd < 8 {
                        v & ((1u64 << (8 * wd)) - 1)
                    } else {
                        v
                    };
                    if regime == 2 && ri.is_multiple_of(2) {
                        pool.push(v);
                    }
                    vals.push(In::Int(v));
                }
                Kind::Auto => vals.push(In::Auto),
                Kind::Delta(wd, _) => {
                    let span = 1i64 << (8 * wd.min(4) as i64 - 1);
                    let d =
                        (r.below(2 * span as u64) as i64 - span) / if regime == 1 { 64 } else { 1 };
                    let v = prev[ri][j].wrapping_add(d as u64);
                    prev[ri][j] = v;
                    vals.push(In::Int(v));
                }
                Kind::Repeat => {
                    let c = r.below(4);
                    vals.push(In::Int(c));
                    for _ in 0..c {
                        vals.push(In::Int(r.below(70000) % 65536));
                    }
                }
                Kind::Bytes => {
                    let len = r.below(4) as usize;
                    vals.push(In::Int(len as u64));
                    vals.push(In::Bytes(vec![b'a'; len]));
                }
                Kind::Stride => {
                    uses_stride = true;
                    vals.push(In::Auto);
                }
            }
        }
        if uses_stride {
            // Each record type has its own cursor; keep every cursor within the table.
            strides += 1;
            if strides > n {
                continue;
            }
        }
        // Now and then the input widens a plain field by metadata (which the encoder drops).
        if r.below(10) == 0 {
            let mut slot = 1u16;
            for k in &kinds[ri] {
                if matches!(k, Kind::Plain(..)) {
                    w.metadata(rid, slot, MetaProperty::Width(8)).unwrap();
                    break;
                }
                slot += if matches!(k, Kind::Repeat | Kind::Bytes) {
                    2
                } else {
                    1
                };
            }
        }
        w.record(rid, &vals).unwrap_or_else(|e| panic!("{e}"));
    }
    (w.finish_to_vec().unwrap(), class, order)
}

fn run(seed: u64) {
    let mut r = Rng(seed | 1);
    let (dtd, kinds) = random_schema(&mut r);
    let schema = metatf::dtd::parse_str("random.dtd", &dtd)
        .unwrap_or_else(|e| panic!("{dtd}\n{}", metatf::dtd::render_plain(&e)))
        .schema;
    let (bytes, class, order) = random_trace(&mut r, &schema, &kinds);
    let t = Trace::from_bytes(bytes.clone()).unwrap();
    let reader = Reader::new(&t, &schema);
    for (window, measure, live) in [
        (1 + r.below(64) as usize, Measure::Bytes, true),
        (4096, Measure::Compressed, r.below(2) == 0),
    ] {
        let enc = reencode(
            &schema,
            &reader,
            class,
            order,
            CompactOptions {
                window,
                measure,
                live,
                force_live: live,
            },
        );
        check_equal(&schema, &bytes, enc);
    }
    check_split(
        &schema,
        &dtd,
        &bytes,
        class,
        order,
        CompactOptions {
            window: 1 + r.below(64) as usize,
            live: r.below(2) == 0,
            ..CompactOptions::default()
        },
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn random_traces_of_random_dtds_reencode_to_the_same_values(seed in any::<u64>()) {
        run(seed);
    }
}

/// An allocation trace: allocations, and frees of a block still live (mostly a recent one),
/// with a few frees of NULL and of unknown blocks.
pub(crate) fn alloc_free_trace(n: usize) -> (Schema, Vec<u8>) {
    let dtd = std::fs::read_to_string(crate::util::root().join("dtds/hatf10.dtd")).unwrap();
    let schema = metatf::dtd::parse_str("hatf10.dtd", &dtd).unwrap().schema;
    let mut w = TraceWriter::in_memory(&schema, Class::Bits32, ByteOrder::Little, "hatf10.dtd");
    w.section_named("heap").unwrap();
    let mut r = Rng(99);
    let mut live: Vec<u64> = Vec::new();
    for i in 0..n {
        let roll = r.below(100);
        if roll < 45 || live.is_empty() {
            let a = 0x4000_0000 + (r.next() >> 40) * 16;
            if live.contains(&a) {
                continue;
            }
            live.push(a);
            w.write("alloc")
                .int("size", 16 + r.below(64))
                .int("address", a)
                .bytes("vfield.data", "")
                .done()
                .unwrap();
        } else {
            let a = match roll {
                45..=46 => 0,
                47 => 0x7000_0000 + i as u64,
                _ => {
                    let back = r.below(live.len().min(8) as u64) as usize;
                    live.remove(live.len() - 1 - back)
                }
            };
            w.write("free")
                .int("address", a)
                .bytes("vfield.data", "")
                .done()
                .unwrap();
        }
    }
    (schema.clone(), w.finish_to_vec().unwrap())
}

#[test]
fn frees_become_positions_in_a_live_set_when_asked() {
    let (schema, original) = alloc_free_trace(20_000);
    let t = Trace::from_bytes(original.clone()).unwrap();
    let r = Reader::new(&t, &schema);
    let plain = reencode(
        &schema,
        &r,
        Class::Bits32,
        ByteOrder::Little,
        CompactOptions::default(),
    );
    let live = reencode(
        &schema,
        &r,
        Class::Bits32,
        ByteOrder::Little,
        CompactOptions {
            live: true,
            ..CompactOptions::default()
        },
    );
    assert_eq!(plain[8], 0, "no extension unless asked");
    assert_eq!(live[8], 1, "the header declares live/1");
    let (np, nl) = (plain.len(), live.len());
    check_equal(&schema, &original, plain);
    check_equal(&schema, &original, live.clone());
    // A free's address takes 4 bytes as a number and about 1 as a position among 8.
    assert!(nl * 10 < np * 8, "live {nl} bytes, plain {np} bytes");
    let t = Trace::from_bytes(live).unwrap();
    let reader = Reader::new(&t, &schema);
    let mut records = reader.records();
    let mut uses = 0;
    while let Some(ev) = records.next() {
        if let metatf::decode::Event::Record(rec) = ev {
            if let Some(m) = rec.metadata() {
                uses += matches!(
                    m.property,
                    MetaProperty::Interp(metatf::dtd::Interp::Live(_)) | MetaProperty::LiveSet(_)
                ) as usize;
            }
        }
    }
    assert!(
        uses >= 2,
        "liveset on alloc.address and live on free.address"
    );
}

#[test]
fn a_dtd_with_live_sets_packs_and_dumps_back() {
    let text = "%mtf 1 dtd=\"live_sets.dtd\" class=32 order=little\n\
section number=1:heap\n\
alloc size=16 address=0x1000\n\
alloc size=16 address=0x2000\n\
alloc size=16 address=0x3000\n\
free address=0x2000\n\
metadata free.address width 2\n\
free address=0x9999\n\
metadata free.address width 1\n\
realloc old=0x3000 size=32 address=0x3000\n\
free address=0x1000\n\
free address=0x3000\n\
free address=0x0\n";
    let dtd = "tests/data/dtd/valid/live_sets.dtd";
    let (out, path, _dir) = crate::util::pack_stdin(dtd, text.as_bytes());
    assert!(out.status.success(), "{}", crate::util::text(&out.stderr));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes[8], 1, "the header declares live/1");
    let p = path.to_str().unwrap();
    let dump = crate::util::mtf(&["dump", "--dtd", dtd, p]);
    assert!(dump.status.success(), "{}", crate::util::text(&dump.stderr));
    assert_eq!(crate::util::text(&dump.stdout), text);
    let check = crate::util::mtf(&["check", "--dtd", dtd, p]);
    assert!(
        check.status.success(),
        "{}",
        crate::util::text(&check.stdout)
    );
    let info = crate::util::mtf(&["info", "--dtd", dtd, p]);
    assert!(crate::util::text(&info.stdout).contains("extensions  live/1"));
    // A reader without the extension finds a non-zero byte 8; one with it refuses bits it
    // does not know.
    let mut other = bytes.clone();
    other[8] = 3;
    std::fs::write(&path, &other).unwrap();
    let check = crate::util::mtf(&["check", "--dtd", dtd, p]);
    let msg = crate::util::text(&check.stderr);
    assert!(
        !check.status.success() && msg.contains("header byte 8 (extensions) is 0x03"),
        "{msg}"
    );
}

#[test]
fn live_encoding_does_not_depend_on_the_hash_seed() {
    // Every map the encoder builds has its own seed; two runs must still agree byte for byte.
    let (schema, original) = alloc_free_trace(5_000);
    let t = Trace::from_bytes(original).unwrap();
    let r = Reader::new(&t, &schema);
    let opts = CompactOptions {
        live: true,
        ..CompactOptions::default()
    };
    let a = reencode(&schema, &r, Class::Bits32, ByteOrder::Little, opts);
    for _ in 0..3 {
        let b = reencode(&schema, &r, Class::Bits32, ByteOrder::Little, opts);
        assert!(a == b, "two encodings of the same trace differ");
    }
}

#[test]
fn the_old_subcommand_name_encode_still_compacts() {
    let dir = crate::util::tempdir();
    let out = dir.path().join("t.mtf");
    let r = crate::util::mtf(&[
        "encode",
        "traces/hatf-le32.mtf",
        "-o",
        out.to_str().unwrap(),
        "--verify",
    ]);
    assert!(r.status.success(), "{}", crate::util::text(&r.stderr));
    assert!(crate::util::text(&r.stderr).contains("verified: 20 records"));
    // Hidden from the list of subcommands: `compact` is the name shown.
    let help = crate::util::mtf(&["--help"]);
    let help = crate::util::text(&help.stdout);
    assert!(help.contains("compact"), "{help}");
    assert!(!help.contains("  encode"), "{help}");
}

#[test]
fn compression_levels_outside_the_codecs_range_exit_2_naming_the_range() {
    let dir = crate::util::tempdir();
    let out = dir.path().join("x");
    let o = out.to_str().unwrap();
    for (args, says) in [
        (
            &["--compress", "xz", "--level", "10"][..],
            "valid levels are 0 to 9",
        ),
        (
            &["--compress", "gzip", "--level", "99"][..],
            "valid levels are 0 to 9",
        ),
        (
            &["--compress", "zstd", "--level", "99"][..],
            "valid levels are 1 to 22",
        ),
        (
            &["--compress", "zstd", "--level", "0"][..],
            "valid levels are 1 to 22",
        ),
        (&["--level", "5"][..], "without a compressor"),
        (
            &["--compress", "none", "--level", "5"][..],
            "without a compressor",
        ),
    ] {
        let mut a = vec!["compact", "traces/hatf-le32.mtf", "-o", o];
        a.extend_from_slice(args);
        let r = crate::util::mtf(&a);
        let msg = crate::util::text(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {msg}");
        assert!(msg.contains(says), "{args:?}: {msg}");
        assert!(!out.exists(), "{args:?} wrote an output");
    }
    let r = crate::util::mtf(&[
        "compact",
        "traces/hatf-le32.mtf",
        "-o",
        o,
        "--compress",
        "xz",
        "--level",
        "0",
    ]);
    assert!(r.status.success(), "{}", crate::util::text(&r.stderr));
    assert!(crate::util::text(&r.stderr).contains("with xz -0"));
}

#[test]
fn compact_file_gives_a_library_user_compression_split_and_verification() {
    use metatf::compact::{compact_file, Codec, Compression, FileOptions, Streams};
    let dir = crate::util::tempdir();
    let o = metatf::open(crate::util::root().join("traces/et3.mtf")).unwrap();
    let r = o.reader();
    let name = &o.trace().header().dtd_name;
    let out = dir.path().join("t.mtf.gz");
    let opts = FileOptions {
        compression: Some(Compression::new(Codec::Gzip, Some(6)).unwrap()),
        split: true,
        verify: true,
        ..FileOptions::default()
    };
    let rep = compact_file(&r, o.dtd_text(), name, &out, &opts, &mut |_, _| {}).unwrap();
    assert!(rep.verified.is_some_and(|n| n > 0));
    let file = std::fs::metadata(&out).unwrap().len();
    assert_eq!(rep.file_bytes, file);
    assert_eq!(&std::fs::read(&out).unwrap()[..2], b"\x1f\x8b");
    // Whichever was kept, the output reads back: with the derived DTD beside it, or the input's.
    match &rep.streams {
        Streams::Kept { dtd_path, .. } => assert!(dtd_path.exists()),
        Streams::NotKept => {}
        other => panic!("{other:?}"),
    }
    // Standard output cannot take split streams (the derived DTD goes beside the output).
    let e = compact_file(&r, o.dtd_text(), name, "-".as_ref(), &opts, &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("must be a file"), "{e}");
}

#[test]
fn split_streams_are_kept_only_when_smaller_and_never_written_to_stdout() {
    let dir = crate::util::tempdir();
    let out = dir.path().join("t.mtf");
    let o = out.to_str().unwrap();
    let r = crate::util::mtf(&["compact", "traces/et3.mtf", "-o", o, "--split", "--verify"]);
    let msg = crate::util::text(&r.stderr);
    assert!(r.status.success(), "{msg}");
    assert!(msg.contains("verified"), "{msg}");
    let dtds: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".dtd"))
        .collect();
    if msg.contains("streams kept") {
        assert_eq!(dtds.len(), 1, "{msg}");
        let header = std::fs::read(&out).unwrap();
        let name = dtds[0].as_bytes();
        assert!(
            header.windows(name.len()).any(|w| w == name),
            "the trace names {}",
            dtds[0]
        );
    } else {
        assert!(msg.contains("streams not kept"), "{msg}");
        assert!(
            dtds.is_empty(),
            "no derived DTD when the streams are not kept: {dtds:?}"
        );
    }
    let r = crate::util::mtf(&["compact", "traces/et3.mtf", "-o", "-", "--split"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(crate::util::text(&r.stderr).contains("must be a file"));
}

#[test]
fn an_imported_trace_with_streams_exports_byte_for_byte() {
    // Streams turn fields into references; export must follow them to the values.
    let o = metatf::open(crate::util::root().join("traces/et3.mtf")).unwrap();
    let h = o.trace().header();
    let text = std::fs::read_to_string(crate::util::root().join("dtds/et3.dtd")).unwrap();
    let r = o.reader();
    let opts = CompactOptions::default();
    let plan = metatf::compact::plan_split(&r, &text, &opts)
        .unwrap()
        .expect("fields that vary");
    let dir = crate::util::tempdir();
    std::fs::write(dir.path().join("derived.dtd"), &plan.dtd_text).unwrap();
    let derived = metatf::dtd::parse_str("derived.dtd", &plan.dtd_text)
        .unwrap()
        .schema;
    let mut w = TraceWriter::in_memory(&derived, h.class, h.byte_order, "derived.dtd");
    metatf::compact::compact_split(&r, &mut w, &opts, &plan, &mut |_, _| {}).unwrap();
    let split = dir.path().join("split.mtf");
    std::fs::write(&split, w.finish_to_vec().unwrap()).unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let ra = crate::util::mtf(&["export", "traces/et3.mtf", "-o", a.to_str().unwrap()]);
    assert!(ra.status.success(), "{}", crate::util::text(&ra.stderr));
    let rb = crate::util::mtf(&["export", split.to_str().unwrap(), "-o", b.to_str().unwrap()]);
    assert!(rb.status.success(), "{}", crate::util::text(&rb.stderr));
    // One file, or a folder of the format's files.
    let read_all = |p: &Path| -> Vec<(String, Vec<u8>)> {
        if p.is_dir() {
            let mut v: Vec<_> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    (
                        e.file_name().into_string().unwrap(),
                        std::fs::read(e.path()).unwrap(),
                    )
                })
                .collect();
            v.sort();
            v
        } else {
            vec![(String::new(), std::fs::read(p).unwrap())]
        }
    };
    let (x, y) = (read_all(&a), read_all(&b));
    assert!(!x.is_empty());
    assert!(x == y, "the exports differ");
}

#[test]
fn a_failed_split_compact_leaves_no_derived_dtd() {
    use metatf::compact::{compact_file, Codec, Compression, FileOptions, Streams};
    // 2,000 records of `gen_hatf 2000` (examples/gen_hatf.rs), whose streams pay under zstd.
    let o = metatf::OpenOptions::new()
        .dtd(crate::util::root().join("benches/hatf-bench.dtd"))
        .open(crate::util::root().join("tests/data/compact/hatf-2000.mtf"))
        .unwrap();
    let r = o.reader();
    let name = &o.trace().header().dtd_name;
    let opts = FileOptions {
        compression: Some(Compression::new(Codec::Zstd, None).unwrap()),
        split: true,
        ..FileOptions::default()
    };
    let dir = crate::util::tempdir();
    let entries = |d: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // The output cannot be made (a folder of that name): nothing is left, no derived DTD.
    let out = dir.path().join("out.mtf");
    std::fs::create_dir(&out).unwrap();
    let e = compact_file(&r, o.dtd_text(), name, &out, &opts, &mut |_, _| {});
    assert!(e.is_err());
    assert_eq!(entries(dir.path()), ["out.mtf"]);
    // Where it can, the trace and its derived DTD are both written.
    let ok = dir.path().join("ok.mtf");
    let rep = compact_file(&r, o.dtd_text(), name, &ok, &opts, &mut |_, _| {}).unwrap();
    let Streams::Kept { dtd_path, dtd_name } = &rep.streams else {
        panic!("streams not kept: {:?}", rep.streams);
    };
    assert!(dtd_path.is_file() && ok.is_file(), "{dtd_name}");
    assert_eq!(entries(dir.path()).len(), 3);
}

/// The compressions of `size-report` run on a pool of threads: the table is the same whatever
/// their number, and nothing is written to standard error when it is not a terminal (no
/// progress bar).
#[test]
fn size_report_is_the_same_on_one_thread_and_on_several() {
    let one = crate::util::mtf(&["size-report", "-j", "1", "traces/android.mtf"]);
    let three = crate::util::mtf(&["size-report", "-j", "3", "traces/android.mtf"]);
    assert!(one.status.success() && three.status.success());
    assert_eq!(
        String::from_utf8_lossy(&one.stdout),
        String::from_utf8_lossy(&three.stdout)
    );
    assert!(one.stderr.is_empty() && three.stderr.is_empty());
    assert_eq!(String::from_utf8_lossy(&one.stdout).lines().count(), 9);
}
