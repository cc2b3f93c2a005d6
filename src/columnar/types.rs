//! The Arrow types of a record type's columns, chosen after pass 1 from what it saw of each
//! field (`ValueProfile`): the narrowest integer type that holds every value, text or binary,
//! what references lead to; the Arrow schema of a file and the columns written without a
//! dictionary.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema as ArrowSchema};

use crate::dtd::Display;

use super::model::{Col, Data, Resolved, Sample, Table, ValueProfile, DICT_SAMPLE};

impl Sample {
    pub(super) fn add(&mut self, v: u64) {
        if self.seen < DICT_SAMPLE {
            self.seen += 1;
            self.distinct.insert(v);
        }
    }

    pub(super) fn add_bytes(&mut self, b: &[u8]) {
        if self.seen < DICT_SAMPLE {
            use std::hash::BuildHasher;
            self.add(foldhash::fast::FixedState::with_seed(0).hash_one(b));
        }
    }

    /// Whether a dictionary pays: the values sampled repeat, on average, at least twice.
    pub(super) fn repeats(&self) -> bool {
        self.distinct.len() as u64 * 2 <= u64::from(self.seen)
    }
}

impl ValueProfile {
    pub(super) fn int(&mut self, v: u64) {
        self.ints = true;
        self.umax = self.umax.max(v);
        self.smin = self.smin.min(v as i64);
        self.smax = self.smax.max(v as i64);
    }
}

impl Table {
    /// After pass 1: choose every leaf's type.
    pub(super) fn choose_types(&mut self) {
        for leaf in &mut self.leaves {
            let s = &leaf.stats;
            leaf.data = Some(if s.refs && !s.as_integer() {
                let number = if s.ref_index {
                    signed_type(s.ref_smin.min(0), s.ref_smax)
                } else {
                    unsigned_type(s.ref_umax)
                };
                // The logical value: what a reference leads to, or the integer a record stores
                // where a metadata record switched the field away from the reference.
                let res_ints = s.res_ints || s.ints;
                let res = if s.res_other || (s.res_bytes && res_ints) {
                    Resolved::Text(Vec::new())
                } else if res_ints {
                    Resolved::Int(unsigned_type(s.res_umax.max(s.umax)), Vec::new())
                } else {
                    Resolved::Dict {
                        utf8: !s.res_non_utf8,
                        keys: Vec::new(),
                        map: HashMap::new(),
                        data: Vec::new(),
                        offsets: vec![0],
                    }
                };
                Data::Ref {
                    index: s.ref_index,
                    number,
                    numbers: Vec::new(),
                    res,
                }
            } else if leaf.bytes {
                Data::Bytes {
                    utf8: leaf.display == Display::Text && !s.non_utf8,
                    data: Vec::new(),
                    offsets: vec![0],
                }
            } else if leaf.display == Display::Signed {
                Data::I(signed_type(s.smin, s.smax), Vec::new())
            } else {
                Data::U(unsigned_type(s.umax.max(s.res_umax)), Vec::new())
            });
        }
    }

    pub(super) fn schema(&self) -> Arc<ArrowSchema> {
        let mut fields = vec![
            Field::new(self.meta_name("record_index"), DataType::UInt64, false),
            Field::new(self.meta_name("byte_offset"), DataType::UInt64, false),
            Field::new(self.meta_name("section"), DataType::UInt8, false),
        ];
        for (name, col) in &self.cols {
            fields.extend(self.fields_of(name, col));
        }
        Arc::new(ArrowSchema::new(fields))
    }

    /// The columns written without a dictionary: `record_index` and `byte_offset` (unique in
    /// every row), and the scalar fields at the top of the record whose sampled values do not
    /// repeat (`Sample::repeats`).
    // Design: Parquet writers start every column with a dictionary and fall back to plain
    // pages once the dictionary passes its page size limit; for a column of nearly unique
    // values (addresses, times, offsets) that is a hash table of every value for nothing, which
    // was about 30 % of the export's time of a HATF trace. The first 65,536 values of each
    // field, seen anyway in the first pass, decide it. Fields inside groups and lists, and
    // the values references lead to, keep the writer's default.
    pub(super) fn plain_columns(&self) -> Vec<String> {
        let mut v = vec![
            self.meta_name("record_index"),
            self.meta_name("byte_offset"),
        ];
        for (name, col) in &self.cols {
            if let Col::Leaf(i) = col {
                let leaf = &self.leaves[*i];
                if (!leaf.stats.refs || leaf.stats.as_integer()) && !leaf.stats.sample.repeats() {
                    v.push(name.clone());
                }
            }
        }
        v
    }

    /// A meta column's name, with `_` in front while a field has it.
    pub(super) fn meta_name(&self, base: &str) -> String {
        let mut name = base.to_string();
        while self
            .cols
            .iter()
            .any(|(n, _)| *n == name || *n == format!("{name}_ref"))
        {
            name.insert(0, '_');
        }
        name
    }

    /// The Arrow fields of a column (two for a reference).
    pub(super) fn fields_of(&self, name: &str, col: &Col) -> Vec<Field> {
        match col {
            Col::Leaf(i) => match self.leaves[*i].data.as_ref().expect("typed") {
                Data::U(t, _) | Data::I(t, _) => vec![Field::new(name, t.clone(), false)],
                Data::Bytes { utf8, .. } => vec![Field::new(
                    name,
                    if *utf8 {
                        DataType::Utf8
                    } else {
                        DataType::Binary
                    },
                    false,
                )],
                Data::Ref { number, res, .. } => {
                    let res_type = match res {
                        Resolved::Dict { utf8, .. } => DataType::Dictionary(
                            Box::new(DataType::Int32),
                            Box::new(if *utf8 {
                                DataType::Utf8
                            } else {
                                DataType::Binary
                            }),
                        ),
                        Resolved::Int(t, _) => t.clone(),
                        Resolved::Text(_) => DataType::Utf8,
                    };
                    vec![
                        Field::new(name, res_type, true),
                        Field::new(format!("{name}_ref"), number.clone(), true),
                    ]
                }
            },
            Col::Struct(children) => {
                let mut fs = Vec::new();
                for (n, c) in children {
                    fs.extend(self.fields_of(n, c));
                }
                vec![Field::new(name, DataType::Struct(Fields::from(fs)), false)]
            }
            Col::List(_, item) => {
                let inner = self.fields_of("item", item);
                let item = if inner.len() == 1 {
                    inner.into_iter().next().expect("one")
                } else {
                    // A reference as a list item: both columns in a struct.
                    Field::new("item", DataType::Struct(Fields::from(inner)), false)
                };
                vec![Field::new(name, DataType::List(Arc::new(item)), false)]
            }
        }
    }
}

pub(super) fn unsigned_type(max: u64) -> DataType {
    if max <= u8::MAX as u64 {
        DataType::UInt8
    } else if max <= u16::MAX as u64 {
        DataType::UInt16
    } else if max <= u32::MAX as u64 {
        DataType::UInt32
    } else {
        DataType::UInt64
    }
}

pub(super) fn signed_type(min: i64, max: i64) -> DataType {
    let fits = |lo: i64, hi: i64| min >= lo && max <= hi;
    if fits(i8::MIN as i64, i8::MAX as i64) {
        DataType::Int8
    } else if fits(i16::MIN as i64, i16::MAX as i64) {
        DataType::Int16
    } else if fits(i32::MIN as i64, i32::MAX as i64) {
        DataType::Int32
    } else {
        DataType::Int64
    }
}
