//! `mtf export --to parquet`: every sample trace, exported and read back with the parquet crate,
//! holds the decoder's values; repeats are lists and nested records structs.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use metatf::columnar::{write_parquet, ParquetOptions};
use metatf::decode::{Event, Value};

use crate::util;

/// A cell as the test compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cell {
    Int(i128),
    Bytes(Vec<u8>),
    Null,
    List(Vec<Cell>),
    Struct(Vec<(String, Cell)>),
}

fn cell(a: &dyn Array, row: usize) -> Cell {
    if a.is_null(row) {
        return Cell::Null;
    }
    match a.data_type() {
        DataType::UInt8 => Cell::Int(a.as_primitive::<UInt8Type>().value(row) as i128),
        DataType::UInt16 => Cell::Int(a.as_primitive::<UInt16Type>().value(row) as i128),
        DataType::UInt32 => Cell::Int(a.as_primitive::<UInt32Type>().value(row) as i128),
        DataType::UInt64 => Cell::Int(a.as_primitive::<UInt64Type>().value(row) as i128),
        DataType::Int8 => Cell::Int(a.as_primitive::<Int8Type>().value(row) as i128),
        DataType::Int16 => Cell::Int(a.as_primitive::<Int16Type>().value(row) as i128),
        DataType::Int32 => Cell::Int(a.as_primitive::<Int32Type>().value(row) as i128),
        DataType::Int64 => Cell::Int(a.as_primitive::<Int64Type>().value(row) as i128),
        DataType::Utf8 => Cell::Bytes(a.as_string::<i32>().value(row).as_bytes().to_vec()),
        DataType::Binary => Cell::Bytes(a.as_binary::<i32>().value(row).to_vec()),
        DataType::Dictionary(..) => {
            let d = a.as_dictionary::<Int32Type>();
            let k = d.keys().value(row) as usize;
            cell(d.values().as_ref(), k)
        }
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let items = l.value(row);
            Cell::List((0..items.len()).map(|i| cell(items.as_ref(), i)).collect())
        }
        DataType::Struct(_) => {
            let s: &StructArray = a.as_struct();
            Cell::Struct(
                s.column_names()
                    .iter()
                    .zip(s.columns())
                    .map(|(n, c)| (n.to_string(), cell(c.as_ref(), row)))
                    .collect(),
            )
        }
        t => panic!("unexpected type {t}"),
    }
}

/// One row: `(column, cell)` pairs.
type Row = Vec<(String, Cell)>;

/// Every row of a Parquet file, with the file's Arrow types.
fn read(path: &Path) -> (Vec<Row>, Vec<(String, DataType)>) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let types = builder
        .schema()
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect();
    let mut rows = Vec::new();
    for batch in builder.build().unwrap() {
        let batch: RecordBatch = batch.unwrap();
        for row in 0..batch.num_rows() {
            rows.push(
                batch
                    .schema()
                    .fields()
                    .iter()
                    .zip(batch.columns())
                    .map(|(f, c): (_, &ArrayRef)| (f.name().clone(), cell(c.as_ref(), row)))
                    .collect(),
            );
        }
    }
    (rows, types)
}

/// A field by its display path (`vfield.data`): struct columns are followed by name.
fn lookup<'c>(row: &'c [(String, Cell)], path: &str) -> Option<&'c Cell> {
    if let Some((_, c)) = row.iter().find(|(n, _)| n == path) {
        return Some(c);
    }
    let (head, rest) = path.split_once('.')?;
    match row.iter().find(|(n, _)| n == head)? {
        (_, Cell::Struct(children)) => lookup(children, rest),
        _ => None,
    }
}

fn int(v: u64, signed: bool) -> Cell {
    Cell::Int(if signed { v as i64 as i128 } else { v as i128 })
}

#[test]
fn every_sample_trace_reads_back_with_the_decoders_values() {
    let mut traces: Vec<_> = std::fs::read_dir(util::root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    traces.sort();
    assert!(traces.len() >= 7, "{traces:?}");
    for trace in traces {
        let o = metatf::open(&trace).unwrap();
        let reader = o.reader();
        let dir = tempfile::tempdir().unwrap();
        // Small batches and row groups, so that several of each are written and read.
        let opts = ParquetOptions {
            batch_rows: 7,
            row_group_rows: 13,
            ..ParquetOptions::default()
        };
        let report = write_parquet(&reader, dir.path(), &opts, &mut |_| {}).unwrap();
        assert_eq!(report.problems, 0, "{}", trace.display());
        assert!(!report.tables.is_empty());
        let mut files: HashMap<u32, Vec<Row>> = HashMap::new();
        for t in &report.tables {
            let (rows, types) = read(&t.path);
            assert_eq!(rows.len() as u64, t.rows, "{}", t.path.display());
            assert_eq!(types[0], ("record_index".into(), DataType::UInt64));
            files.insert(t.record, rows);
        }
        let mut next: HashMap<u32, usize> = HashMap::new();
        let mut compared = 0;
        let mut records = reader.records();
        while let Some(event) = records.next() {
            let Event::Record(view) = event else {
                panic!("{}: a problem", trace.display())
            };
            let Some(rows) = files.get(&view.record_id()) else {
                assert!(
                    matches!(view.name(), "section" | "metadata") || view.is_element(),
                    "{} not exported",
                    view.name()
                );
                continue;
            };
            assert!(!view.is_element(), "{}: an element exported", view.name());
            let i = next.entry(view.record_id()).or_default();
            let row = &rows[*i];
            *i += 1;
            let what = format!(
                "{} record {} ({})",
                trace.display(),
                view.index(),
                view.name()
            );
            assert_eq!(
                lookup(row, "record_index"),
                Some(&Cell::Int(view.index() as i128))
            );
            assert_eq!(
                lookup(row, "byte_offset"),
                Some(&Cell::Int(view.offset() as i128))
            );
            assert_eq!(
                lookup(row, "section"),
                Some(&Cell::Int(view.section() as i128))
            );
            for f in view.fields().skip(1) {
                let signed = f.def().display == metatf::dtd::Display::Signed;
                let got = lookup(row, f.name()).unwrap_or_else(|| panic!("{what}: {}", f.name()));
                let number = lookup(row, &format!("{}_ref", f.name()));
                match f.value() {
                    // A field that is a reference in other records (a metadata record changed
                    // its interpretation): the integer is in `FIELD` (as text where other
                    // records lead to strings), and `FIELD_ref` is null.
                    Value::Int(v) if number.is_some() => {
                        let text = Cell::Bytes(v.to_string().into_bytes());
                        assert!(
                            got == &int(v, false) || got == &text,
                            "{what}: {}",
                            f.name()
                        );
                        assert_eq!(number, Some(&Cell::Null), "{what}: {}", f.name());
                    }
                    Value::Int(v) => assert_eq!(got, &int(v, signed), "{what}: {}", f.name()),
                    Value::Bytes(b) => {
                        assert_eq!(got, &Cell::Bytes(b.to_vec()), "{what}: {}", f.name())
                    }
                    // A field whose references all lead to integers (a split stream) is the
                    // integers, as a field that stores them: no `FIELD_ref`.
                    Value::Ref(r) if number.is_none() => {
                        let want = reader.resolve(r).ok().and_then(|x| x.value.as_u64());
                        assert_eq!(got, &int(want.unwrap(), signed), "{what}: {}", f.name());
                    }
                    Value::Ref(r) => {
                        let want = match r {
                            metatf::decode::ElementRef::Index { index, .. } => index as i128,
                            metatf::decode::ElementRef::Offset { offset, .. } => offset as i128,
                        };
                        assert_eq!(number, Some(&Cell::Int(want)), "{what}");
                        let want = match reader.resolve(r).map(|x| x.value) {
                            Ok(Value::Bytes(b)) => Cell::Bytes(b.to_vec()),
                            Ok(Value::Int(v)) => Cell::Int(v as i128),
                            _ => Cell::Null,
                        };
                        assert_eq!(got, &want, "{what}: {}", f.name());
                    }
                }
                compared += 1;
            }
        }
        for (id, n) in next {
            assert_eq!(n, files[&id].len());
        }
        assert!(compared > 0, "{}", trace.display());
    }
}

#[test]
fn columns_take_the_narrowest_type_and_strings_are_dictionary_encoded() {
    let o = metatf::open(util::root().join("traces/hatf-split-le64.mtf")).unwrap();
    let reader = o.reader();
    let dir = tempfile::tempdir().unwrap();
    let report =
        write_parquet(&reader, dir.path(), &ParquetOptions::default(), &mut |_| {}).unwrap();
    let names: Vec<_> = report
        .tables
        .iter()
        .map(|t| t.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"alloc.parquet".to_string()), "{names:?}");
    let (_, types) = read(&dir.path().join("alloc.parquet"));
    let ty = |n: &str| types.iter().find(|(c, _)| c == n).map(|(_, t)| t.clone());
    // Sizes of the sample fit a byte or two, not the DTD's 4 or 8.
    assert!(
        matches!(ty("size"), Some(DataType::UInt8 | DataType::UInt16)),
        "{types:?}"
    );
    assert!(
        matches!(ty("vfield"), Some(DataType::Struct(_))),
        "{types:?}"
    );
    // `heap` leads into the `names` section: the name, dictionary-encoded.
    if let Some(t) = ty("heap_ref") {
        assert!(matches!(
            t,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64
        ));
        assert!(
            matches!(ty("heap"), Some(DataType::Dictionary(..))),
            "{types:?}"
        );
    }
}

const REPEATS: &str = "\
%mtf 1 dtd=\"repeats.dtd\" class=32 order=little
stack n=2 pc=[0x10 0x20]
stack n=0 pc=[]
table n=2 n_items=[{a=1 m=2 b=[3 4]} {a=5 m=0 b=[]}]
frames n=1 calls=[{pc=7 a=8}]
";

#[test]
fn repeats_are_lists_and_nested_items_structs() {
    let dir = tempfile::tempdir().unwrap();
    let dtd = dir.path().join("repeats.dtd");
    std::fs::copy(util::root().join("tests/data/dtd/valid/repeats.dtd"), &dtd).unwrap();
    let text = dir.path().join("r.txt");
    std::fs::write(&text, REPEATS).unwrap();
    let trace = dir.path().join("r.mtf");
    let out = util::mtf(&[
        "pack",
        text.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let o = metatf::open(&trace).unwrap();
    let reader = o.reader();
    let pq = dir.path().join("pq");
    write_parquet(&reader, &pq, &ParquetOptions::default(), &mut |_| {}).unwrap();

    let (rows, _) = read(&pq.join("stack.parquet"));
    assert_eq!(
        lookup(&rows[0], "pc"),
        Some(&Cell::List(vec![Cell::Int(0x10), Cell::Int(0x20)]))
    );
    assert_eq!(lookup(&rows[1], "pc"), Some(&Cell::List(vec![])));

    let (rows, _) = read(&pq.join("table.parquet"));
    let item = |a, m, b: Vec<i128>| {
        Cell::Struct(vec![
            ("a".into(), Cell::Int(a)),
            ("m".into(), Cell::Int(m)),
            (
                "b".into(),
                Cell::List(b.into_iter().map(Cell::Int).collect()),
            ),
        ])
    };
    assert_eq!(
        lookup(&rows[0], "n_items"),
        Some(&Cell::List(vec![
            item(1, 2, vec![3, 4]),
            item(5, 0, vec![])
        ]))
    );

    let (rows, _) = read(&pq.join("frames.parquet"));
    assert_eq!(
        lookup(&rows[0], "calls"),
        Some(&Cell::List(vec![Cell::Struct(vec![
            ("pc".into(), Cell::Int(7)),
            ("a".into(), Cell::Int(8)),
        ])]))
    );
}

#[test]
fn cli_exports_a_compressed_trace_from_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let raw = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &raw).unwrap();
    let gz = gz.finish().unwrap();
    let out_dir = dir.path().join("out");
    let out = util::mtf_stdin(
        &[
            "export",
            "--to",
            "parquet",
            "-",
            "-o",
            out_dir.to_str().unwrap(),
        ],
        &gz,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Standard error is not a terminal: no progress bar, only the summary.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("exported standard input: "), "{err}");
    assert!(!err.contains('\r') && !err.contains("ETA"), "{err}");
    let (rows, _) = read(&out_dir.join("alloc.parquet"));
    assert_eq!(rows.len(), 10);
}

#[test]
fn a_file_named_as_the_parquet_folder_is_refused_and_left_alone() {
    let dir = crate::util::tempdir();
    let file = dir.path().join("out");
    std::fs::write(&file, b"keep me").unwrap();
    let out = crate::util::mtf(&[
        "export",
        "--to",
        "parquet",
        "traces/hatf-le32.mtf",
        "-o",
        file.to_str().unwrap(),
    ]);
    let msg = crate::util::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{msg}");
    assert!(msg.contains("is a file, not a folder"), "{msg}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
}

/// Issue 16 item 3: a trace whose fields were moved into streams (`mtf compact --split`)
/// exports to the same files, rows and values as the trace itself: no file per stream, and
/// each stream value as its field's value.
#[test]
fn a_split_trace_exports_the_files_and_values_of_the_unsplit_one() {
    for (trace, dtd) in [
        ("traces/android.mtf", "dtds/hatf-android.dtd"),
        ("traces/jvm_trace.mtf", "dtds/jvm_trace.dtd"),
    ] {
        let (_keep, split) = crate::split_streams::split_copy(trace, dtd);
        let export = |path: &Path| {
            let o = metatf::open(path).unwrap();
            let reader = o.reader();
            let dir = tempfile::tempdir().unwrap();
            let report =
                write_parquet(&reader, dir.path(), &ParquetOptions::default(), &mut |_| {})
                    .unwrap();
            assert_eq!(report.problems, 0);
            let mut files: Vec<(String, Vec<Row>)> = report
                .tables
                .iter()
                .map(|t| {
                    let name = t.path.file_name().unwrap().to_string_lossy().into_owned();
                    let rows = read(&t.path)
                        .0
                        .into_iter()
                        .map(|row| {
                            // Where a record is, and the stored references, are the encoding's.
                            row.into_iter()
                                .filter(|(n, _)| {
                                    n != "record_index"
                                        && n != "byte_offset"
                                        && !n.ends_with("_ref")
                                })
                                .collect()
                        })
                        .collect();
                    (name, rows)
                })
                .collect();
            files.sort_by(|a, b| a.0.cmp(&b.0));
            files
        };
        let a = export(&util::root().join(trace));
        let b = export(&split);
        assert_eq!(
            a.iter().map(|f| &f.0).collect::<Vec<_>>(),
            b.iter().map(|f| &f.0).collect::<Vec<_>>(),
            "{trace}"
        );
        assert!(a == b, "{trace}: the values differ");
    }
}

#[test]
fn columns_of_unique_values_are_written_without_a_dictionary() {
    // 3,000 allocations: unique addresses, a few sizes.
    let mut text = String::from("%mtf 1 dtd=\"hatf10.dtd\" class=64 order=little\nsection 1\n");
    for i in 0..3000u64 {
        text.push_str(&format!(
            "alloc size={} address={} vfield.data=\"\"\n",
            16 << (i % 4),
            0x10000 + 48 * i
        ));
    }
    let (out, trace, _guard) = util::pack_stdin("dtds/hatf10.dtd", text.as_bytes());
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let dir = util::tempdir();
    let o = metatf::open(&trace).unwrap();
    write_parquet(
        &o.reader(),
        dir.path(),
        &ParquetOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let file = File::open(dir.path().join("alloc.parquet")).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let meta = builder.metadata().clone();
    let rg = meta.row_group(0);
    let dict: HashMap<String, bool> = rg
        .columns()
        .iter()
        .map(|c| {
            (
                c.column_path().string(),
                c.dictionary_page_offset().is_some(),
            )
        })
        .collect();
    for (col, want) in [
        ("record_index", false),
        ("byte_offset", false),
        ("address", false),
        ("section", true),
        ("size", true),
    ] {
        assert_eq!(dict.get(col), Some(&want), "{col}: {dict:?}");
    }
    // The values read back whatever the encoding.
    let (rows, _) = read(&dir.path().join("alloc.parquet"));
    assert_eq!(rows.len(), 3000);
    assert_eq!(
        lookup(&rows[7], "address"),
        Some(&Cell::Int(0x10000 + 48 * 7))
    );
    assert_eq!(lookup(&rows[7], "size"), Some(&Cell::Int(16 << 3)));
}
