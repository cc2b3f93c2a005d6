//! SQL over raw traces with Apache DataFusion, with no conversion step (`mtf sql`): a trace's
//! tables as DataFusion `TableProvider`s read from the trace itself, registered in a
//! `SessionContext`. docs/query.md, *SQL: `mtf sql`*, has the tables and the naming.
//!
//! The tables of a trace:
//!
//! * one per record type, named and typed as `mtf export --to parquet` names and types its files
//!   (`alloc`, or `global.alloc` when several sections define `alloc`: quote it in SQL,
//!   `"global.alloc"`), with `record_index`, `byte_offset` and `section` first
//!   ([`crate::columnar::RecordTables`]);
//! * `records`: one row per record of the trace, of every type ([`records_schema`]);
//! * `events` and `blocks`, the heap tables of docs/query.md ([`crate::columnar::heap`]),
//!   when the DTD declares allocations.
//!
//! With several traces, the first trace's tables are also the plain names; trace K's (from 1)
//! are in the schema `tK`: `SELECT … FROM t2.blocks`.
//!
//! [`query`] is the blocking call of the command line and the Python package; [`SqlSession`]
//! runs several queries over the traces opened once, and hands batches over as they come.

mod provider;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

use crate::{OpenError, OpenOptions, Opened};

pub use datafusion;
pub use provider::TraceTables;

/// Why a query failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SqlError {
    /// A trace could not be opened.
    #[error("{}: {source}", crate::io::escape_path(path))]
    #[diagnostic(code(mtf::sql::open))]
    Open {
        /// The trace as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<OpenError>,
    },
    /// The query could not be planned: a syntax error, an unknown table or column, a type error.
    #[error("{message}\n  in the query: {query}")]
    #[diagnostic(code(mtf::sql::plan), help("{help}"))]
    Plan {
        /// DataFusion's message.
        message: String,
        /// The query.
        query: String,
        /// The tables there are, or how to see them.
        help: String,
    },
    /// The query failed while it ran (a trace's tables could not be read, a division by zero,
    /// an overflow).
    #[error("{message}")]
    #[diagnostic(code(mtf::sql::execute))]
    Execute {
        /// DataFusion's message (naming the trace when reading it failed).
        message: String,
    },
    /// The runtime that runs the query could not be started.
    #[error("starting the query's threads: {0}")]
    #[diagnostic(code(mtf::sql::runtime))]
    Runtime(String),
}

/// The schema of the `records` table: one row per record of the trace, of every type.
pub fn records_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![
        Field::new("record_index", DataType::UInt64, false),
        Field::new("byte_offset", DataType::UInt64, false),
        Field::new("section", DataType::UInt8, false),
        Field::new("record", DataType::Utf8, false),
    ]))
}

/// One trace for a [`SqlSession`]: how it is named in messages, and the trace opened.
pub struct SqlTrace {
    /// The trace as the user gave it (`-` for standard input).
    pub path: PathBuf,
    /// The trace, opened as every command opens it (not as a stream: a query may read it
    /// several times).
    pub opened: Opened,
}

/// Several queries over traces opened once.
pub struct SqlSession {
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
    traces: Vec<Arc<TraceTables>>,
}

// Design: a multi-threaded tokio runtime of its own, built per session (cheap beside any
// trace's decode), so that a blocking caller (the command line, the Python package) needs no
// async code, and so that DataFusion's partitions run on all cores; the decode of each
// partition runs on tokio's blocking threads, handing batches over a bounded channel.
impl SqlSession {
    /// A session over `traces`: the first trace's tables under their plain names, trace K's
    /// (from 1) also in the schema `tK`.
    pub fn new(traces: Vec<SqlTrace>) -> Result<SqlSession, SqlError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| SqlError::Runtime(e.to_string()))?;
        // DataFusion's options from the environment (`DATAFUSION_EXECUTION_TARGET_PARTITIONS`,
        // `DATAFUSION_EXECUTION_BATCH_SIZE`, …); its defaults where none is set or one is bad.
        let mut config = SessionConfig::from_env()
            .unwrap_or_default()
            .with_information_schema(true);
        // Design: names as the DTD writes them (`createHeap`, `nmemb`): unquoted identifiers are
        // not folded to lower case, so that a record type or field of mixed case is named
        // without quotes (function names and keywords stay case-insensitive).
        config.options_mut().sql_parser.enable_ident_normalization = false;
        let ctx = SessionContext::new_with_config(config);
        let mut tables = Vec::new();
        for (k, t) in traces.into_iter().enumerate() {
            let tt = Arc::new(TraceTables::new(t.path, t.opened));
            provider::register(&ctx, &format!("t{}", k + 1), tt.clone(), k == 0);
            tables.push(tt);
        }
        Ok(SqlSession {
            ctx,
            runtime,
            traces: tables,
        })
    }

    /// The traces, in the order given.
    pub fn traces(&self) -> &[Arc<TraceTables>] {
        &self.traces
    }

    /// The query's result schema and batches, each handed to `batch` as it comes (`false` from
    /// it stops the query: a reader that went away).
    pub fn run(
        &self,
        sql: &str,
        batch: &mut dyn FnMut(&RecordBatch) -> bool,
    ) -> Result<SchemaRef, SqlError> {
        self.runtime.block_on(async {
            let df = self
                .ctx
                .sql(sql)
                .await
                .map_err(|e| self.plan_error(sql, e))?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            let mut stream = df
                .execute_stream()
                .await
                .map_err(|e| self.plan_error(sql, e))?;
            while let Some(b) = stream.next().await {
                let b = b.map_err(|e| SqlError::Execute { message: clean(&e) })?;
                if b.num_rows() > 0 && !batch(&b) {
                    break;
                }
            }
            Ok(schema)
        })
    }

    /// The query's result: its schema and every batch.
    pub fn collect(&self, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
        let mut out = Vec::new();
        let schema = self.run(sql, &mut |b| {
            out.push(b.clone());
            true
        })?;
        Ok((schema, out))
    }

    /// The names of the tables, as a query names them (the first trace's plain names).
    pub fn table_names(&self) -> Vec<String> {
        self.traces.first().map_or_else(Vec::new, |t| t.names())
    }

    fn plan_error(&self, sql: &str, e: datafusion::error::DataFusionError) -> SqlError {
        let message = clean(&e);
        let mut help = format!("tables: {}", self.table_names().join(", "));
        if self.traces.len() > 1 {
            help.push_str(&format!(
                "; trace K's tables also as tK.TABLE (t1 … t{})",
                self.traces.len()
            ));
        }
        if matches!(e.find_root(), datafusion::error::DataFusionError::SQL(..)) {
            help = format!("DataFusion's SQL dialect (PostgreSQL-like); {help}");
        }
        SqlError::Plan {
            message,
            query: sql.to_string(),
            help,
        }
    }
}

/// DataFusion's message without its `Error during planning:` wrapping repeated.
fn clean(e: &datafusion::error::DataFusionError) -> String {
    e.find_root().to_string()
}

/// Run `sql` over the traces at `paths` (files, `-` for standard input, pipes, compressed
/// traces; each with the DTD its header names, as [`crate::open`] finds it): the result's schema
/// and batches. The first trace's tables have their plain names (`blocks`), trace K's (from 1)
/// are also `tK.blocks`.
pub fn query(paths: &[PathBuf], sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
    let options = OpenOptions::from_env().unwrap_or_default();
    let mut traces = Vec::with_capacity(paths.len());
    for p in paths {
        traces.push(open_trace(&options, p)?);
    }
    SqlSession::new(traces)?.collect(sql)
}

/// A trace opened for a session.
pub fn open_trace(options: &OpenOptions, path: &Path) -> Result<SqlTrace, SqlError> {
    let opened = options.open(path).map_err(|e| SqlError::Open {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    Ok(SqlTrace {
        path: path.to_path_buf(),
        opened,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;

    fn android() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/android.mtf")
    }

    #[test]
    fn query_counts_the_records_the_header_states() {
        let t = android();
        let (schema, batches) = query(
            std::slice::from_ref(&t),
            "SELECT count(*) AS n FROM records",
        )
        .expect("runs");
        assert_eq!(schema.field(0).name(), "n");
        let n = batches[0].column(0).as_primitive::<Int64Type>().value(0);
        let header = crate::open(&t).expect("opens").trace().header().nrecords;
        assert_eq!(n as u64, header);
    }

    #[test]
    fn errors_are_typed_and_name_the_trace_or_the_tables() {
        let missing = PathBuf::from("/nonexistent/x.mtf");
        let e = query(std::slice::from_ref(&missing), "SELECT 1").unwrap_err();
        assert!(matches!(e, SqlError::Open { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/x.mtf"), "{e}");
        let e = query(&[android()], "SELECT * FROM nosuch").unwrap_err();
        let SqlError::Plan { help, query, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(help.contains("records, events, blocks"), "{help}");
        assert_eq!(query, "SELECT * FROM nosuch");
    }

    #[test]
    fn a_limit_stops_the_scan_and_a_projection_gives_one_column() {
        let (schema, batches) =
            query(&[android()], "SELECT size FROM blocks LIMIT 2").expect("runs");
        assert_eq!(schema.fields().len(), 1);
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, 2);
    }
}
