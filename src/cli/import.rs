//! `mtf import`: turn foreign text traces into Meta-TF traces with a format mapping.

use std::path::{Path, PathBuf};

use clap::Args;

use metatf::container::{ByteOrder, Class};
use metatf::dtd::Schema;
use metatf::encode::TraceWriter;
use metatf::import::engine::{order_inputs, score, Importer};
use metatf::import::sink::WriterSink;
use metatf::import::{records, shipped, Mapping};

use super::common::{dtd_failure, load_schema_file, print_warnings, render, Failure};
use super::{EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The input files (a ZIP input is read entry by entry; `-` is standard input).
    pub inputs: Vec<PathBuf>,
    /// A shipped format by name (see `--list`).
    #[arg(long, conflicts_with = "map")]
    pub from: Option<String>,
    /// A mapping file of your own (docs/mappings.md).
    #[arg(long)]
    pub map: Option<PathBuf>,
    /// The DTD to use instead of the one the mapping names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// The trace to write (`-` for standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// List the shipped formats.
    #[arg(long)]
    pub list: bool,
}

fn usage(m: impl Into<String>) -> Failure {
    super::common::error(EXIT_USAGE, "mtf::usage", m)
}

/// Load the DTD a mapping names: `--dtd`, else a file of that name beside the mapping file,
/// else the shipped DTD.
pub fn mapping_schema(
    m: &Mapping,
    map_file: Option<&Path>,
    dtd: Option<&Path>,
) -> Result<Schema, Failure> {
    if let Some(d) = dtd {
        return load_schema_file(d);
    }
    if let Some(dir) = map_file.and_then(|p| p.parent()) {
        let p = dir.join(&m.dtd);
        if p.is_file() {
            return load_schema_file(&p);
        }
    }
    match metatf::container::shipped_dtd(&m.dtd) {
        Some(text) => {
            let loaded = metatf::dtd::parse_str(&m.dtd, text)
                .map_err(|e| dtd_failure(&metatf::dtd::DtdLoadError::from(e)))?;
            print_warnings(&loaded.warnings);
            Ok(loaded.schema)
        }
        None => Err(usage(format!(
            "DTD {} of mapping `{}` not found (put it beside the mapping or give --dtd)",
            m.dtd, m.name
        ))),
    }
}

/// Load a mapping file, printing its diagnostic on error.
pub fn load_mapping(path: &Path) -> Result<Mapping, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read mapping {}: {e}", path.display())))?;
    Mapping::parse(&path.display().to_string(), &text).map_err(|e| {
        eprint!("{}", render(&*e));
        Failure::new(EXIT_USAGE, String::new())
    })
}

/// The total size of the inputs, when every one is a regular file that is neither compressed nor
/// a ZIP (the import counts decompressed bytes).
fn input_total(inputs: &[PathBuf]) -> Option<u64> {
    use std::io::Read;
    let mut total = 0;
    for p in inputs {
        let meta = std::fs::metadata(p).ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut head = [0u8; 8];
        let n = std::fs::File::open(p).ok()?.read(&mut head).ok()?;
        if metatf::io::Compression::detect(&head[..n]).is_some() || head[..n].starts_with(b"PK") {
            return None;
        }
        total += meta.len();
    }
    Some(total)
}

/// Run `mtf import`.
pub fn run(args: &ImportArgs) -> Result<i32, Failure> {
    if args.list {
        use std::io::Write;
        let mut out = metatf::io::StdoutSink::new();
        for (file, m) in shipped::all() {
            let rules: Vec<String> = m
                .parts
                .iter()
                .map(|p| {
                    format!(
                        "{}: {}",
                        p.name,
                        p.rules
                            .iter()
                            .map(|r| r.record.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                })
                .collect();
            writeln!(
                out,
                "{}\n  {}\n  DTD {}, mapping formats/{file}\n  records: {}",
                m.name,
                m.describe,
                m.dtd,
                rules.join("; ")
            )?;
        }
        out.finish()?;
        return Ok(EXIT_OK);
    }
    if args.inputs.is_empty() {
        return Err(usage("give the input files (or --list)"));
    }
    let out = args
        .output
        .clone()
        .ok_or_else(|| usage("give the output trace with -o OUT.mtf"))?;
    for input in &args.inputs {
        super::common::refuse_same_file(input, &out)?;
    }
    let m = if let Some(p) = &args.map {
        load_mapping(p)?
    } else if let Some(f) = &args.from {
        shipped::by_name(f)
            .ok_or_else(|| usage(format!("unknown format `{f}` (see mtf import --list)")))?
    } else {
        let first = &args.inputs[0];
        let mut best: Option<(Mapping, usize, usize)> = None;
        for (_, m) in shipped::all() {
            let (hit, seen) = score(&m, first, 200);
            if hit > 0 && best.as_ref().is_none_or(|b| hit * b.2 > b.1 * seen) {
                best = Some((m, hit, seen));
            }
        }
        let (m, hit, seen) = best.ok_or_else(|| {
            usage(format!(
                "{}: no shipped format recognises this input; give --from or --map",
                first.display()
            ))
        })?;
        eprintln!(
            "detected format {} ({hit} of the first {seen} units match)",
            m.name
        );
        m
    };
    let schema = mapping_schema(&m, args.map.as_deref(), args.dtd.as_deref())?;
    let inputs = order_inputs(&m, &args.inputs);
    let zip = inputs.iter().any(|p| metatf::import::zipio::is_zip(p));
    if zip && inputs.len() > 1 {
        return Err(usage("a ZIP input must be the only input"));
    }
    let container = if zip {
        records::CONTAINER_ZIP
    } else {
        records::CONTAINER_PLAIN
    };
    // `-o -` writes standard output; a device or FIFO is written directly; a regular file
    // appears only when complete.
    let writer = TraceWriter::create(&schema, &out, Class::Bits64, ByteOrder::Little, &m.dtd)
        .map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
    let fail = |e: metatf::import::ImportError| usage(e.to_string());
    let mut imp = Importer::new(
        &m,
        WriterSink::new(writer, &schema),
        container,
        inputs.len() as u64,
    )
    .map_err(fail)?;
    // A bar over the input bytes, when their total is known: regular, uncompressed files.
    let total = input_total(&inputs);
    let quiet = super::common::quiet() || total.is_none();
    let bar = super::progress::Progress::new(total.unwrap_or(0), "importing", quiet);
    let mut last = 0u64;
    // The bar goes with the importer: it is cleared when the import finishes.
    imp.on_progress(move |n| {
        if n - last >= 1 << 20 {
            last = n;
            bar.set_bytes(n);
        }
    });
    for p in &inputs {
        imp.import_path(p).map_err(fail)?;
    }
    let (sink, rep) = imp.finish().map_err(fail)?;
    let s = sink
        .writer
        .finish()
        .map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
    let (nrecords, bytes) = (Some(s.nrecords), s.bytes);
    eprintln!(
        "imported {} ({}): {} input bytes, {} units, {} as records of the format, {} kept as raw lines",
        inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" "),
        m.name,
        rep.bytes_in,
        rep.units,
        rep.mapped,
        rep.raw
    );
    if !rep.first_raw.is_empty() {
        let at: Vec<String> = rep
            .first_raw
            .iter()
            .map(|(f, l, c)| format!("{f}:{l}:{c}"))
            .collect();
        eprintln!(
            "raw lines at: {}{}",
            at.join(", "),
            if rep.raw > at.len() as u64 {
                ", …"
            } else {
                ""
            }
        );
    }
    for (s, n, b) in &rep.tables {
        if *n > 0 {
            eprintln!("string table {s}: {n} strings, {b} bytes of text");
        }
    }
    for (s, n) in &rep.routed {
        eprintln!("section {s}: {n} records (routed)");
    }
    for e in &rep.verbatim_entries {
        eprintln!("kept verbatim: {e}");
    }
    eprintln!(
        "wrote {}: {bytes} bytes{}",
        out.display(),
        nrecords
            .map(|n| format!(", {n} records"))
            .unwrap_or_default()
    );
    Ok(EXIT_OK)
}
