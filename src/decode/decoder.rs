//! [`Decoder`]: walks the regions of a trace and yields one borrowed [`RecordView`] per record.

// Design: the decoder owns every buffer it needs (decoded values, last value per slot, the loop
// stack) and reuses them from record to record, so decoding allocates nothing per record. It is
// a "lending iterator": `next` returns a view that borrows the decoder, which is why it is not
// `std::iter::Iterator`.

use crate::dtd::{Builtin, Display, Expr, Interp, RecordId};

use super::error::{DecodeError, ErrorKind};
use super::program::{Loops, Op, TagTable};
use super::reader::Reader;
use super::state::{sign_extend, MetaProperty, ScopeState};
use super::value::{ElementRef, FieldValue, Value};
use super::view::{MetaChange, RecordView};

/// Whether a decoder checks references (the main pass) or only scans a table (the pre-pass that
/// builds a section's element index, which must not recurse into other tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Main,
    Prepass,
}

/// Most problems a decoder keeps before dropping further ones (they are still counted).
pub const MAX_KEPT_PROBLEMS: usize = 10_000;

/// Repeat limit for items that may occupy no bytes (docs/format.md §6.4).
pub const MAX_EMPTY_REPEAT: u64 = 65_536;

/// Most field occurrences one record may decode to (docs/format.md §6.4).
pub const MAX_FIELDS_PER_RECORD: usize = 1 << 22;

/// Decodes records in file order. See [`Reader::records`].
pub struct Decoder<'r> {
    reader: &'r Reader<'r>,
    mode: Mode,
    regions: Vec<usize>,
    next_region: usize,
    region: usize,
    region_start: u64,
    pos: u64,
    end: u64,
    scope: Option<ScopeState>,
    tags: Option<&'r TagTable>,
    values: Vec<FieldValue>,
    last: Vec<u64>,
    loops: Loops,
    count: u64,
    index_exact: bool,
    problems: Vec<DecodeError>,
    problems_total: u64,
    meta: Option<MetaChange>,
    finished: bool,
    cur: Cur,
}

#[derive(Default, Clone, Copy)]
struct Cur {
    rid: RecordId,
    start: u64,
}

impl<'r> Decoder<'r> {
    pub(crate) fn new(reader: &'r Reader<'r>, regions: Vec<usize>, mode: Mode) -> Decoder<'r> {
        let max_slots = reader
            .compiled
            .programs
            .iter()
            .map(|p| p.nslots)
            .max()
            .unwrap_or(0);
        Decoder {
            reader,
            mode,
            regions,
            next_region: 0,
            region: usize::MAX,
            region_start: 0,
            pos: 0,
            end: 0,
            scope: None,
            tags: None,
            values: Vec::with_capacity(64),
            last: vec![0; max_slots],
            loops: Loops::default(),
            count: 0,
            index_exact: true,
            problems: Vec::new(),
            problems_total: 0,
            meta: None,
            finished: false,
            cur: Cur::default(),
        }
    }

    /// Problems found so far that did not stop decoding (a fixed value differing, a bad
    /// metadata record, a bad reference, the record count). Draining them is the caller's job.
    pub fn take_problems(&mut self) -> Vec<DecodeError> {
        std::mem::take(&mut self.problems)
    }

    /// Problems found so far that did not stop decoding, without taking them.
    pub fn problems(&self) -> &[DecodeError] {
        &self.problems
    }

    /// How many problems were found in all (including ones dropped past
    /// [`MAX_KEPT_PROBLEMS`]), not counting errors returned by `next`.
    pub fn problems_total(&self) -> u64 {
        self.problems_total
    }

    /// Records decoded so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The live metadata state of the current scope.
    pub fn state(&self) -> Option<&ScopeState> {
        self.scope.as_ref()
    }

    /// Decode the next record. Returns `None` at the end of the trace. After an error that stops
    /// a region (see [`DecodeError::is_recoverable`]), decoding resumes at the next section.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<RecordView<'_>, DecodeError>> {
        loop {
            if self.pos >= self.end {
                if self.next_region >= self.regions.len() {
                    if !self.finished {
                        self.finished = true;
                        self.finish();
                    }
                    return None;
                }
                if let Err(e) = self.enter_region() {
                    return Some(Err(*e));
                }
                continue;
            }
            return match self.decode_record() {
                Ok(()) => {
                    self.count += 1;
                    let c = self.cur;
                    Some(Ok(RecordView {
                        reader: self.reader,
                        record_id: c.rid,
                        section: self.section(),
                        offset: c.start,
                        len: self.pos - c.start,
                        index: self.count - 1,
                        values: &self.values,
                        meta: self.meta,
                    }))
                }
                Err(e) => {
                    // Resynchronise at the next section.
                    self.pos = self.end;
                    self.index_exact = false;
                    Some(Err(*e))
                }
            };
        }
    }

    fn section(&self) -> u8 {
        self.scope.as_ref().map_or(0, |s| s.section)
    }

    fn enter_region(&mut self) -> Result<(), Box<DecodeError>> {
        let ri = self.regions[self.next_region];
        self.next_region += 1;
        let region = self.reader.input.regions[ri];
        self.region = ri;
        self.region_start = region.start;
        self.pos = region.start;
        self.end = region.end;
        match &self.reader.compiled.tags[region.section as usize] {
            Some(t) => {
                self.tags = Some(t);
                self.scope = Some(ScopeState::new(self.reader.schema, region.section));
                Ok(())
            }
            None => {
                let e = DecodeError {
                    offset: region.start,
                    record_index: None,
                    section: region.section,
                    section_name: String::new(),
                    record: None,
                    field: None,
                    kind: ErrorKind::UndeclaredSection,
                };
                self.pos = self.end;
                self.index_exact = false;
                self.scope = None;
                self.tags = None;
                Err(Box::new(e))
            }
        }
    }

    fn finish(&mut self) {
        if self.mode == Mode::Main
            && self.index_exact
            && self.regions.len() == self.reader.input.regions.len()
            && self.count != self.reader.input.nrecords
        {
            let e = DecodeError {
                offset: self.reader.input.nrecords_offset,
                record_index: None,
                section: 0,
                section_name: String::new(),
                record: None,
                field: None,
                kind: ErrorKind::RecordCount {
                    header: self.reader.input.nrecords,
                    actual: self.count,
                },
            };
            self.problem(Box::new(e));
        }
    }

    #[allow(clippy::boxed_local)]
    fn problem(&mut self, e: Box<DecodeError>) {
        // Callers build errors boxed (see `error`); the box is opened only when kept.
        self.problems_total += 1;
        if self.problems.len() < MAX_KEPT_PROBLEMS {
            self.problems.push(*e);
        }
    }

    fn error(
        &self,
        offset: u64,
        rid: Option<RecordId>,
        slot: Option<u16>,
        kind: ErrorKind,
    ) -> Box<DecodeError> {
        let schema = self.reader.schema;
        let section = self.section();
        Box::new(DecodeError {
            offset,
            record_index: self.index_exact.then_some(self.count),
            section,
            section_name: self.reader.section_name(section).to_string(),
            record: rid.map(|r| schema.record(r).name.clone()),
            field: match (rid, slot) {
                (Some(r), Some(s)) => schema
                    .record(r)
                    .slots
                    .get(s as usize)
                    .map(|s| s.name.clone()),
                _ => None,
            },
            kind,
        })
    }

    #[inline]
    fn read(&self, at: u64, width: usize) -> u64 {
        let b = &self.reader.input.bytes[at as usize..at as usize + width];
        let mut v = 0u64;
        if self.reader.input.big_endian {
            for &x in b {
                v = (v << 8) | x as u64;
            }
        } else {
            for &x in b.iter().rev() {
                v = (v << 8) | x as u64;
            }
        }
        v
    }

    #[inline]
    fn need(
        &self,
        n: u64,
        rid: Option<RecordId>,
        slot: Option<u16>,
    ) -> Result<(), Box<DecodeError>> {
        let available = self.end - self.pos;
        if n > available {
            Err(self.error(
                self.pos,
                rid,
                slot,
                ErrorKind::Truncated {
                    needed: n,
                    available,
                },
            ))
        } else {
            Ok(())
        }
    }

    fn decode_record(&mut self) -> Result<(), Box<DecodeError>> {
        let reader = self.reader;
        let schema = reader.schema;
        let start = self.pos;
        self.cur = Cur { rid: 0, start };
        self.values.clear();
        self.meta = None;
        let tw = schema.tag_width as u64;
        self.need(tw, None, None)?;
        let tag = self.read(start, tw as usize);
        let tags = self.tags.expect("a region is open");
        let Some(rid) = tags.get(tag) else {
            return Err(self.error(start, None, None, ErrorKind::UnknownTag { tag }));
        };
        self.cur.rid = rid;
        let at_region_start = start == self.region_start;
        let section_here = self.section();
        if section_here != 0 && at_region_start && !reader.is_builtin(rid, Builtin::Section) {
            return Err(self.error(start, Some(rid), None, ErrorKind::MissingSectionRecord));
        }
        self.pos += tw;
        self.values.push(FieldValue {
            slot: 0,
            offset: start,
            width: tw as u32,
            raw: tag,
            value: Value::Int(tag),
        });
        self.last[0] = tag;
        match schema.record(rid).builtin {
            Some(Builtin::Metadata) => return self.decode_metadata(rid),
            Some(Builtin::Section) => {
                self.run_program(rid)?;
                let number = self.values.last().map_or(0, |v| v.raw);
                let off = self.values.last().map_or(start, |v| v.offset);
                if !at_region_start || section_here == 0 {
                    let e = self.error(start, Some(rid), None, ErrorKind::MisplacedSection);
                    self.problem(e);
                } else if number != section_here as u64 {
                    let e = self.error(
                        off,
                        Some(rid),
                        Some(1),
                        ErrorKind::SectionNumberMismatch {
                            index: section_here,
                            record: number,
                        },
                    );
                    self.problem(e);
                }
                return Ok(());
            }
            _ => {}
        }
        self.run_program(rid)
    }

    fn run_program(&mut self, rid: RecordId) -> Result<(), Box<DecodeError>> {
        let reader = self.reader;
        let schema = reader.schema;
        let rt = schema.record(rid);
        let prog = &reader.compiled.programs[rid as usize];
        let base = self
            .scope
            .as_ref()
            .and_then(|s| s.base(rid))
            .expect("tag tables only hold visible records");
        self.loops.clear();
        let ops = &prog.ops;
        let mut pc = 0usize;
        while pc < ops.len() {
            match &ops[pc] {
                Op::Int(slot) => {
                    let slot = *slot;
                    let def = &rt.slots[slot as usize];
                    let st = self.scope.as_ref().expect("open scope").slots[base + slot as usize];
                    let w = st.width as usize;
                    self.need(w as u64, Some(rid), Some(slot))?;
                    let at = self.pos;
                    let raw = self.read(at, w);
                    self.pos += w as u64;
                    let (value, number) = match st.interp {
                        Interp::None => {
                            let v = if def.display == Display::Signed {
                                sign_extend(raw, st.width) as u64
                            } else {
                                raw
                            };
                            (Value::Int(v), v)
                        }
                        Interp::Default(v) => (Value::Int(v), v),
                        Interp::BaseOffset(b) => {
                            let v = b.wrapping_add(sign_extend(raw, st.width) as u64);
                            (Value::Int(v), v)
                        }
                        Interp::Delta(_) => {
                            let s = &mut self.scope.as_mut().expect("open scope").slots
                                [base + slot as usize];
                            s.prev = s.prev.wrapping_add(sign_extend(raw, st.width) as u64);
                            (Value::Int(s.prev), s.prev)
                        }
                        Interp::Stride { stride, .. } => {
                            let s = &mut self.scope.as_mut().expect("open scope").slots
                                [base + slot as usize];
                            s.prev = s.prev.wrapping_add(stride as u64);
                            (Value::Int(s.prev), s.prev)
                        }
                        Interp::SectionOffset(section) => {
                            let r = ElementRef::Offset {
                                section,
                                offset: raw,
                            };
                            self.check_ref(r, at, rid, slot);
                            (Value::Ref(r), raw)
                        }
                        Interp::SectionStride { section, stride } => {
                            let s = &mut self.scope.as_mut().expect("open scope").slots
                                [base + slot as usize];
                            let index = s.cursor;
                            s.cursor = s.cursor.wrapping_add(stride);
                            let r = ElementRef::Index { section, index };
                            self.check_ref(r, at, rid, slot);
                            (Value::Ref(r), index as u64)
                        }
                    };
                    if let Some(fixed) = def.fixed {
                        if number != fixed {
                            let e = self.error(
                                at,
                                Some(rid),
                                Some(slot),
                                ErrorKind::FixedValue {
                                    expected: fixed,
                                    found: number,
                                },
                            );
                            self.problem(e);
                        }
                    }
                    self.last[slot as usize] = number;
                    self.values.push(FieldValue {
                        slot,
                        offset: at,
                        width: w as u32,
                        raw,
                        value,
                    });
                    pc += 1;
                }
                Op::Bytes(slot, expr) => {
                    let slot = *slot;
                    let len = eval_width(expr, &self.last).map_err(|m| {
                        self.error(self.pos, Some(rid), Some(slot), ErrorKind::BadWidth(m))
                    })?;
                    self.need(len, Some(rid), Some(slot))?;
                    let at = self.pos;
                    self.pos += len;
                    self.last[slot as usize] = len;
                    self.values.push(FieldValue {
                        slot,
                        offset: at,
                        width: len as u32,
                        raw: 0,
                        value: Value::Bytes { offset: at, len },
                    });
                    pc += 1;
                }
                Op::Repeat { count, end } => {
                    let n = self.last[*count as usize];
                    let available = self.end - self.pos;
                    if n > available || n > MAX_EMPTY_REPEAT {
                        // docs/format.md §6.4: an occurrence that needs `min` bytes cannot repeat
                        // more often than the bytes left allow; one that may be empty at most
                        // MAX_EMPTY_REPEAT times.
                        let min = self.item_min_size(rid, base, pc);
                        let impossible = match available.checked_div(min) {
                            None => n > MAX_EMPTY_REPEAT,
                            Some(most) => n > most,
                        };
                        if impossible {
                            return Err(self.error(
                                self.pos,
                                Some(rid),
                                Some(*count),
                                ErrorKind::RepeatTooLong {
                                    count: n,
                                    available,
                                },
                            ));
                        }
                    }
                    pc = self.loops.enter(pc, *end, n);
                }
                Op::EndRepeat { begin } => {
                    // Nested repeats multiply; the field occurrences of one record are capped so
                    // that no trace can make the decoder's buffers grow without bound.
                    if self.values.len() > MAX_FIELDS_PER_RECORD {
                        return Err(self.error(
                            self.pos,
                            Some(rid),
                            None,
                            ErrorKind::RecordTooLarge {
                                fields: self.values.len() as u64,
                            },
                        ));
                    }
                    pc = self.loops.end(pc, *begin);
                }
            }
        }
        Ok(())
    }

    /// The fewest bytes one occurrence of the repeat at `pc` can take with the live widths
    /// (byte strings count as 0, nested repeats as 0).
    fn item_min_size(&self, rid: RecordId, base: usize, pc: usize) -> u64 {
        let ops = &self.reader.compiled.programs[rid as usize].ops;
        let Op::Repeat { end, .. } = ops[pc] else {
            return 0;
        };
        let scope = self.scope.as_ref().expect("open scope");
        let mut depth = 0;
        let mut total = 0u64;
        for op in &ops[pc + 1..end as usize] {
            match op {
                Op::Int(s) if depth == 0 => total += scope.slots[base + *s as usize].width as u64,
                Op::Repeat { .. } => depth += 1,
                Op::EndRepeat { .. } => depth -= 1,
                _ => {}
            }
        }
        total
    }

    fn check_ref(&mut self, r: ElementRef, at: u64, rid: RecordId, slot: u16) {
        if self.mode == Mode::Prepass {
            return;
        }
        if let Err(kind) = self.reader.element(r) {
            let e = self.error(at, Some(rid), Some(slot), kind);
            self.problem(e);
        }
    }

    fn decode_metadata(&mut self, rid: RecordId) -> Result<(), Box<DecodeError>> {
        let reader = self.reader;
        let schema = reader.schema;
        let tw = schema.tag_width as usize;
        let word = reader.input.word_size as usize;
        // record (tag width), field (1), property (1)
        for (slot, w) in [(1u16, tw), (2, 1), (3, 1)] {
            self.need(w as u64, Some(rid), Some(slot))?;
            let at = self.pos;
            let raw = self.read(at, w);
            self.pos += w as u64;
            self.values.push(FieldValue {
                slot,
                offset: at,
                width: w as u32,
                raw,
                value: Value::Int(raw),
            });
        }
        let target_tag = self.values[1].raw;
        let field = self.values[2].raw as u16;
        let code = self.values[3].raw as u8;
        let prop_at = self.values[3].offset;
        let Some(nwords) = MetaProperty::words_for_code(code) else {
            return Err(self.error(
                prop_at,
                Some(rid),
                Some(3),
                ErrorKind::BadMetadata(format!(
                    "unknown property code {code} (0..7 are defined); the record's length is unknown"
                )),
            ));
        };
        let mut words = [0u64; 2];
        for w in words.iter_mut().take(nwords) {
            self.need(word as u64, Some(rid), Some(4))?;
            let at = self.pos;
            *w = self.read(at, word);
            self.pos += word as u64;
            self.values.push(FieldValue {
                slot: 4,
                offset: at,
                width: word as u32,
                raw: *w,
                value: Value::Int(*w),
            });
        }
        let tags = self.tags.expect("open region");
        let Some(target) = tags.get(target_tag) else {
            let e = self.error(
                self.values[1].offset,
                Some(rid),
                Some(1),
                ErrorKind::BadMetadata(format!(
                    "no record type with tag {target_tag} in this section"
                )),
            );
            self.problem(e);
            return Ok(());
        };
        let prop = match MetaProperty::from_code(code, words, 8 * word as u32) {
            Ok(p) => p,
            Err(m) => {
                let e = self.error(prop_at, Some(rid), Some(3), ErrorKind::BadMetadata(m));
                self.problem(e);
                return Ok(());
            }
        };
        let scope = self.scope.as_mut().expect("open scope");
        match scope.apply(schema, target, field, prop) {
            Ok(()) => {
                self.meta = Some(MetaChange {
                    record: target,
                    slot: field,
                    property: prop,
                });
            }
            Err(refused) => {
                // Point at the byte that chose the refused change: the field number when it names
                // no field, else the property.
                let at = if (field as usize) >= schema.record(target).slots.len() {
                    self.values[2].offset
                } else {
                    prop_at
                };
                let e = self.error(at, Some(rid), None, ErrorKind::BadMetadata(refused.0));
                self.problem(e);
            }
        }
        Ok(())
    }
}

/// Evaluate a width expression over the last values of the record's slots.
pub fn eval_width(expr: &Expr, last: &[u64]) -> Result<u64, String> {
    Ok(match expr {
        Expr::Const(c) => *c,
        Expr::Value(s) => last[*s as usize],
        Expr::Add(a, b) => eval_width(a, last)?
            .checked_add(eval_width(b, last)?)
            .ok_or("width expression overflows")?,
        Expr::Sub(a, b) => eval_width(a, last)?
            .checked_sub(eval_width(b, last)?)
            .ok_or("width expression is negative")?,
        Expr::Mul(a, b) => eval_width(a, last)?
            .checked_mul(eval_width(b, last)?)
            .ok_or("width expression overflows")?,
    })
}
