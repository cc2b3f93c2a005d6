//! The data the Parquet export's files share: a record type's column tree (`Table`, `Col`,
//! `Leaf`, `List`), a scalar column's Arrow type with the batch's values (`Data`, `Resolved`),
//! and what the first pass learns of a field's values (`ValueProfile`, `Sample`). The methods
//! live beside what they do: filling (`table.rs`), typing (`types.rs`), arrays (`arrays.rs`).

use std::collections::HashMap;

use arrow_schema::DataType;

use crate::decode::ElementRef;
use crate::dtd::Display;

/// The Arrow type chosen for one scalar field, with its values of the current batch.
#[derive(Debug, Clone)]
pub(super) enum Data {
    U(DataType, Vec<u64>),
    I(DataType, Vec<i64>),
    Bytes {
        utf8: bool,
        data: Vec<u8>,
        offsets: Vec<i32>,
    },
    Ref {
        index: bool,
        number: DataType,
        /// The stored reference's number; `None` where the record stores the value itself.
        numbers: Vec<Option<u64>>,
        res: Resolved,
    },
}

/// The values references lead to.
#[derive(Debug, Clone)]
pub(super) enum Resolved {
    /// Dictionary-encoded strings (or bytes): keys into values of this batch.
    Dict {
        utf8: bool,
        keys: Vec<Option<i32>>,
        map: HashMap<ElementRef, Option<i32>>,
        data: Vec<u8>,
        offsets: Vec<i32>,
    },
    /// Integers.
    Int(DataType, Vec<Option<u64>>),
    /// Anything else, in the text form.
    Text(Vec<Option<String>>),
}

/// A column as the DTD shapes it.
#[derive(Debug, Clone)]
pub(super) enum Col {
    /// A scalar field: index into `Table::leaves`.
    Leaf(usize),
    /// A nested record.
    Struct(Vec<(String, Col)>),
    /// A repeat: index into `Table::lists`, and its item.
    List(usize, Box<Col>),
}

#[derive(Debug, Clone)]
pub(super) struct Leaf {
    pub(super) display: Display,
    pub(super) bytes: bool,
    pub(super) stats: ValueProfile,
    pub(super) data: Option<Data>,
}

#[derive(Debug, Default, Clone)]
pub(super) struct List {
    pub(super) offsets: Vec<i32>,
    pub(super) items: i32,
}

/// One record type's columns.
#[derive(Debug, Clone)]
pub(super) struct Table {
    pub(super) cols: Vec<(String, Col)>,
    pub(super) leaves: Vec<Leaf>,
    pub(super) lists: Vec<List>,
    /// Leaf of each slot.
    pub(super) leaf_of_slot: Vec<Option<usize>>,
    /// List of each count slot.
    pub(super) list_of_count: HashMap<usize, usize>,
    pub(super) rows: u64,
    pub(super) batch_rows: usize,
    pub(super) batch_bytes: usize,
    pub(super) index: Vec<u64>,
    pub(super) offset: Vec<u64>,
    pub(super) section: Vec<u8>,
}

/// Values of a column sampled in pass 1 to decide its dictionary encoding.
pub(super) const DICT_SAMPLE: u32 = 1 << 16;

/// Distinct values among the first [`DICT_SAMPLE`] of a column.
#[derive(Debug, Default, Clone)]
pub(super) struct Sample {
    pub(super) seen: u32,
    pub(super) distinct: std::collections::HashSet<u64, foldhash::fast::FixedState>,
}

/// What pass 1 saw of one scalar field: the kinds of its values (integers, byte strings,
/// references and what they lead to) and their ranges, and a sample for the dictionary choice.
#[derive(Debug, Default, Clone)]
pub(super) struct ValueProfile {
    pub(super) sample: Sample,
    pub(super) ints: bool,
    pub(super) umax: u64,
    pub(super) smin: i64,
    pub(super) smax: i64,
    pub(super) non_utf8: bool,
    pub(super) refs: bool,
    pub(super) ref_index: bool,
    pub(super) ref_umax: u64,
    pub(super) ref_smin: i64,
    pub(super) ref_smax: i64,
    pub(super) res_bytes: bool,
    pub(super) res_non_utf8: bool,
    pub(super) res_ints: bool,
    pub(super) res_umax: u64,
    pub(super) res_other: bool,
    /// A reference that leads nowhere was met.
    pub(super) res_failed: bool,
}

impl ValueProfile {
    /// Whether the field's references all lead to integers (a split stream of `mtf compact
    /// --split`, a stream of addresses): then the column is the integers, typed as the field
    /// that stores them would be, with no `FIELD_ref` column.
    // Design: the element index of a stream is how the trace stores a value, not a value: a
    // trace and its `compact --split` must give the same schema (docs/query.md, *Schemas*).
    // References to strings (name tables) keep their `FIELD_ref`, the string's offset, which
    // the DTD made part of the data.
    pub(super) fn as_integer(&self) -> bool {
        self.refs && self.res_ints && !self.res_bytes && !self.res_other && !self.res_failed
    }
}
