//! `mtf import`: turn foreign text traces into Meta-TF traces with a format mapping.

use std::path::PathBuf;

use clap::Args;

use metatf::import::{
    create_writer, detect, order_inputs, shipped, ImportError, ImportErrorKind, ImportInput,
    Importer, Mapping, MappingDtdError,
};
use miette::Diagnostic;

use super::common::{dtd_failure, print_warnings, render, Failure, Flat};
use super::{EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The input files: plain or compressed (gzip, zstd, xz, bzip2), or a ZIP (read entry by
    /// entry); `-` is standard input. Without --from or --map the format is detected from the
    /// first input's first lines.
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
    /// Import even when most of the input matches no rule of the format (every unmatched
    /// line is kept verbatim); without it such an import is refused.
    #[arg(long)]
    pub keep_unmatched: bool,
    /// List the shipped formats.
    #[arg(long)]
    pub list: bool,
    /// The seek index beside the output.
    #[command(flatten)]
    pub index: super::seek::WriteIndexArgs,
}

fn usage(m: impl Into<String>) -> Failure {
    super::common::error(EXIT_USAGE, "mtf::usage", m)
}

/// The failure for an import error: its class decides the exit status.
fn import_failure(e: &ImportError) -> Failure {
    let code = super::exit::for_import(e.class());
    // The library's help does not know the command's options: say them here.
    let help = match &e.kind {
        ImportErrorKind::Unmatched { cause: Some(_), .. } => Some(
            "--keep-unmatched imports it anyway, with those lines kept verbatim (exported back byte for byte)"
                .to_string(),
        ),
        ImportErrorKind::Unmatched { .. } => Some(
            "give the right format with --from (see mtf import --list), or --keep-unmatched to import it anyway with every unmatched line kept verbatim"
                .to_string(),
        ),
        ImportErrorKind::Undetected(_) => {
            Some("give the format with --from (see mtf import --list), or your own mapping with --map FILE".to_string())
        }
        _ => None,
    };
    match (help, e.code()) {
        (Some(h), Some(c)) => {
            Failure::diagnostic(code, &Flat::new(e.to_string(), &c.to_string(), Some(h)))
        }
        _ => Failure::diagnostic(code, e),
    }
}

/// The failure for a mapping's DTD that cannot be loaded.
pub fn mapping_dtd_failure(e: &MappingDtdError) -> Failure {
    match e {
        MappingDtdError::Load(e) => dtd_failure(e),
        other => Failure::diagnostic(EXIT_USAGE, other),
    }
}

/// Load a mapping file, printing its diagnostic on error.
pub fn load_mapping(path: &std::path::Path) -> Result<Mapping, Failure> {
    Mapping::load(path).map_err(|e| {
        eprint!("{}", render(&e));
        Failure::new(EXIT_USAGE, String::new())
    })
}

/// Print the shipped formats: name, description, DTD, mapping file and record names (each
/// once, in the order of the mapping's rules).
fn list() -> Result<i32, Failure> {
    use std::io::Write;
    let mut out = metatf::io::StdoutSink::new();
    out.write_all(shipped::listing().as_bytes())?;
    out.finish()?;
    Ok(EXIT_OK)
}

/// The mapping `--map` or `--from` names, if any.
fn given_mapping(args: &ImportArgs) -> Result<Option<Mapping>, Failure> {
    if let Some(p) = &args.map {
        Ok(Some(load_mapping(p)?))
    } else if let Some(f) = &args.from {
        Ok(Some(shipped::by_name(f).ok_or_else(|| {
            usage(format!("unknown format `{f}` (see mtf import --list)"))
        })?))
    } else {
        Ok(None)
    }
}

/// The shipped mapping whose format the first input has.
fn detected(first: &mut ImportInput) -> Result<Mapping, Failure> {
    let candidates: Vec<Mapping> = shipped::all().into_iter().map(|x| x.1).collect();
    let d = detect(first, &candidates).map_err(|e| import_failure(&e))?;
    // `-q`: only the warning of a close second is said.
    match &d.runner_up {
        Some(r) => eprintln!(
            "detected format {}; close second: {r} (give --from to choose)",
            d.best
        ),
        None if !super::common::quiet() => eprintln!("detected format {}", d.best),
        None => {}
    }
    candidates
        .into_iter()
        .nth(d.chosen)
        .ok_or_else(|| usage("no format detected"))
}

/// The DTD file the import used, to read the output back for its seek index: `--dtd`, else
/// the mapping's DTD beside the mapping (a built-in one is found by its name). The output's
/// folder need not hold it.
fn index_dtd(args: &ImportArgs, m: &Mapping) -> Option<PathBuf> {
    args.dtd.clone().or_else(|| {
        let dir = args.map.as_deref()?.parent()?;
        let dir = if dir.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            dir
        };
        let name = metatf::container::sanitize_dtd_name(&m.dtd).ok()?;
        match metatf::container::candidate(dir, name) {
            metatf::container::Candidate::Found(p) => Some(p),
            _ => None,
        }
    })
}

/// Run `mtf import`.
pub fn run(args: &ImportArgs) -> Result<i32, Failure> {
    if args.list {
        return list();
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
    let given = given_mapping(args)?;
    // Each input is opened once: what detection reads is imported too (`-`, pipes).
    let mut inputs = ImportInput::open_all(&args.inputs).map_err(|e| import_failure(&e))?;
    let m = match given {
        Some(m) => m,
        None => detected(&mut inputs[0])?,
    };
    let loaded = m
        .load_dtd(args.map.as_deref(), args.dtd.as_deref())
        .map_err(|e| mapping_dtd_failure(&e))?;
    // The DTD file the import used, to read the output back for its seek index: `--dtd`, else
    // the mapping's DTD beside the mapping (a built-in one is found by its name). The output's
    // folder need not hold it.
    let index_dtd = index_dtd(args, &m);
    print_warnings(&loaded.warnings);
    let schema = loaded.schema;
    let (inputs, container) = order_inputs(&m, inputs).map_err(|e| import_failure(&e))?;
    let names: Vec<String> = inputs.iter().map(|i| i.name().to_string()).collect();
    // `-o -` writes standard output; a device or FIFO is written directly; a regular file
    // appears only when complete.
    let writer = create_writer(&m, &schema, &out)
        .map_err(|e| Failure::diagnostic(super::exit::for_encode(&e), &e))?;
    let mut imp = Importer::new(&m, writer, &schema, container, inputs.len() as u64)
        .map_err(|e| import_failure(&e))?;
    imp.keep_unmatched(args.keep_unmatched);
    // A bar over the input bytes, when their total is known: regular, uncompressed files.
    let total: Option<u64> = inputs.iter().map(|i| i.size()).sum();
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
    for input in inputs {
        imp.import_input(input).map_err(|e| import_failure(&e))?;
    }
    let (writer, rep) = imp.finish().map_err(|e| import_failure(&e))?;
    let s = writer
        .finish()
        .map_err(|e| Failure::diagnostic(super::exit::for_encode(&e), &e))?;
    if !super::common::quiet() {
        summary(&names, &m, &rep, &out, &s);
    }
    super::seek::after_write(&out, index_dtd.as_deref(), &args.index)?;
    Ok(EXIT_OK)
}

/// What an import did, on standard error (not with `-q`).
fn summary(
    names: &[String],
    m: &Mapping,
    rep: &metatf::import::ImportReport,
    out: &std::path::Path,
    s: &metatf::encode::Summary,
) {
    eprintln!(
        "imported {} ({}): {} input bytes, {} units, {} as records of the format, {} kept as raw lines ({}%)",
        names.join(" "),
        m.name,
        rep.bytes_in,
        rep.units,
        rep.mapped,
        rep.raw,
        rep.raw_percent(),
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
    if let Some(c) = rep.cause() {
        eprintln!("kept raw: {c}");
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
        "wrote {}: {} bytes, {} records",
        super::common::input_name(out),
        s.bytes,
        s.nrecords
    );
}
