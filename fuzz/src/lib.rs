//! Helpers shared by the fuzz targets: the shipped DTDs parsed once, traces made from fuzz input
//! (raw bytes, or the text form packed), and a decoder loop that touches every value.

use std::sync::OnceLock;

use metatf::container::{shipped_dtd, shipped_names};
use metatf::decode::{Event, Reader};
use metatf::dtd::Schema;
use metatf::text::{InputFormat, LineReader, Options, Printer};

/// Every DTD built into `mtf`, parsed: `(name, schema)`, in the library's order.
pub fn shipped() -> &'static [(&'static str, Schema)] {
    static S: OnceLock<Vec<(&'static str, Schema)>> = OnceLock::new();
    S.get_or_init(|| {
        shipped_names()
            .map(|n| {
                let text = shipped_dtd(n).expect("listed");
                let s = metatf::dtd::parse_str(n, text)
                    .unwrap_or_else(|_| panic!("shipped DTD {n} does not parse"))
                    .schema;
                (n, s)
            })
            .collect()
    })
}

/// The shipped schema named `name` (the base name of a header's DTD name).
pub fn shipped_schema(name: &str) -> Option<&'static Schema> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    shipped().iter().find(|(n, _)| *n == base).map(|(_, s)| s)
}

/// The schema a text (or JSON lines) input's header names, when it is a shipped DTD; `None`
/// when the header cannot be read or names another DTD.
pub fn schema_of_text(data: &[u8], format: InputFormat) -> Option<&'static Schema> {
    let mut lines = LineReader::new(data);
    let h = metatf::pack::read_header(&mut lines, format).ok()?;
    shipped_schema(&h.dtd)
}

/// Pack a text-form input into a trace with the shipped DTD its header names.
pub fn pack_text(data: &[u8], format: InputFormat) -> Option<(Vec<u8>, &'static Schema)> {
    let schema = schema_of_text(data, format)?;
    let bytes = metatf::pack::pack_to_vec(schema, data, format).ok()?;
    Some((bytes, schema))
}

/// A trace from fuzz input: when the first byte is odd, the rest is the text form packed (so
/// the analysis and exporters see valid, meaningful traces often); when even, the rest is the
/// trace's bytes as they are.
pub fn trace_from_input(data: &[u8]) -> Option<Vec<u8>> {
    let (&mode, rest) = data.split_first()?;
    if mode & 1 == 1 {
        pack_text(rest, InputFormat::Text).map(|x| x.0)
    } else {
        Some(rest.to_vec())
    }
}

/// Decode every record of `reader`, printing each as text and as JSON lines to a sink, and
/// reading every field's value and logical value. Returns (records, problems, damage).
pub fn decode_all(reader: &Reader<'_>) -> (u64, u64, u64) {
    let mut text = Printer::new(reader, Options::default());
    let mut json = Printer::new(
        reader,
        Options {
            format: metatf::text::Format::Jsonl,
            ..Options::default()
        },
    );
    let mut sink = std::io::sink();
    let (mut n, mut problems, mut damage) = (0, 0, 0);
    let mut records = reader.records();
    while let Some(event) = records.next() {
        match event {
            Event::Record(v) => {
                n += 1;
                text.record(&mut sink, &v).expect("a sink does not fail");
                json.record(&mut sink, &v).expect("a sink does not fail");
                for f in v.fields() {
                    let _ = f.value();
                    let _ = f.logical();
                    let _ = f.reference();
                }
                let _ = v.metadata();
            }
            Event::Problem(p) => {
                problems += 1;
                let _ = p.to_string();
            }
            Event::Damage(d) => {
                damage += 1;
                let _ = d.to_string();
            }
        }
    }
    (n, problems, damage)
}

/// A folder for files a target writes, in memory where the machine has /dev/shm; one per
/// process (targets run in one process each).
pub fn scratch_dir() -> &'static std::path::Path {
    static D: OnceLock<std::path::PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            std::path::PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let d = base.join(format!("metatf-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch folder");
        d
    })
}

/// Import `input` (opened by the caller) with mapping `m`, unmatched units kept, into a trace in
/// memory; then export that trace to `out`. `Err` when the import refused (with its message);
/// an export that fails after a successful import is a defect and panics.
pub fn import_then_export(
    m: &metatf::import::Mapping,
    feed: impl FnOnce(&mut metatf::import::Importer<'_, '_>) -> Result<(), metatf::import::ImportError>,
    container: metatf::import::records::Container,
    out: &std::path::Path,
) -> Result<metatf::import::ExportReport, String> {
    use metatf::container::{ByteOrder, Class, Trace};
    use metatf::encode::TraceWriter;
    use metatf::import::source::TraceSource;
    use metatf::import::{export, origin, Importer, Target};
    let schema = shipped_schema(&m.dtd).expect("a shipped mapping's DTD is shipped");
    let w = TraceWriter::in_memory(schema, Class::Bits64, ByteOrder::Little, &m.dtd);
    let mut imp = Importer::new(m, w, schema, container, 1).map_err(|e| e.to_string())?;
    imp.keep_unmatched(true);
    feed(&mut imp).map_err(|e| e.to_string())?;
    let (writer, _) = imp.finish().map_err(|e| e.to_string())?;
    let bytes = writer.finish_to_vec().map_err(|e| e.to_string())?;
    let trace = Trace::from_bytes(bytes).expect("an imported trace opens");
    let src = TraceSource::new(&trace, schema);
    let org = origin(&src).expect("an imported trace has its origin");
    let _ = std::fs::remove_file(out);
    match export(&src, m, &org, Target::Path(out.to_path_buf())) {
        Ok(r) => Ok(r),
        Err(e) => panic!("the import succeeded but its export failed: {e}"),
    }
}

/// The shipped mappings, parsed once.
pub fn mappings() -> &'static [(&'static str, metatf::import::Mapping)] {
    static M: OnceLock<Vec<(&'static str, metatf::import::Mapping)>> = OnceLock::new();
    M.get_or_init(metatf::import::shipped::all)
}

/// A file name that the part `k` (modulo the number of parts) of `m` takes: its `file` glob
/// when it is a plain name, else `input.txt`.
pub fn part_file_name(m: &metatf::import::Mapping, k: usize) -> String {
    if m.parts.is_empty() {
        return "input.txt".to_string();
    }
    match &m.parts[k % m.parts.len()].file {
        Some(g) if !g.contains(['*', '?', '/', '\\']) => g.clone(),
        _ => "input.txt".to_string(),
    }
}
