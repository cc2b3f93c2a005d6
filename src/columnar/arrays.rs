//! The values of a batch and the Arrow arrays made of them: per scalar field its chosen type
//! with its values (`Data`), what references lead to (`Resolved`), a record batch taken from a
//! table.

use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, DictionaryArray, Int16Array, Int32Array, Int64Array, Int8Array,
    ListArray, RecordBatch, StringArray, StructArray, UInt16Array, UInt32Array, UInt64Array,
    UInt8Array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema as ArrowSchema};

use crate::decode::{Reader, Value};

use super::model::{Col, Data, Leaf, Resolved, Table};

impl Table {
    /// The batch gathered so far, emptied.
    pub(super) fn take_batch(&mut self, schema: &Arc<ArrowSchema>) -> Result<RecordBatch, String> {
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(std::mem::take(&mut self.index))),
            Arc::new(UInt64Array::from(std::mem::take(&mut self.offset))),
            Arc::new(UInt8Array::from(std::mem::take(&mut self.section))),
        ];
        let cols = std::mem::take(&mut self.cols);
        for (_, col) in &cols {
            arrays.extend(self.arrays_of(col)?);
        }
        self.cols = cols;
        self.batch_rows = 0;
        self.batch_bytes = 0;
        RecordBatch::try_new(schema.clone(), arrays).map_err(|e| e.to_string())
    }

    pub(super) fn arrays_of(&mut self, col: &Col) -> Result<Vec<ArrayRef>, String> {
        Ok(match col {
            Col::Leaf(i) => self.leaves[*i].take(),
            Col::Struct(children) => {
                let mut fields = Vec::new();
                let mut arrays = Vec::new();
                for (n, c) in children {
                    let a = self.arrays_of(c)?;
                    let f = self.fields_of(n, c);
                    fields.extend(f);
                    arrays.extend(a);
                }
                vec![Arc::new(
                    StructArray::try_new(Fields::from(fields), arrays, None)
                        .map_err(|e| e.to_string())?,
                )]
            }
            Col::List(l, item) => {
                let mut inner = self.arrays_of(item)?;
                let mut fields = self.fields_of("item", item);
                let (field, values): (Field, ArrayRef) = if inner.len() == 1 {
                    (fields.remove(0), inner.remove(0))
                } else {
                    let s = StructArray::try_new(Fields::from(fields), inner, None)
                        .map_err(|e| e.to_string())?;
                    (
                        Field::new("item", s.data_type().clone(), false),
                        Arc::new(s),
                    )
                };
                let list = &mut self.lists[*l];
                let offsets = std::mem::replace(&mut list.offsets, vec![0]);
                list.items = 0;
                vec![Arc::new(
                    ListArray::try_new(
                        Arc::new(field),
                        OffsetBuffer::new(ScalarBuffer::from(offsets)),
                        values,
                        None,
                    )
                    .map_err(|e| e.to_string())?,
                )]
            }
        })
    }
}

impl Leaf {
    /// Append one value; returns the bytes it added to byte-string buffers.
    pub(super) fn push(&mut self, reader: &Reader<'_>, value: Value<'_>) -> usize {
        match self.data.as_mut().expect("typed") {
            // A reference to an integer (`ValueProfile::as_integer`): the integer.
            Data::U(_, v) => v.push(resolved(reader, value)),
            Data::I(_, v) => v.push(resolved(reader, value) as i64),
            Data::Bytes { data, offsets, .. } => {
                let b = value.as_bytes().unwrap_or_default();
                data.extend_from_slice(b);
                offsets.push(data.len() as i32);
                return b.len();
            }
            Data::Ref { numbers, res, .. } => {
                let Value::Ref(r) = value else {
                    numbers.push(None);
                    res.push_plain(value);
                    return 0;
                };
                numbers.push(Some(r.number()));
                match res {
                    Resolved::Dict {
                        keys,
                        map,
                        data,
                        offsets,
                        ..
                    } => {
                        let key = *map.entry(r).or_insert_with(|| match reader.resolve(r) {
                            Ok(res) => {
                                let b = res.value.as_bytes().unwrap_or_default();
                                data.extend_from_slice(b);
                                offsets.push(data.len() as i32);
                                Some(offsets.len() as i32 - 2)
                            }
                            Err(_) => None,
                        });
                        keys.push(key);
                    }
                    Resolved::Int(_, v) => {
                        v.push(reader.resolve(r).ok().and_then(|x| x.value.as_u64()))
                    }
                    Resolved::Text(v) => v.push(reader.resolve(r).ok().map(|x| text_of(x.value))),
                }
            }
        }
        0
    }

    /// The arrays of the batch, emptied.
    pub(super) fn take(&mut self) -> Vec<ArrayRef> {
        match self.data.as_mut().expect("typed") {
            Data::U(t, v) => vec![unsigned_array(t, std::mem::take(v))],
            Data::I(t, v) => vec![signed_array(t, std::mem::take(v))],
            Data::Bytes {
                utf8,
                data,
                offsets,
            } => vec![bytes_array(*utf8, data, offsets)],
            Data::Ref {
                index,
                number,
                numbers,
                res,
            } => {
                let numbers = std::mem::take(numbers);
                let nulls =
                    NullBuffer::from(numbers.iter().map(Option::is_some).collect::<Vec<_>>());
                let values = numbers.into_iter().map(Option::unwrap_or_default);
                let n: ArrayRef = if *index {
                    signed_array(number, values.map(|x| x as i64).collect())
                } else {
                    unsigned_array(number, values.collect())
                };
                let n = with_nulls(n, nulls);
                let r: ArrayRef = match res {
                    Resolved::Dict {
                        utf8,
                        keys,
                        map,
                        data,
                        offsets,
                    } => {
                        map.clear();
                        let values = bytes_array(*utf8, data, offsets);
                        let keys = Int32Array::from(std::mem::take(keys));
                        Arc::new(
                            DictionaryArray::<Int32Type>::try_new(keys, values)
                                .expect("keys index the values"),
                        )
                    }
                    Resolved::Int(t, v) => {
                        let v = std::mem::take(v);
                        let nulls =
                            NullBuffer::from(v.iter().map(Option::is_some).collect::<Vec<_>>());
                        let a = unsigned_array(
                            t,
                            v.into_iter().map(Option::unwrap_or_default).collect(),
                        );
                        with_nulls(a, nulls)
                    }
                    Resolved::Text(v) => Arc::new(StringArray::from(std::mem::take(v))),
                };
                vec![r, n]
            }
        }
    }
}

/// An integer value, or the integer a reference leads to.
fn resolved(reader: &Reader<'_>, value: Value<'_>) -> u64 {
    match value {
        Value::Ref(r) => reader
            .resolve(r)
            .ok()
            .and_then(|x| x.value.as_u64())
            .unwrap_or_default(),
        other => number(other),
    }
}

/// A value in a text column: a UTF-8 byte string as it is, other values in the text form.
pub(super) fn text_of(value: Value<'_>) -> String {
    match value.as_str() {
        Some(s) => s.to_string(),
        None => value.to_string(),
    }
}

/// `a` with the null mask `nulls` (of the same length).
pub(super) fn with_nulls(a: ArrayRef, nulls: NullBuffer) -> ArrayRef {
    arrow_array::make_array(
        a.to_data()
            .into_builder()
            .nulls(Some(nulls))
            .build()
            .expect("same length"),
    )
}

impl Resolved {
    /// A value the record stores itself (the field is not a reference in this record).
    pub(super) fn push_plain(&mut self, value: Value<'_>) {
        match (self, value) {
            (Resolved::Int(_, v), Value::Int(x)) => v.push(Some(x)),
            (Resolved::Text(v), value) => v.push(Some(text_of(value))),
            (r, _) => r.push_null(),
        }
    }

    pub(super) fn push_null(&mut self) {
        match self {
            Resolved::Dict { keys, .. } => keys.push(None),
            Resolved::Int(_, v) => v.push(None),
            Resolved::Text(v) => v.push(None),
        }
    }
}

pub(super) fn number(v: Value<'_>) -> u64 {
    match v {
        Value::Int(x) => x,
        Value::Bytes(b) => b.len() as u64,
        Value::Ref(r) => r.number(),
    }
}

pub(super) fn unsigned_array(t: &DataType, v: Vec<u64>) -> ArrayRef {
    match t {
        DataType::UInt8 => Arc::new(UInt8Array::from_iter_values(v.into_iter().map(|x| x as u8))),
        DataType::UInt16 => Arc::new(UInt16Array::from_iter_values(
            v.into_iter().map(|x| x as u16),
        )),
        DataType::UInt32 => Arc::new(UInt32Array::from_iter_values(
            v.into_iter().map(|x| x as u32),
        )),
        _ => Arc::new(UInt64Array::from(v)),
    }
}

pub(super) fn signed_array(t: &DataType, v: Vec<i64>) -> ArrayRef {
    match t {
        DataType::Int8 => Arc::new(Int8Array::from_iter_values(v.into_iter().map(|x| x as i8))),
        DataType::Int16 => Arc::new(Int16Array::from_iter_values(
            v.into_iter().map(|x| x as i16),
        )),
        DataType::Int32 => Arc::new(Int32Array::from_iter_values(
            v.into_iter().map(|x| x as i32),
        )),
        _ => Arc::new(Int64Array::from(v)),
    }
}

pub(super) fn bytes_array(utf8: bool, data: &mut Vec<u8>, offsets: &mut Vec<i32>) -> ArrayRef {
    let data = std::mem::take(data);
    let offsets = std::mem::replace(offsets, vec![0]);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    if utf8 {
        // Checked in pass 1: every value is valid UTF-8.
        Arc::new(StringArray::new(offsets, data.into(), None))
    } else {
        Arc::new(BinaryArray::new(offsets, data.into(), None))
    }
}
