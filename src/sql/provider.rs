//! A trace's tables as DataFusion providers: a `SchemaProvider` that lists them and makes each
//! `TableProvider` when a query names it, and one `ExecutionPlan` that decodes the trace for a
//! scan, a partition at a time, on tokio's blocking threads.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arrow_array::builder::{StringBuilder, UInt64Builder, UInt8Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::ScalarValue;
use datafusion::common::Statistics;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;

use crate::columnar::{file_name, HeapOptions, HeapRows, HeapTable, RecordTables, SiteNames};
use crate::decode::{Event, Reader, Records};
use crate::dtd::RecordId;
use crate::index::analysis::{births_path, state_path, AnalysisState};
use crate::index::Index;
use crate::Opened;

/// What a table of a trace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `records`: every record, one row each.
    Records,
    /// One record type's table.
    Type(RecordId),
    /// `events` or `blocks`.
    Heap(HeapTable),
}

/// One trace's tables: the trace opened, what its tables are called, and what is learnt of it
/// once and kept (the records tables' column types, the site names that come late, the seek
/// index's checkpoints).
pub struct TraceTables {
    path: PathBuf,
    name: String,
    opened: Opened,
    tables: Vec<(String, Kind)>,
    columns: OnceLock<RecordTables>,
    late_names: OnceLock<Arc<SiteNames>>,
    index: OnceLock<Option<Index>>,
    state: OnceLock<Option<AnalysisState>>,
    births: OnceLock<Option<AnalysisState>>,
}

impl fmt::Debug for TraceTables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceTables")
            .field("path", &self.path)
            .field("tables", &self.tables)
            .finish()
    }
}

impl TraceTables {
    /// The tables of the trace `opened`, given as `path`.
    pub fn new(path: PathBuf, opened: Opened) -> TraceTables {
        let name = if path.as_os_str() == "-" {
            "<stdin>".to_string()
        } else {
            crate::io::escape_path(&path).into_owned()
        };
        let schema = opened.schema();
        let mut tables = vec![("records".to_string(), Kind::Records)];
        // The heap tables where the DTD declares allocations.
        if HeapRows::new(schema, HeapTable::Blocks, HeapOptions::default()).is_ok() {
            for t in HeapTable::ALL {
                tables.push((t.name().to_string(), Kind::Heap(t)));
            }
        }
        for (id, rt) in schema.records.iter().enumerate() {
            if matches!(
                rt.builtin,
                Some(crate::dtd::Builtin::Section | crate::dtd::Builtin::Metadata)
            ) {
                continue;
            }
            let file = file_name(schema, id as RecordId);
            let table = file.strip_suffix(".parquet").unwrap_or(&file).to_string();
            // `records` is this module's: a record type of that name is `global.records`.
            let table = if table == "records" {
                "global.records".to_string()
            } else {
                table
            };
            tables.push((table, Kind::Type(id as RecordId)));
        }
        TraceTables {
            path,
            name,
            opened,
            tables,
            columns: OnceLock::new(),
            late_names: OnceLock::new(),
            index: OnceLock::new(),
            state: OnceLock::new(),
            births: OnceLock::new(),
        }
    }

    /// The trace as given.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The tables' names: `records`, `events` and `blocks` (where the DTD declares
    /// allocations), then one per record type.
    pub fn names(&self) -> Vec<String> {
        self.tables.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Records that could not be decoded and damaged regions met by the records tables' first
    /// pass (0 before any records table was asked for).
    pub fn problems(&self) -> u64 {
        self.columns.get().map_or(0, RecordTables::problems)
    }

    /// The records tables' column types: one pass over the trace, the first time.
    fn columns(&self) -> &RecordTables {
        self.columns
            .get_or_init(|| RecordTables::observe(&self.opened.reader()))
    }

    /// The seek index beside the trace, when it fits it.
    fn index(&self) -> Option<&Index> {
        self.index
            .get_or_init(|| {
                let p = crate::index::sidecar(&self.path)?;
                if !p.is_file() {
                    return None;
                }
                let idx = Index::load(&p).ok()?;
                idx.fits(&self.opened.reader()).ok()?;
                Some(idx)
            })
            .as_ref()
    }

    /// The analysis states beside the seek index (`mtf index` writes them), when they fit it
    /// and the DTD.
    fn state(&self) -> Option<&AnalysisState> {
        self.state
            .get_or_init(|| {
                let idx = self.index()?;
                let p = state_path(&crate::index::sidecar(&self.path)?)?;
                if !p.is_file() {
                    return None;
                }
                let st = AnalysisState::load(&p).ok()?;
                st.fits(idx, self.opened.schema()).ok()?;
                Some(st)
            })
            .as_ref()
    }

    /// The births of the live blocks beside the seek index (`mtf index --births`), when they
    /// fit it and the DTD.
    fn births(&self) -> Option<&AnalysisState> {
        self.births
            .get_or_init(|| {
                let idx = self.index()?;
                let p = births_path(&crate::index::sidecar(&self.path)?)?;
                if !p.is_file() {
                    return None;
                }
                let b = AnalysisState::load_births(&p).ok()?;
                b.fits(idx, self.opened.schema()).ok()?;
                Some(b)
            })
            .as_ref()
    }

    /// The names of the sites that a trace gives after the rows that need them (an imported
    /// heaptrack trace's): a pass of the heap events, the first time `site_name` is asked for.
    fn late_names(&self) -> Result<Arc<SiteNames>> {
        if let Some(n) = self.late_names.get() {
            return Ok(n.clone());
        }
        let reader = self.opened.reader();
        let mut rows = HeapRows::new(
            self.opened.schema(),
            HeapTable::Events,
            HeapOptions {
                records: u64::MAX..u64::MAX,
                ..HeapOptions::default()
            },
        )
        .map_err(|e| self.error(e))?;
        let mut records = reader.records();
        while let Some(event) = records.next() {
            match event {
                Event::Record(v) => rows.record(&v).map_err(|e| self.error(e))?,
                Event::Problem(_) | Event::Damage(_) => rows.problem(String::new),
            }
        }
        rows.finish().map_err(|e| self.error(e))?;
        let names = Arc::new(rows.late_names());
        Ok(self.late_names.get_or_init(|| names).clone())
    }

    fn error(&self, e: impl fmt::Display) -> DataFusionError {
        DataFusionError::Execution(format!("{}: {e}", self.name))
    }

    /// The provider of table `name`.
    fn provider(self: &Arc<Self>, name: &str) -> Option<Arc<dyn TableProvider>> {
        let kind = self.tables.iter().find(|(n, _)| n == name)?.1;
        let (schema, rows) = match kind {
            // Before the records tables' pass, the header's record count (a salvaged or
            // damaged trace may hold fewer): an estimate.
            Kind::Records => (
                super::records_schema(),
                Some(self.columns.get().map_or_else(
                    || {
                        Precision::Inexact(
                            self.opened.trace().header().nrecords.min(usize::MAX as u64) as usize,
                        )
                    },
                    |c| Precision::Exact(c.records() as usize),
                )),
            ),
            Kind::Type(id) => {
                let c = self.columns();
                (c.schema(id)?, Some(Precision::Exact(c.rows(id) as usize)))
            }
            Kind::Heap(t) => (t.schema(), None),
        };
        Some(Arc::new(TraceTable {
            trace: self.clone(),
            kind,
            schema,
            rows: rows.unwrap_or(Precision::Absent),
        }))
    }
}

/// Registers the tables of `trace` as the schema `schema` of the default catalog, and as its
/// default schema (the plain names) when `plain`.
pub(super) fn register(ctx: &SessionContext, schema: &str, trace: Arc<TraceTables>, plain: bool) {
    let Some(catalog) = ctx.catalog("datafusion") else {
        return;
    };
    let provider = Arc::new(TraceSchema { trace });
    if plain {
        let _ = catalog.register_schema("public", provider.clone());
    }
    let _ = catalog.register_schema(schema, provider);
}

/// The tables of one trace, made when a query names them.
#[derive(Debug)]
struct TraceSchema {
    trace: Arc<TraceTables>,
}

#[async_trait]
impl SchemaProvider for TraceSchema {
    fn table_names(&self) -> Vec<String> {
        self.trace.names()
    }

    // Design: the records tables' types come from a pass over the whole trace (the export's
    // first pass), made the first time a query names one of them and kept: a query of `blocks`
    // alone does not pay for it. It runs here, on the planner's thread.
    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(self.trace.provider(name))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.trace.tables.iter().any(|(n, _)| n == name)
    }
}

/// One table of a trace.
#[derive(Debug)]
struct TraceTable {
    trace: Arc<TraceTables>,
    kind: Kind,
    schema: SchemaRef,
    rows: Precision<usize>,
}

#[async_trait]
impl TableProvider for TraceTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(Statistics::new_unknown(&self.schema).with_num_rows(self.rows))
    }

    // Design: a filter on `events.record` (a comparison with a number, or BETWEEN) narrows the
    // data records read: a scan starts at the last checkpoint with a state before the range
    // and stops after it, so that a query of one moment of a long trace reads that moment.
    // DataFusion still applies the filter to the rows (inexact: the range is a superset).
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if self.kind == Kind::Heap(HeapTable::Events) && record_bound(f).is_some() {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projected = match projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => self.schema.clone(),
        };
        let most = state.config().target_partitions();
        let parts = match self.kind {
            Kind::Heap(HeapTable::Events) => {
                let range = filters
                    .iter()
                    .filter_map(record_bound)
                    .fold((0, u64::MAX), |a, b| (a.0.max(b.0), a.1.min(b.1)));
                self.heap_parts(HeapTable::Events, most, range)
            }
            Kind::Heap(HeapTable::Blocks) => {
                self.heap_parts(HeapTable::Blocks, most, (0, u64::MAX))
            }
            _ => self.parts(most),
        };
        let rows = match (self.rows, limit) {
            (Precision::Exact(n), Some(l)) => Precision::Exact(n.min(l)),
            (Precision::Inexact(n), Some(l)) => Precision::Inexact(n.min(l)),
            (r, _) => r,
        };
        let props = PlanProperties::new(
            EquivalenceProperties::new(projected.clone()),
            Partitioning::UnknownPartitioning(parts.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        let site_names = match (self.kind, projection) {
            (Kind::Heap(_), Some(p)) if !p.iter().any(|&i| self.is_site_name(i)) => None,
            (Kind::Heap(_), _) => Some(self.trace.late_names()?),
            _ => None,
        };
        Ok(Arc::new(TraceScan {
            trace: self.trace.clone(),
            kind: self.kind,
            projection: projection.cloned(),
            schema: projected,
            limit,
            parts,
            rows,
            site_names,
            props: Arc::new(props),
        }))
    }
}

impl TraceTable {
    fn is_site_name(&self, i: usize) -> bool {
        self.schema.field(i).name() == "site_name"
    }

    // Design: the records tables are cut at the seek index's checkpoints (`mtf index T`), each
    // part decoded from its checkpoint to the next on a thread of its own; at most `most` parts
    // (DataFusion's target partitions: the cores), every k-th checkpoint taken when the index
    // has more. A trace without an index is one part. A part of `events` needs the interpreter's
    // state and the sizes of the blocks alive where it starts: it is cut only at checkpoints
    // that carry an analysis state (`INDEX.state`), and resumed from it; `blocks` only at those
    // that carry the births of their live blocks too (`mtf index --births`): a lifetime that
    // spans a checkpoint needs its birth, which a state does not keep (docs/query.md,
    // *Partitions*).
    fn parts(&self, most: usize) -> Vec<Part> {
        let whole = vec![Part {
            from: None,
            until: None,
            data: None,
        }];
        if matches!(self.kind, Kind::Heap(_)) || most < 2 {
            return whole;
        }
        let Some(idx) = self.trace.index() else {
            return whole;
        };
        // The checkpoints taken, with the record each starts at.
        let every = (idx.entries().len() + 1).div_ceil(most).max(1);
        let cuts: Vec<(usize, u64)> = idx
            .entries()
            .iter()
            .enumerate()
            .skip(every - 1)
            .step_by(every)
            .map(|(i, e)| (i, e.record))
            .filter(|&(_, r)| r > 0)
            .collect();
        if cuts.is_empty() {
            return whole;
        }
        let mut parts = Vec::with_capacity(cuts.len() + 1);
        parts.push(Part {
            from: None,
            until: Some(cuts[0].1),
            data: None,
        });
        for (k, &(i, _)) in cuts.iter().enumerate() {
            parts.push(Part {
                from: Some(i),
                until: cuts.get(k + 1).map(|c| c.1),
                data: None,
            });
        }
        parts
    }

    /// The parts of a heap table for the data records `lo..hi`: from the last checkpoint it
    /// can resume at, at or before `lo` (or the start), cut at those inside the range, as
    /// evenly as the records tables' parts. `events` resumes where the checkpoint has an
    /// analysis state, `blocks` where it has the births of its live blocks too.
    fn heap_parts(&self, table: HeapTable, most: usize, (lo, hi): (u64, u64)) -> Vec<Part> {
        // The checkpoints it can resume at, and the data records before each.
        let mut with: Vec<(usize, u64)> = Vec::new();
        let births = match table {
            HeapTable::Blocks => self.trace.births(),
            HeapTable::Events => None,
        };
        let usable =
            |i: usize| table == HeapTable::Events || births.is_some_and(|b| b.entry(i).is_some());
        if let (Some(idx), Some(state)) = (self.trace.index(), self.trace.state()) {
            for i in (0..idx.entries().len()).filter(|&i| usable(i)) {
                let Some(blob) = state.entry(i) else { continue };
                let Ok(head) = crate::analysis::stats::state_head(blob) else {
                    continue;
                };
                if head.data > with.last().map_or(0, |w| w.1) {
                    with.push((i, head.data));
                }
            }
        }
        let start = with.iter().rev().find(|w| w.1 <= lo).map(|w| w.0);
        let inside: Vec<(usize, u64)> = with.into_iter().filter(|w| w.1 > lo && w.1 < hi).collect();
        let every = (inside.len() + 1).div_ceil(most.max(1)).max(1);
        let cuts: Vec<(usize, u64)> = inside.into_iter().skip(every - 1).step_by(every).collect();
        let mut parts = vec![Part {
            from: start,
            until: None,
            data: Some((lo, cuts.first().map_or(hi, |c| c.1))),
        }];
        for (k, &(i, data)) in cuts.iter().enumerate() {
            parts.push(Part {
                from: Some(i),
                until: None,
                data: Some((data, cuts.get(k + 1).map_or(hi, |c| c.1))),
            });
        }
        parts
    }
}

/// The data records a filter on `events.record` leaves (`lo..hi`), where it is a comparison of
/// the column with an integer or a BETWEEN of two.
fn record_bound(f: &Expr) -> Option<(u64, u64)> {
    use datafusion::logical_expr::{Between, BinaryExpr, Operator};
    let is_record = |e: &Expr| matches!(e, Expr::Column(c) if c.name == "record");
    let int = |e: &Expr| match e {
        Expr::Literal(v, _) => match v {
            ScalarValue::Int8(Some(x)) => Some(i128::from(*x)),
            ScalarValue::Int16(Some(x)) => Some(i128::from(*x)),
            ScalarValue::Int32(Some(x)) => Some(i128::from(*x)),
            ScalarValue::Int64(Some(x)) => Some(i128::from(*x)),
            ScalarValue::UInt8(Some(x)) => Some(i128::from(*x)),
            ScalarValue::UInt16(Some(x)) => Some(i128::from(*x)),
            ScalarValue::UInt32(Some(x)) => Some(i128::from(*x)),
            ScalarValue::UInt64(Some(x)) => Some(i128::from(*x)),
            _ => None,
        },
        _ => None,
    };
    let clamp = |x: i128| x.clamp(0, i128::from(u64::MAX)) as u64;
    let (lo, hi): (i128, i128) = match f {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (v, op) = if is_record(left) {
                (int(right)?, *op)
            } else if is_record(right) {
                (int(left)?, op.swap()?)
            } else {
                return None;
            };
            match op {
                Operator::Eq => (v, v + 1),
                Operator::Gt => (v + 1, i128::MAX),
                Operator::GtEq => (v, i128::MAX),
                Operator::Lt => (0, v),
                Operator::LtEq => (0, v + 1),
                _ => return None,
            }
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if is_record(expr) => (int(low)?, int(high)? + 1),
        _ => return None,
    };
    Some((clamp(lo), clamp(hi).max(clamp(lo))))
}

/// A part of a scan: from the start or a checkpoint of the seek index, to the record of index
/// `until` (excluded) or the end; for `events`, the rows of the data records `data` (a range,
/// counted from the start of the trace), resumed from the checkpoint's analysis state.
#[derive(Debug, Clone, Copy)]
struct Part {
    from: Option<usize>,
    until: Option<u64>,
    data: Option<(u64, u64)>,
}

/// The scan of one table of a trace.
#[derive(Debug)]
struct TraceScan {
    trace: Arc<TraceTables>,
    kind: Kind,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    limit: Option<usize>,
    parts: Vec<Part>,
    rows: Precision<usize>,
    site_names: Option<Arc<SiteNames>>,
    props: Arc<PlanProperties>,
}

impl DisplayAs for TraceScan {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = self
            .trace
            .tables
            .iter()
            .find(|(_, k)| *k == self.kind)
            .map_or("?", |(n, _)| n.as_str());
        write!(
            f,
            "TraceScan: {} of {}, {} part(s)",
            table,
            self.trace.name,
            self.parts.len()
        )?;
        let first = self.parts.first().and_then(|p| p.data);
        let last = self.parts.last().and_then(|p| p.data);
        if let (Some((lo, _)), Some((_, hi))) = (first, last) {
            match (lo, hi) {
                (0, u64::MAX) => {}
                (lo, u64::MAX) => write!(f, ", data records from {lo}")?,
                (lo, hi) => write!(f, ", data records {lo}..{hi}")?,
            }
        }
        if let Some(l) = self.limit {
            write!(f, ", limit {l}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for TraceScan {
    fn name(&self) -> &str {
        "TraceScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        // A part's rows are not known apart: the table's shared by its parts, an estimate.
        let k = self.parts.len();
        let rows = match (partition, self.rows) {
            (Some(_), Precision::Exact(n) | Precision::Inexact(n)) if k > 1 => {
                Precision::Inexact(n / k)
            }
            (_, r) => r,
        };
        Ok(Arc::new(
            Statistics::new_unknown(&self.schema).with_num_rows(rows),
        ))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let part = *self
            .parts
            .get(partition)
            .ok_or_else(|| DataFusionError::Internal(format!("no part {partition}")))?;
        let batch_rows = context.session_config().batch_size();
        let mut builder = RecordBatchReceiverStreamBuilder::new(self.schema.clone(), 2);
        let tx = builder.tx();
        let job = Job {
            trace: self.trace.clone(),
            kind: self.kind,
            projection: self.projection.clone(),
            limit: self.limit,
            part,
            batch_rows,
            site_names: self.site_names.clone(),
        };
        builder.spawn_blocking(move || job.run(&mut |b| tx.blocking_send(Ok(b)).is_ok()));
        Ok(builder.build())
    }
}

/// What one part of a scan decodes (on a blocking thread).
struct Job {
    trace: Arc<TraceTables>,
    kind: Kind,
    projection: Option<Vec<usize>>,
    limit: Option<usize>,
    part: Part,
    batch_rows: usize,
    site_names: Option<Arc<SiteNames>>,
}

impl Job {
    /// Sends the part's batches, projected and cut at the limit, to `send` (false: the query
    /// does not want more).
    fn run(self, send: &mut dyn FnMut(RecordBatch) -> bool) -> Result<()> {
        let trace = &self.trace;
        let reader = trace.opened.reader();
        let mut left = self.limit.unwrap_or(usize::MAX);
        if left == 0 {
            return Ok(());
        }
        let projection = self.projection.clone();
        // Projects a batch, cuts it at the limit, sends it: false when no more is wanted.
        let mut emit = |b: RecordBatch| -> Result<bool> {
            let b = match &projection {
                Some(p) => b.project(p)?,
                None => b,
            };
            let b = if b.num_rows() > left {
                b.slice(0, left)
            } else {
                b
            };
            left -= b.num_rows();
            Ok(send(b) && left > 0)
        };
        let arrow = |e: ArrowError| trace.error(e);
        match self.kind {
            Kind::Heap(t) => {
                let opts = HeapOptions {
                    batch_rows: self.batch_rows,
                    site_names: self.site_names.clone().unwrap_or_default(),
                    records: self.part.data.map_or(0..u64::MAX, |(a, b)| a..b),
                    ..HeapOptions::default()
                };
                let batches = match self.part.from {
                    None => crate::columnar::batches(&reader, t, opts),
                    Some(i) => {
                        let blob = trace
                            .state()
                            .and_then(|s| s.entry(i))
                            .ok_or_else(|| trace.error("its analysis state went away"))?;
                        let births = match t {
                            HeapTable::Events => None,
                            HeapTable::Blocks => Some(
                                trace
                                    .births()
                                    .and_then(|b| b.entry(i))
                                    .ok_or_else(|| trace.error("its births went away"))?,
                            ),
                        };
                        crate::columnar::resumed_table_batches(
                            &reader,
                            self.records(&reader)?,
                            t,
                            opts,
                            blob,
                            births,
                        )
                    }
                }
                .map_err(|e| trace.error(e))?;
                for b in batches {
                    if !emit(b.map_err(|e| trace.error(e))?)? {
                        break;
                    }
                }
            }
            Kind::Type(id) => {
                let records = self.records(&reader)?;
                let Some(batches) =
                    trace
                        .columns()
                        .batches(&reader, id, records, self.part.until, self.batch_rows)
                else {
                    return Ok(());
                };
                for b in batches {
                    if !emit(b.map_err(arrow)?)? {
                        break;
                    }
                }
            }
            Kind::Records => {
                let mut records = self.records(&reader)?;
                records.skip_values(true);
                let names: Vec<&str> = reader
                    .schema()
                    .records
                    .iter()
                    .map(|r| r.name.as_str())
                    .collect();
                let mut cols = RecordCols::new(self.batch_rows);
                while let Some(event) = records.next() {
                    let Event::Record(v) = event else { continue };
                    if self.part.until.is_some_and(|u| v.index() >= u) {
                        break;
                    }
                    cols.index.append_value(v.index());
                    cols.offset.append_value(v.offset());
                    cols.section.append_value(v.section());
                    cols.record
                        .append_value(names.get(v.record_id() as usize).copied().unwrap_or(""));
                    cols.rows += 1;
                    if cols.rows >= self.batch_rows && !emit(cols.take().map_err(arrow)?)? {
                        return Ok(());
                    }
                }
                if cols.rows > 0 {
                    emit(cols.take().map_err(arrow)?)?;
                }
            }
        }
        Ok(())
    }

    /// The records of the part: from the start, or resumed at its checkpoint.
    fn records<'r>(&self, reader: &'r Reader<'r>) -> Result<Records<'r>> {
        match self.part.from {
            None => Ok(reader.records()),
            Some(i) => {
                let idx = self
                    .trace
                    .index()
                    .ok_or_else(|| self.trace.error("its seek index went away"))?;
                idx.records_at(reader, i).map_err(|e| self.trace.error(e))
            }
        }
    }
}

/// The columns of a batch of `records`.
struct RecordCols {
    index: UInt64Builder,
    offset: UInt64Builder,
    section: UInt8Builder,
    record: StringBuilder,
    rows: usize,
}

impl RecordCols {
    fn new(rows: usize) -> RecordCols {
        RecordCols {
            index: UInt64Builder::with_capacity(rows),
            offset: UInt64Builder::with_capacity(rows),
            section: UInt8Builder::with_capacity(rows),
            record: StringBuilder::new(),
            rows: 0,
        }
    }

    fn take(&mut self) -> std::result::Result<RecordBatch, ArrowError> {
        self.rows = 0;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.index.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.section.finish()),
            Arc::new(self.record.finish()),
        ];
        RecordBatch::try_new(super::records_schema(), cols)
    }
}

// The module's own checks: see tests/integration/sql.rs for the tables against independent
// readings.
#[cfg(test)]
mod tests {
    use super::*;

    fn trace(path: &str) -> Arc<TraceTables> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let p = root.join(path);
        let o = crate::open(&p).expect("opens");
        Arc::new(TraceTables::new(p, o))
    }

    #[test]
    fn tables_are_records_heap_then_types() {
        let t = trace("traces/android.mtf");
        let names = t.names();
        assert_eq!(names[..3], ["records", "events", "blocks"]);
        assert!(names.len() > 3);
    }
}
