//! `mtf sql "QUERY" TRACE…`: SQL over raw traces with Apache DataFusion (`metatf::sql`), the
//! result as an aligned table, CSV or JSON lines. Built with the feature `sql` only; without it
//! the subcommand is there and says how to build it.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[cfg(not(feature = "sql"))]
use super::common::error;
use super::common::Failure;
#[cfg(not(feature = "sql"))]
use super::EXIT_USAGE;

/// The tables, under `mtf sql --help`.
const TABLES: &str = "Tables (docs/query.md, \"SQL: mtf sql\"):
  records         one row per record of the trace: record_index, byte_offset, section, record
                  (the record type's name)
  events          one row per heap event (where the DTD declares allocations): record,
                  record_index, kind, namespace, key, id, size, old_id, old_size, align, time,
                  thread, site, site_name, stack
  blocks          one row per block lifetime: namespace, key, id, last_id, size, alloc_record,
                  free_record (NULL while alive at the end), alloc_time, free_time, thread,
                  free_thread, site, site_name, stack, ended_by
  RECORD          one per record type, as `mtf export --to parquet` names and types its files:
                  record_index, byte_offset, section, then the DTD's fields (a name with a dot,
                  SECTION.RECORD, is quoted: \"global.alloc\")
With several traces, the first trace's tables have the plain names and trace K's (from 1) are
also tK.TABLE: SELECT count(*) FROM t1.blocks UNION ALL SELECT count(*) FROM t2.blocks.
`SHOW TABLES` lists them; `DESCRIBE blocks` shows a table's columns.

Example, the peak of live bytes per namespace (equal to `mtf stats`):
  WITH d AS (SELECT namespace, alloc_record AS r, CAST(size AS DECIMAL(38,0)) AS delta
             FROM blocks WHERE size IS NOT NULL
             UNION ALL SELECT namespace, free_record, -CAST(size AS DECIMAL(38,0))
             FROM blocks WHERE size IS NOT NULL AND free_record IS NOT NULL),
       live AS (SELECT namespace, r, sum(sum(delta)) OVER (PARTITION BY namespace ORDER BY r)
                AS bytes FROM d GROUP BY namespace, r)
  SELECT namespace, max(bytes) AS peak FROM live GROUP BY namespace";

/// Arguments of `mtf sql`.
#[derive(Debug, Args)]
#[command(after_long_help = TABLES)]
pub struct SqlArgs {
    /// The query, in DataFusion's SQL dialect (PostgreSQL-like).
    pub query: String,
    /// The traces (`-` for standard input; pipes and compressed traces too): the first one's
    /// tables by their plain names, trace K's also as `tK.TABLE`.
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// How the result is printed: `table` (aligned columns, numbers to the right), `csv` (with a
    /// header), `json` (JSON lines: one object per row).
    #[arg(short, long, value_enum, default_value_t = SqlFormat::Table)]
    pub format: SqlFormat,
    /// The DTD to use instead of the one each trace's header names (for every trace).
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Write the result to this file (default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Output of `mtf sql`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SqlFormat {
    /// An aligned text table.
    Table,
    /// Comma-separated values with a header line.
    Csv,
    /// JSON lines: one object per row, the columns as keys.
    Json,
}

/// Runs `mtf sql`.
#[cfg(not(feature = "sql"))]
pub fn run(args: &SqlArgs) -> Result<i32, Failure> {
    // The arguments are parsed (a usage error is said first) but not used.
    let _ = (
        &args.query,
        &args.traces,
        args.format,
        &args.dtd,
        &args.output,
    );
    Err(error(
        EXIT_USAGE,
        "mtf::usage::feature",
        "this mtf was built without SQL (Apache DataFusion, the feature `sql`): install it with \
         `cargo install --path crates/mtf --features sql`, or run \
         `cargo run --release --features sql -- sql \"QUERY\" TRACE` in the repository",
    ))
}

/// Runs `mtf sql`.
#[cfg(feature = "sql")]
pub fn run(args: &SqlArgs) -> Result<i32, Failure> {
    with_sql::run(args)
}

#[cfg(feature = "sql")]
mod with_sql {
    use std::io::Write;

    use metatf::sql::datafusion::arrow::array::{Array, RecordBatch};
    use metatf::sql::datafusion::arrow::datatypes::{DataType, SchemaRef};
    use metatf::sql::datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    use metatf::sql::{SqlError, SqlSession, SqlTrace};

    use super::super::common::{error_text, line_to_stderr, open, Failure};
    use super::super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};
    use super::{SqlArgs, SqlFormat};

    pub(super) fn run(args: &SqlArgs) -> Result<i32, Failure> {
        let mut traces = Vec::with_capacity(args.traces.len());
        for p in &args.traces {
            let opened = open(p, args.dtd.as_deref())?;
            traces.push(SqlTrace {
                path: p.clone(),
                opened,
            });
        }
        let session = SqlSession::new(traces).map_err(|e| failure(&e))?;
        let mut out: Box<dyn Sink> = match args.output.as_deref() {
            Some(p) if p.as_os_str() != "-" => Box::new(FileSink(
                metatf::io::Output::create(p).map_err(|e| super::super::common::io_failure(&e))?,
            )),
            _ => Box::new(StdoutSink(metatf::io::StdoutSink::new())),
        };
        let mut table = Table::default();
        let mut written = Ok(());
        let mut header = true;
        let schema = session
            .run(&args.query, &mut |b| {
                let r = match args.format {
                    SqlFormat::Table => {
                        table.add(b);
                        Ok(())
                    }
                    SqlFormat::Csv => {
                        let r = csv(out.as_mut(), b, header);
                        header = false;
                        r
                    }
                    SqlFormat::Json => json(out.as_mut(), b),
                };
                written = r;
                written.is_ok()
            })
            .map_err(|e| failure(&e))?;
        written?;
        match args.format {
            SqlFormat::Table => out.write_all(table.render(&schema).as_bytes())?,
            // A result without rows still has its header.
            SqlFormat::Csv if header => out.write_all(csv_header(&schema).as_bytes())?,
            _ => {}
        }
        out.finish()?;
        let mut code = EXIT_OK;
        for t in session.traces() {
            let n = t.problems();
            if n > 0 {
                line_to_stderr(&error_text(
                    "mtf::sql::damaged",
                    format!(
                        "{}: {n} record(s) or region(s) could not be decoded and are not in the tables (`mtf check` lists them)",
                        metatf::io::escape_path(t.path())
                    ),
                ));
                code = EXIT_INVALID_TRACE;
            }
        }
        Ok(code)
    }

    fn failure(e: &SqlError) -> Failure {
        Failure::diagnostic(EXIT_USAGE, e)
    }

    /// Where the result goes.
    trait Sink: Write {
        fn finish(self: Box<Self>) -> Result<(), Failure>;
    }

    struct StdoutSink(metatf::io::StdoutSink);

    impl Write for StdoutSink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.0.flush()
        }
    }

    impl Sink for StdoutSink {
        fn finish(self: Box<Self>) -> Result<(), Failure> {
            Ok(self.0.finish()?)
        }
    }

    struct FileSink(metatf::io::Output);

    impl Write for FileSink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.0.flush()
        }
    }

    impl Sink for FileSink {
        fn finish(self: Box<Self>) -> Result<(), Failure> {
            let FileSink(out) = *self;
            out.commit()
                .map_err(|e| super::super::common::io_failure(&e))
        }
    }

    fn options() -> FormatOptions<'static> {
        FormatOptions::default().with_null("NULL")
    }

    /// Whether a column's values are numbers (right-aligned; bare in JSON).
    fn numeric(t: &DataType) -> bool {
        t.is_numeric()
    }

    /// The rows of a result, as text, for the aligned table.
    #[derive(Default)]
    struct Table {
        rows: Vec<Vec<String>>,
    }

    impl Table {
        fn add(&mut self, b: &RecordBatch) {
            let opts = options();
            let cols: Vec<_> = b
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
                .collect();
            for r in 0..b.num_rows() {
                let row = cols
                    .iter()
                    .map(|f| match f {
                        Ok(f) => f.value(r).to_string(),
                        Err(e) => format!("<{e}>"),
                    })
                    .collect();
                self.rows.push(row);
            }
        }

        fn render(&self, schema: &SchemaRef) -> String {
            let fields = schema.fields();
            let mut width: Vec<usize> = fields.iter().map(|f| f.name().chars().count()).collect();
            for row in &self.rows {
                for (w, v) in width.iter_mut().zip(row) {
                    *w = (*w).max(v.chars().count());
                }
            }
            let right: Vec<bool> = fields.iter().map(|f| numeric(f.data_type())).collect();
            let mut s = String::new();
            let line = |s: &mut String, cells: &mut dyn Iterator<Item = (usize, &str)>| {
                let mut first = true;
                for (i, v) in cells {
                    if !first {
                        s.push_str("  ");
                    }
                    first = false;
                    let pad = width[i].saturating_sub(v.chars().count());
                    if right[i] {
                        s.extend(std::iter::repeat_n(' ', pad));
                        s.push_str(v);
                    } else {
                        s.push_str(v);
                        s.extend(std::iter::repeat_n(' ', pad));
                    }
                }
                while s.ends_with(' ') {
                    s.pop();
                }
                s.push('\n');
            };
            line(
                &mut s,
                &mut fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (i, f.name().as_str())),
            );
            let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
            line(
                &mut s,
                &mut rule.iter().enumerate().map(|(i, r)| (i, r.as_str())),
            );
            for row in &self.rows {
                line(
                    &mut s,
                    &mut row.iter().enumerate().map(|(i, v)| (i, v.as_str())),
                );
            }
            let n = self.rows.len();
            s.push_str(&format!("({n} row{})\n", if n == 1 { "" } else { "s" }));
            s
        }
    }

    /// A CSV field, quoted where it must be (RFC 4180).
    fn csv_field(v: &str) -> String {
        if v.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", v.replace('"', "\"\""))
        } else {
            v.to_string()
        }
    }

    fn csv_header(schema: &SchemaRef) -> String {
        let names: Vec<String> = schema
            .fields()
            .iter()
            .map(|f| csv_field(f.name()))
            .collect();
        format!("{}\n", names.join(","))
    }

    fn csv(out: &mut dyn Sink, b: &RecordBatch, header: bool) -> Result<(), Failure> {
        if header {
            out.write_all(csv_header(&b.schema()).as_bytes())?;
        }
        let opts = FormatOptions::default();
        let cols = formatters(b, &opts)?;
        let mut line = String::new();
        for r in 0..b.num_rows() {
            line.clear();
            for (i, (c, f)) in b.columns().iter().zip(&cols).enumerate() {
                if i > 0 {
                    line.push(',');
                }
                if c.is_valid(r) {
                    line.push_str(&csv_field(&f.value(r).to_string()));
                }
            }
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    fn formatters<'a>(
        b: &'a RecordBatch,
        opts: &'a FormatOptions<'a>,
    ) -> Result<Vec<ArrayFormatter<'a>>, Failure> {
        b.columns()
            .iter()
            .map(|c| {
                ArrayFormatter::try_new(c.as_ref(), opts).map_err(|e| {
                    Failure::new(
                        EXIT_USAGE,
                        error_text("mtf::sql::execute", format!("formatting the result: {e}")),
                    )
                })
            })
            .collect()
    }

    fn json(out: &mut dyn Sink, b: &RecordBatch) -> Result<(), Failure> {
        let opts = FormatOptions::default();
        let cols = formatters(b, &opts)?;
        let schema = b.schema();
        let names: Vec<String> = schema
            .fields()
            .iter()
            .map(|f| serde_json::to_string(f.name()).unwrap_or_default())
            .collect();
        let bare: Vec<bool> = schema
            .fields()
            .iter()
            .map(|f| numeric(f.data_type()) || *f.data_type() == DataType::Boolean)
            .collect();
        let mut line = String::new();
        for r in 0..b.num_rows() {
            line.clear();
            line.push('{');
            for (i, (c, f)) in b.columns().iter().zip(&cols).enumerate() {
                if i > 0 {
                    line.push(',');
                }
                line.push_str(&names[i]);
                line.push(':');
                if !c.is_valid(r) {
                    line.push_str("null");
                    continue;
                }
                let v = f.value(r).to_string();
                if bare[i] {
                    // NaN and infinities are not JSON numbers.
                    if v.parse::<f64>().is_ok_and(f64::is_finite) {
                        line.push_str(&v);
                    } else {
                        line.push_str("null");
                    }
                } else {
                    line.push_str(&serde_json::to_string(&v).unwrap_or_default());
                }
            }
            line.push_str("}\n");
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }
}
