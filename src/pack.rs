//! The text form (or JSON lines) → a trace: reads [`Line`]s and hands them to a
//! [`TraceWriter`]. The one place that joins [`text`](crate::text) and [`encode`](crate::encode).

use std::io::BufRead;

use miette::Diagnostic;

use crate::dtd::{Interp, RecordId};
use crate::encode::{EncodeError, In, TraceWriter};
use crate::layout::MetaProperty;
use crate::text::{
    line_str, meta_property, parse_line, section_id, InputFormat, Line, LineError, LineReader,
    SectionRef, TextError, TextErrorKind, TextHeader,
};

/// Why packing failed.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum PackError {
    /// Reading the input failed.
    #[error("reading the input: {0}")]
    #[diagnostic(code(mtf::pack::io))]
    Io(#[source] std::io::Error),
    /// A line is malformed or names a value that cannot be written.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Text(#[from] TextError),
    /// Finishing the trace failed (a reference that leads nowhere, an I/O error).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Write(EncodeError),
}

impl From<LineError> for PackError {
    fn from(e: LineError) -> Self {
        match e {
            LineError::Text(t) => PackError::Text(t),
            LineError::Io(e) => PackError::Io(e),
        }
    }
}

/// Read the header line of an input (the first line that is not blank or a comment).
pub fn read_header<R: BufRead>(
    lines: &mut LineReader<R>,
    format: InputFormat,
) -> Result<TextHeader, PackError> {
    loop {
        let Some((n, s)) = lines.next_line()? else {
            return Err(PackError::Text(TextError {
                line: lines.line_number() + 1,
                column: 1,
                kind: TextErrorKind::Syntax("empty input: expected a `%mtf` header line"),
            }));
        };
        match parse_line(format, s, n)? {
            None => continue,
            Some(p) => match p.line {
                Line::Header(h) => return Ok(h),
                _ => {
                    return Err(PackError::Text(TextError {
                        line: n,
                        column: 1,
                        kind: TextErrorKind::Syntax(
                            "expected a `%mtf 1 dtd=… class=… order=…` header first",
                        ),
                    }))
                }
            },
        }
    }
}

/// Input lines of the records written so far: a record's line is its index plus the offset
/// recorded at the last place where blank or comment lines shifted them apart.
#[derive(Debug, Default)]
pub struct LineMap(Vec<(u64, usize)>);

impl LineMap {
    #[inline]
    fn note(&mut self, record: u64, line: usize) {
        let shift = line - record as usize;
        if self.0.last().map(|&(_, s)| s) != Some(shift) {
            self.0.push((record, shift));
        }
    }

    /// The line of record `index`, if it was noted.
    pub fn line_of(&self, index: u64) -> Option<usize> {
        let i = self.0.partition_point(|&(r, _)| r <= index);
        i.checked_sub(1).map(|i| index as usize + self.0[i].1)
    }
}

/// Read every line after the header and write it. Memory stays constant: one line at a time
/// (plus one entry per run of records between blank or comment lines, to name the line of an
/// error found only when the trace is finished).
pub fn pack_lines<R: BufRead>(
    lines: &mut LineReader<R>,
    format: InputFormat,
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
) -> Result<(), PackError> {
    pack_lines_with(lines, format, writer, map, true)
}

/// [`pack_lines`] with every line read by the full parser (no fast reader): the reference the
/// fast reader is tested against. Same results, same errors, slower.
#[doc(hidden)]
pub fn pack_lines_general<R: BufRead>(
    lines: &mut LineReader<R>,
    format: InputFormat,
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
) -> Result<(), PackError> {
    pack_lines_with(lines, format, writer, map, false)
}

fn pack_lines_with<R: BufRead>(
    lines: &mut LineReader<R>,
    format: InputFormat,
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
    use_fast: bool,
) -> Result<(), PackError> {
    let mut fast = Fast::new(writer);
    while let Some((n, b)) = lines.next_bytes()? {
        pack_line(&mut fast, format, n, b, writer, map, use_fast)?;
    }
    Ok(())
}

/// Write line `n` (`b`): read by the fast reader where it takes it (`use_fast`), else by the
/// full parser.
#[inline(always)]
fn pack_line(
    fast: &mut Fast,
    format: InputFormat,
    n: usize,
    b: &[u8],
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
    use_fast: bool,
) -> Result<(), PackError> {
    // A line the fast reader takes is ASCII: only the others are checked for UTF-8.
    let taken = if use_fast {
        fast.parse(format, b, writer.schema(), writer.section_id())
    } else {
        None
    };
    if let Some(rid) = taken {
        map.note(writer.records_written(), n);
        let r = match writer.record_fast(rid, &fast.ints, b) {
            Some(r) => r,
            // The plan declined: the general encoder, which says why.
            None => {
                fast.materialize(format, b, rid);
                writer.record(rid, &fast.values)
            }
        };
        return r.map_err(|e| fast.error(format, b, n, rid, writer, e));
    }
    if use_fast {
        if let Some(r) = fast_metadata(fast, format, b, n, writer, map) {
            return r;
        }
    }
    general_line(format, n, b, writer, map)
}

/// Write line `n` (`b`) read by the full parser.
fn general_line(
    format: InputFormat,
    n: usize,
    b: &[u8],
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
) -> Result<(), PackError> {
    let schema = writer.schema();
    let s = line_str(n, b)?;
    let Some(parsed) = parse_line(format, s, n)? else {
        return Ok(());
    };
    let cols = parsed.columns;
    let err = |column: usize, kind: TextErrorKind| TextError {
        line: n,
        column,
        kind,
    };
    map.note(writer.records_written(), n);
    match parsed.line {
        Line::Header(_) => return Err(err(1, TextErrorKind::Syntax("a second header line")).into()),
        Line::Section(v) => {
            let id = section_id(schema, &v).ok_or_else(|| {
                err(
                    cols[0],
                    TextErrorKind::UnknownSection {
                        given: match &v {
                            SectionRef::Id(n) => n.to_string(),
                            SectionRef::Name(s) => s.clone(),
                        },
                    },
                )
            })?;
            writer
                .section(id)
                .map_err(|e| err(cols[0], TextErrorKind::Encode(e)))?;
        }
        Line::Metadata {
            target,
            property,
            args,
        } => {
            let Some((rname, fname)) = target.split_once('.') else {
                return Err(err(
                    cols[1],
                    TextErrorKind::Syntax("expected `record.field` after metadata"),
                )
                .into());
            };
            let rid = writer
                .lookup(rname)
                .ok_or_else(|| err(cols[1], TextErrorKind::UnknownRecord { name: rname.into() }))?;
            let slot = schema.record(rid).slot_by_name(fname).ok_or_else(|| {
                err(
                    cols[1],
                    TextErrorKind::UnknownField {
                        record: rname.into(),
                        field: fname.into(),
                    },
                )
            })?;
            let prop = meta_property(schema, &property, &args).map_err(|k| err(cols[2], k))?;
            writer
                .metadata(rid, slot, prop)
                .map_err(|e| err(cols[0], TextErrorKind::Encode(e)))?;
        }
        Line::Record { name, fields } => {
            if writer.lookup(&name).is_none() {
                return Err(err(cols[0], TextErrorKind::UnknownRecord { name }).into());
            }
            writer.write_fields_at(&name, &fields).map_err(|(at, e)| {
                let col = at.and_then(|i| cols.get(i + 1).copied()).unwrap_or(cols[0]);
                err(col, TextErrorKind::Encode(e))
            })?;
        }
    }
    Ok(())
}

/// Lines read ahead on a thread of their own (`pack -j 2`): their text, and the values of
/// those the fast reader took.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    lines: Vec<Ahead>,
    /// The values of the lines the fast reader took, as [`Fast::ints`] holds them (a byte
    /// string's place relative to its line).
    ints: Vec<u64>,
    /// After the lines: the end of the input (`Ok`) or the error that stopped the reading.
    end: Option<Result<(), LineError>>,
}

/// One line of a [`Batch`]: its number, its text `text[start..end]`, and for a line the fast
/// reader took, its record type, values `ints[first..last]` and which were negative; or a line
/// left to the encoding thread to read (`deferred`).
struct Ahead {
    n: usize,
    start: usize,
    end: usize,
    rid: Option<RecordId>,
    deferred: bool,
    first: usize,
    last: usize,
    neg: u64,
}

/// Lines and bytes per [`Batch`].
const BATCH_LINES: usize = 4096;
const BATCH_BYTES: usize = 1 << 20;

/// Which record lines the reading thread of [`pack_lines_ahead`] leaves to the encoding thread
/// to read, in sixteenths.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Share {
    /// As many as keeps both threads busy: more while the encoding thread waits for batches,
    /// fewer while the reading thread waits for it (what `mtf pack -j 2` uses).
    Balanced,
    /// This many sixteenths (0 to 16), spread evenly over the lines: for tests, which must see
    /// the same trace and errors whatever the share.
    Fixed(u8),
}

/// The share [`Share::Balanced`] starts with, and the most it leaves to the encoding thread.
const SHARE_START: u8 = 5;
const SHARE_MOST: u8 = 12;

/// [`pack_lines`] with the input read and its lines parsed on a second thread, a batch of
/// lines ahead of the thread that encodes them: the same trace and the same first error.
// Design: the metadata state is sequential, so records are encoded on one thread, in order;
// what can run beside it is reading, finding lines and the fast reader's parsing. The fast
// reader needs the current section (record names are looked up in it); the reading thread
// follows `section` lines itself, with the full parser. Where it is wrong, a line before it
// was refused (an unknown section, a section opened twice), so the encoding thread stops there
// and never uses what came after. An error of the encoder is reported with the key columns
// the fast reader finds again on the line; an error of reading (UTF-8, a line too long, I/O)
// reaches the encoding thread after the lines before it, where sequential packing meets it.
// Memory: two batches in the channel, one on each side and those handed back (at most four).
//
// The parse is shared between the two threads: the reading thread leaves a share of the record
// lines to the encoding thread, which reads them as `pack_lines` does, in order. Reading a line
// costs about twice what encoding it costs, so with nothing shared the reading thread alone set
// the pace. Only lines of the text form that start with the name of a record type the fast
// reader takes, followed by a space, are left: such a line is not a `section` line (the full
// parser reads its first word as the record's name), so the reading thread's section stays
// right. The share moves with which thread waits: a full channel (the encoding thread is
// behind) lowers it, a send that does not wait raises it. Which lines are left changes nothing
// in the trace or the errors: both threads read a line the same way.
pub fn pack_lines_ahead<R: BufRead + Send>(
    lines: &mut LineReader<R>,
    format: InputFormat,
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
) -> Result<(), PackError> {
    pack_lines_shared(lines, format, writer, map, Share::Balanced)
}

/// [`pack_lines_ahead`] with the share of lines the encoding thread reads given.
#[doc(hidden)]
pub fn pack_lines_shared<R: BufRead + Send>(
    lines: &mut LineReader<R>,
    format: InputFormat,
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
    share: Share,
) -> Result<(), PackError> {
    let mut reader_fast = Fast::new(writer);
    let mut fast = Fast::new(writer);
    let schema = writer.schema();
    let first_section = writer.section_id();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(2);
    // Batches handed back to be filled again: their buffers are not allocated (and their pages
    // not faulted in) per batch.
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut section = first_section;
            let mut sixteenths = match share {
                Share::Balanced => SHARE_START,
                Share::Fixed(k) => k.min(16),
            };
            // Sixteenths carried from line to line: a line is left when they reach 16.
            let mut carry = 0u8;
            loop {
                let mut batch = back_rx.try_recv().unwrap_or_default();
                while batch.lines.len() < BATCH_LINES && batch.text.len() < BATCH_BYTES {
                    let (n, b) = match lines.next_bytes() {
                        Ok(Some(line)) => line,
                        Ok(None) => {
                            batch.end = Some(Ok(()));
                            break;
                        }
                        Err(e) => {
                            batch.end = Some(Err(e));
                            break;
                        }
                    };
                    carry += sixteenths;
                    let deferred = carry >= 16
                        && format == InputFormat::Text
                        && reader_fast.starts_with_name(b, schema, section);
                    if carry >= 16 {
                        carry -= 16;
                    }
                    let first = batch.ints.len();
                    let (rid, neg) = if deferred {
                        (None, 0)
                    } else {
                        let rid = reader_fast.parse(format, b, schema, section);
                        if rid.is_none() {
                            if let Some(id) = section_of(format, n, b, schema) {
                                section = id;
                            }
                        }
                        batch.ints.extend_from_slice(&reader_fast.ints);
                        (rid, reader_fast.neg)
                    };
                    let start = batch.text.len();
                    batch.text.extend_from_slice(b);
                    batch.lines.push(Ahead {
                        n,
                        start,
                        end: batch.text.len(),
                        rid,
                        deferred,
                        first,
                        last: batch.ints.len(),
                        neg,
                    });
                }
                let done = batch.end.is_some();
                let sent = match tx.try_send(batch) {
                    Ok(()) => {
                        if share == Share::Balanced && sixteenths < SHARE_MOST {
                            sixteenths += 1;
                        }
                        true
                    }
                    Err(std::sync::mpsc::TrySendError::Full(batch)) => {
                        if share == Share::Balanced {
                            sixteenths = sixteenths.saturating_sub(1);
                        }
                        tx.send(batch).is_ok()
                    }
                    Err(std::sync::mpsc::TrySendError::Disconnected(_)) => false,
                };
                // The encoding thread stopped (an error): nothing more to read.
                if !sent || done {
                    return;
                }
            }
        });
        for batch in rx {
            for l in &batch.lines {
                let b = &batch.text[l.start..l.end];
                if l.deferred {
                    pack_line(&mut fast, format, l.n, b, writer, map, true)?;
                    continue;
                }
                match l.rid {
                    Some(rid) => {
                        map.note(writer.records_written(), l.n);
                        let ints = &batch.ints[l.first..l.last];
                        let r = match writer.record_fast(rid, ints, b) {
                            Some(r) => r,
                            None => {
                                fast.ints.clear();
                                fast.ints.extend_from_slice(ints);
                                fast.neg = l.neg;
                                fast.materialize(format, b, rid);
                                writer.record(rid, &fast.values)
                            }
                        };
                        r.map_err(|e| fast.error(format, b, l.n, rid, writer, e))?;
                    }
                    None => match fast_metadata(&mut fast, format, b, l.n, writer, map) {
                        Some(r) => r?,
                        None => general_line(format, l.n, b, writer, map)?,
                    },
                }
            }
            if let Some(end) = batch.end {
                return end.map_err(PackError::from);
            }
            let mut batch = batch;
            batch.text.clear();
            batch.lines.clear();
            batch.ints.clear();
            // The reading thread may have ended: then the batch is dropped.
            let _ = back_tx.send(batch);
        }
        Ok(())
    })
}

/// The section a `section` line opens, if `b` is one the writer may accept.
fn section_of(format: InputFormat, n: usize, b: &[u8], schema: &crate::dtd::Schema) -> Option<u8> {
    // A metadata line (its first word, as the full parser reads it, is `metadata`): not read
    // again by the full parser here. One line in six of a metadata-heavy text is one, and this
    // reading was most of what the reading thread spent on them.
    if format == InputFormat::Text && b.starts_with(b"metadata ") {
        return None;
    }
    // Its JSON twin: a line of record type `metadata` is a change or a record, not a section.
    #[cfg(feature = "json")]
    if format == InputFormat::Jsonl && b.starts_with(b"{\"record\":\"metadata\",") {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    match parse_line(format, s, n).ok()??.line {
        Line::Section(v) => section_id(schema, &v),
        _ => None,
    }
}

/// The lines of the most common records read without building a [`Line`].
// Design: nearly every line of a dump is a record that has no repeat and whose fields are
// integers or byte strings, written as `mtf dump` writes it: `alloc size=16 address=0x1000 …
// note.len=3 note.data="abc"` with the keys in layout order, or its JSON twin.
// For such a line the values go straight into one reused list for the encoder, with no
// allocation per line or per token (a byte string's buffer is reused from line to line); a
// string is taken only quoted, of printable ASCII and without an escape. Anything else
// (another spacing, an annotation, a comment, a number the fast reader does not take, a string
// with an escape or in hex, a section line, a metadata line `fast_metadata` leaves, an error)
// is read by the full parser, from the start of the line, so the
// fast reader never decides what a line means: it only recognises lines whose meaning the full
// parser would give the same values for (tests compare both on every form). What a line is
// compared with is made once: per record type it takes the bytes before each value (` size=`,
// `"size":`), and per section the names of those record types.
struct Fast {
    /// Per record type without a repeat: the text before each value, ` key=`, and whether the
    /// value is a byte string.
    text_keys: Vec<Option<Vec<(Pattern, bool)>>>,
    /// Per record type without a repeat: the JSON before each value, `"key":`, and whether
    /// the value is a byte string.
    #[cfg(feature = "json")]
    json_keys: Vec<Option<Vec<(Pattern, bool)>>>,
    /// The record types of section `names_of` the fast reader takes, by name (as
    /// [`TraceWriter::lookup`] finds them), built when a line of another section is read.
    names: Vec<(Pattern, RecordId)>,
    /// The same names of up to seven bytes, each followed by a space (the text form) or a
    /// quote (JSON), as little-endian words, with the mask of their bytes.
    short_names: Vec<ShortName>,
    names_of: Option<u8>,
    /// The values of the line read last, in layout order, as [`TraceWriter::record_fast`]
    /// takes them: an integer modulo 2⁶⁴ (`neg`: those written with a minus sign, for the
    /// general encoder's messages), a byte string as `start << 32 | len` into the line.
    ints: Vec<u64>,
    neg: u64,
    /// The same values as the general encoder takes them, made by [`Fast::materialize`] for
    /// a record the plan declines (or a batch read ahead).
    values: Vec<In>,
    /// Whether `values` holds byte strings, and the buffers of those of earlier lines, reused
    /// (no allocation per line).
    strings: bool,
    spare: Vec<Vec<u8>>,
    /// The byte offset of each key of that line (for the column of an error), noted only when
    /// `keep_keys` (a line read again for its error).
    keys_at: Vec<usize>,
    keep_keys: bool,
}

/// A record name of up to seven bytes as [`Fast::record`] compares it.
struct ShortName {
    /// The name followed by a space, and by a quote, as little-endian words.
    space: u64,
    quote: u64,
    /// The bytes of those words that count.
    mask: u64,
    len: usize,
    rid: RecordId,
}

/// The longest runs of decimal and hexadecimal digits that cannot pass 2⁶⁴ (longer ones are
/// read with overflow checks).
const DEC_DIGITS: usize = 19;
const HEX_DIGITS: usize = 16;

impl Fast {
    fn new(writer: &TraceWriter<'_>) -> Fast {
        let n = writer.schema().records.len() as RecordId;
        let text_keys = (0..n)
            .map(|rid| {
                writer.plain_keys(rid).map(|(keys, kinds)| {
                    keys.iter()
                        .zip(kinds)
                        .map(|(k, bytes)| (Pattern::new(format!(" {k}=").into_bytes()), bytes))
                        .collect()
                })
            })
            .collect();
        #[cfg(feature = "json")]
        let json_keys = (0..n)
            .map(|rid| {
                writer.plain_keys(rid).map(|(keys, kinds)| {
                    keys.iter()
                        .zip(kinds)
                        .map(|(k, bytes)| (Pattern::new(format!("\"{k}\":").into_bytes()), bytes))
                        .collect()
                })
            })
            .collect();
        Fast {
            text_keys,
            #[cfg(feature = "json")]
            json_keys,
            names: Vec::new(),
            short_names: Vec::new(),
            names_of: None,
            ints: Vec::new(),
            neg: 0,
            values: Vec::new(),
            strings: false,
            spare: Vec::new(),
            keys_at: Vec::new(),
            keep_keys: false,
        }
    }

    /// The record type of a line the fast reader takes, its values in `self.ints`; `None`
    /// for a line for the full parser.
    fn parse(
        &mut self,
        format: InputFormat,
        b: &[u8],
        schema: &crate::dtd::Schema,
        section: u8,
    ) -> Option<RecordId> {
        self.recycle();
        self.ints.clear();
        self.neg = 0;
        self.keys_at.clear();
        if self.names_of != Some(section) {
            self.names_for(section, schema);
        }
        match format {
            InputFormat::Text => self.text(b),
            #[cfg(feature = "json")]
            InputFormat::Jsonl => self.json(b),
        }
    }

    /// Make the table of the record types of `section` the fast reader takes, by name.
    fn names_for(&mut self, section: u8, schema: &crate::dtd::Schema) {
        self.names.clear();
        self.short_names.clear();
        self.names_of = Some(section);
        let Some(scope) = schema.scope_for(section) else {
            return;
        };
        for &rid in &scope.records {
            let name = &schema.record(rid).name;
            if name == "section" || name == "metadata" || self.text_keys[rid as usize].is_none() {
                continue;
            }
            // As the full parser reads a name: letters, digits, `_` and `.`.
            let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
            let found = schema.record_by_name(section, name) == Some(rid);
            if found && !name.is_empty() && name.bytes().all(word) {
                self.names
                    .push((Pattern::new(name.as_bytes().to_vec()), rid));
            }
        }
        self.short_names = self
            .names
            .iter()
            .filter(|(name, _)| name.bytes.len() < 8)
            .map(|(name, rid)| {
                let n = name.bytes.len();
                let word = name.word as u64;
                ShortName {
                    space: word | u64::from(b' ') << (8 * n),
                    quote: word | u64::from(b'"') << (8 * n),
                    mask: u64::MAX >> (8 * (7 - n)),
                    len: n,
                    rid: *rid,
                }
            })
            .collect();
        // Every name is short: the word comparison decides alone.
        if self.short_names.len() < self.names.len() {
            self.short_names.clear();
        }
    }

    /// Whether text line `b` starts with the name of a record type of `section` the fast
    /// reader takes, followed by a space (a record line, not a `section` line).
    #[inline]
    fn starts_with_name(&mut self, b: &[u8], schema: &crate::dtd::Schema, section: u8) -> bool {
        if self.names_of != Some(section) {
            self.names_for(section, schema);
        }
        self.record(b, b' ')
            .is_some_and(|(_, n)| b.get(n) == Some(&b' '))
    }

    /// The record type named `name` in the writer's section, as [`TraceWriter::lookup`] finds
    /// it: from the fast reader's names where it is one of them.
    #[inline]
    fn lookup(&mut self, name: &[u8], writer: &TraceWriter<'_>) -> Option<RecordId> {
        let section = writer.section_id();
        if self.names_of != Some(section) {
            self.names_for(section, writer.schema());
        }
        match self.names.iter().find(|(p, _)| &*p.bytes == name) {
            Some(&(_, rid)) => Some(rid),
            None => writer.lookup(std::str::from_utf8(name).ok()?),
        }
    }

    /// A record type of the current section the fast reader takes whose name starts `b`,
    /// followed by `end` or, in the text form, by the end of the line; with the name's length.
    #[inline(always)]
    fn record(&self, b: &[u8], end: u8) -> Option<(RecordId, usize)> {
        // Names of up to seven bytes and the byte after them: one load and compare per name.
        if !self.short_names.is_empty() {
            if let Some(w) = word_at(b, 0) {
                return self.short_names.iter().find_map(|n| {
                    let want = if end == b' ' { n.space } else { n.quote };
                    (w & n.mask == want).then_some((n.rid, n.len))
                });
            }
        }
        self.names.iter().find_map(|(name, rid)| {
            let n = name.bytes.len();
            (name.at(b, 0) && (b.get(n) == Some(&end) || (end == b' ' && b.len() == n)))
                .then_some((*rid, n))
        })
    }

    /// `name key=N key="…" …`, one space apart, every key in layout order, nothing after.
    fn text(&mut self, b: &[u8]) -> Option<RecordId> {
        let (rid, mut p) = self.record(b, b' ')?;
        for (key, bytes) in self.text_keys[rid as usize].as_deref()? {
            if !key.at(b, p) {
                return None;
            }
            if self.keep_keys {
                self.keys_at.push(p + 1);
            }
            p += key.bytes.len();
            let v = if *bytes {
                let (start, end) = text_string(b, &mut p)?;
                // (A line of 4 GiB or more is left to the full parser.)
                u32::try_from(end).ok()?;
                (start as u64) << 32 | (end - start) as u64
            } else {
                let (v, neg) = text_int(b, &mut p)?;
                note_neg(&mut self.neg, self.ints.len(), neg)?;
                v
            };
            if !matches!(b.get(p), None | Some(b' ')) {
                return None;
            }
            self.ints.push(v);
        }
        (p == b.len()).then_some(rid)
    }

    /// Hand the byte strings' buffers of the last [`Fast::materialize`] back for reuse.
    #[inline(always)]
    fn recycle(&mut self) {
        if !self.values.is_empty() {
            self.recycle_values();
        }
    }

    /// [`Fast::recycle`] where there are values (after a record the plan declined).
    #[cold]
    #[inline(never)]
    fn recycle_values(&mut self) {
        if self.strings {
            self.strings = false;
            for v in self.values.drain(..) {
                if let In::Bytes(b) = v {
                    self.spare.push(b);
                }
            }
        }
        self.values.clear();
    }

    /// The values of the line `b` just read (of record type `rid`) as the general encoder
    /// takes them, in `self.values`: what the fast reader handed over before values were u64s.
    fn materialize(&mut self, format: InputFormat, b: &[u8], rid: RecordId) {
        self.recycle();
        let kinds = match format {
            InputFormat::Text => self.text_keys[rid as usize].as_deref(),
            #[cfg(feature = "json")]
            InputFormat::Jsonl => self.json_keys[rid as usize].as_deref(),
        };
        for (i, &v) in self.ints.iter().enumerate() {
            let bytes = kinds
                .and_then(|k| k.get(i))
                .is_some_and(|(_, bytes)| *bytes);
            let value = if bytes {
                let (start, len) = ((v >> 32) as usize, (v & 0xffff_ffff) as usize);
                let mut buf = self.spare.pop().unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(&b[start..start + len]);
                self.strings = true;
                In::Bytes(buf)
            } else if i < 64 && self.neg >> i & 1 == 1 {
                In::Neg(v as i64)
            } else {
                In::Int(v)
            };
            self.values.push(value);
        }
    }

    /// `{"record":"NAME","section":N,"index":N,"offset":N,"fields":{"key":N,…}}` as `mtf dump
    /// --format jsonl` writes it (numbers, or decimal strings with `--int-strings`).
    #[cfg(feature = "json")]
    fn json(&mut self, b: &[u8]) -> Option<RecordId> {
        let rest = b.strip_prefix(b"{\"record\":\"")?;
        let (rid, name_len) = self.record(rest, b'"')?;
        let mut p = b.len() - rest.len() + name_len;
        for head in [&b"\",\"section\":"[..], b",\"index\":", b",\"offset\":"] {
            if !b[p..].starts_with(head) {
                return None;
            }
            p += head.len();
            json_number(b, &mut p)?;
        }
        if !b[p..].starts_with(b",\"fields\":{") {
            return None;
        }
        p += 11;
        for (i, (key, bytes)) in self.json_keys[rid as usize].as_deref()?.iter().enumerate() {
            if i > 0 {
                if b.get(p) != Some(&b',') {
                    return None;
                }
                p += 1;
            }
            // Keys are words: written without escapes.
            if !key.at(b, p) {
                return None;
            }
            p += key.bytes.len();
            if *bytes {
                // A byte string as `mtf dump --format jsonl` writes bytes that are printable
                // ASCII: a JSON string without an escape, whose characters are the bytes.
                let (start, end) = json_plain_string(b, &mut p)?;
                // (A line of 4 GiB or more is left to the full parser.)
                u32::try_from(end).ok()?;
                self.ints.push((start as u64) << 32 | (end - start) as u64);
                continue;
            }
            // With --int-strings, `"123"` (a decimal string the encoder takes as an integer).
            let quoted = b.get(p) == Some(&b'"');
            if quoted {
                p += 1;
            }
            let neg = b.get(p) == Some(&b'-');
            if neg {
                p += 1;
            }
            let v = json_number(b, &mut p)?;
            if quoted {
                if b.get(p) != Some(&b'"') {
                    return None;
                }
                p += 1;
            }
            // JSON reads `-0` as a float; a string `"-0"` is the integer 0.
            let v = match (neg, v) {
                (false, v) => v,
                (true, 0) if !quoted => return None,
                (true, v) if v <= 1 << 63 => v.wrapping_neg(),
                _ => return None,
            };
            note_neg(&mut self.neg, self.ints.len(), neg)?;
            self.ints.push(v);
        }
        (&b[p..] == b"}}").then_some(rid)
    }

    /// The error of writing the record of line `n` (`b`), at the column of the key it
    /// concerns, as the full parser reports it (the line is read again for the places of its
    /// keys, which the fast reader does not note line by line).
    fn error(
        &mut self,
        format: InputFormat,
        b: &[u8],
        n: usize,
        rid: RecordId,
        writer: &TraceWriter<'_>,
        e: EncodeError,
    ) -> PackError {
        self.keep_keys = true;
        self.parse(format, b, writer.schema(), writer.section_id());
        self.keep_keys = false;
        let at = e
            .field()
            .and_then(|f| writer.plain_keys(rid)?.0.iter().position(|k| &**k == f))
            .and_then(|i| self.keys_at.get(i).copied());
        // (A line the fast reader takes is UTF-8: ASCII and keys.)
        let column = match (self.keys_at.is_empty(), at) {
            (false, Some(at)) => {
                let before = &b[..at.min(b.len())];
                std::str::from_utf8(before).map_or(before.len(), |s| s.chars().count()) + 1
            }
            // A JSON line: the column of the field's key, found by scanning the line now.
            #[cfg(feature = "json")]
            (true, _) => e
                .field()
                .zip(std::str::from_utf8(b).ok())
                .and_then(|(f, s)| crate::text::json_field_column(s, f))
                .unwrap_or(1),
            _ => 1,
        };
        PackError::Text(TextError {
            line: n,
            column,
            kind: TextErrorKind::Encode(e),
        })
    }
}

/// Note in `mask` that value `i` of a line was written negative; `None` past the 64th value
/// (a line for the full parser).
#[inline(always)]
fn note_neg(mask: &mut u64, i: usize, neg: bool) -> Option<()> {
    if neg {
        *mask |= 1u64.checked_shl(u32::try_from(i).ok()?)?;
    }
    Some(())
}

/// A number of the text form at `b[*p]`, as the full parser reads it: `-`, then `0x` and hex
/// digits, or digits; `None` for anything else (and a number out of range).
/// The value modulo 2⁶⁴, and whether it was written with a minus sign.
#[inline(always)]
fn text_int(b: &[u8], p: &mut usize) -> Option<(u64, bool)> {
    let neg = b.get(*p) == Some(&b'-');
    if neg {
        *p += 1;
    } else if !b.get(*p).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let v = if matches!(b.get(*p..*p + 2), Some([b'0', b'x' | b'X'])) {
        *p += 2;
        hex_digits(b, p)?
    } else {
        dec_digits(b, p)?
    };
    if neg && v > 1 << 63 {
        return None;
    }
    Some((if neg { v.wrapping_neg() } else { v }, neg))
}

/// A quoted string at `b[*p]` of printable ASCII without an escape (what `mtf dump` writes for
/// a text byte string that needs none), the bytes between its quotes as `start..end`; `None`
/// for anything else (an escape, a tab, UTF-8, `x"…"`: the full parser reads those).
#[inline]
fn text_string(b: &[u8], p: &mut usize) -> Option<(usize, usize)> {
    if b.get(*p) != Some(&b'"') {
        return None;
    }
    let start = *p + 1;
    let len = b
        .get(start..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || !(0x20..0x7f).contains(&c))?;
    let end = start + len;
    if b[end] != b'"' {
        return None;
    }
    *p = end + 1;
    Some((start, end))
}

/// A metadata line as `mtf dump` writes it, `metadata RECORD.FIELD PROPERTY N…` (one space
/// apart, nothing after), or its JSON twin (`{"record":"metadata",…,"set":{…}}`), for a
/// property with integer arguments (`width`, `none`, `delta`, `default`, `baseOffset`,
/// `stride`): written, and `Some` with the result; `None` for a line for the full parser, which
/// is then read from its start as if this had not been called.
// Design: a metadata-heavy trace has one such line in six, and the full parser builds strings
// and a list of arguments for each (for a JSON line, a map of JSON values first). What is read
// here is what the full parser would read from the same bytes (a record looked up in the
// current section, a field by its name), and anything it would refuse (an unknown record or
// field, a width past 8, a negative number below -2^63) is left to it, so that its message is
// the same.
fn fast_metadata(
    fast: &mut Fast,
    format: InputFormat,
    b: &[u8],
    n: usize,
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
) -> Option<Result<(), PackError>> {
    let mut args = [0u64; 2];
    let (rname, fname, property, nargs) = match format {
        InputFormat::Text => text_metadata(b, &mut args)?,
        #[cfg(feature = "json")]
        InputFormat::Jsonl => json_metadata(b, &mut args)?,
    };
    let prop = match (property, nargs) {
        (b"width", 1) if args[0] <= 8 => MetaProperty::Width(args[0] as u8),
        (b"none", 0) => MetaProperty::Interp(Interp::None),
        (b"delta", 1) => MetaProperty::Interp(Interp::Delta(args[0])),
        (b"default", 1) => MetaProperty::Interp(Interp::Default(args[0])),
        (b"baseOffset", 1) => MetaProperty::Interp(Interp::BaseOffset(args[0])),
        (b"stride", 2) => MetaProperty::Interp(Interp::Stride {
            initial: args[0],
            stride: args[1] as i64,
        }),
        _ => return None,
    };
    let rid = fast.lookup(rname, writer)?;
    let slot = writer
        .schema()
        .record(rid)
        .slot_where(|s| s.name.as_bytes() == fname)?;
    map.note(writer.records_written(), n);
    Some(writer.metadata(rid, slot, prop).map_err(|e| {
        PackError::Text(TextError {
            line: n,
            column: 1,
            kind: TextErrorKind::Encode(e),
        })
    }))
}

/// A metadata line's record, field, property and number of arguments.
type MetaParts<'b> = (&'b [u8], &'b [u8], &'b [u8], usize);

/// The parts of a text metadata line `metadata RECORD.FIELD PROPERTY [ARG [ARG]]`: record,
/// field, property and the number of arguments (in `args`).
fn text_metadata<'b>(b: &'b [u8], args: &mut [u64; 2]) -> Option<MetaParts<'b>> {
    let rest = b.strip_prefix(b"metadata ")?;
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.';
    let tlen = rest.iter().position(|c| !word(c))?;
    // ASCII: split at the first `.` as `str::split_once` does.
    let target = &rest[..tlen];
    let dot = target.iter().position(|&c| c == b'.')?;
    let (rname, fname) = (&target[..dot], &target[dot + 1..]);
    let mut p = 9 + tlen;
    if b.get(p) != Some(&b' ') {
        return None;
    }
    p += 1;
    let plen = b[p..]
        .iter()
        .position(|c| !c.is_ascii_alphabetic())
        .unwrap_or(b.len() - p);
    let property = &b[p..p + plen];
    p += plen;
    let mut nargs = 0;
    while p < b.len() {
        if b[p] != b' ' || nargs == args.len() {
            return None;
        }
        p += 1;
        args[nargs] = text_int(b, &mut p)?.0;
        nargs += 1;
    }
    Some((rname, fname, property, nargs))
}

/// The parts of a JSON metadata line as `mtf dump --format jsonl` writes it:
/// `{"record":"metadata","section":N,"index":N,"offset":N,"set":{"record":"R","field":"F",
/// "property":"P","args":[N,…]}}`, names of ASCII letters, digits, `_` and `.` (no escape; the
/// record's without a `.`, as the full parser splits `R.F` at the first), arguments integers
/// that are not negative.
#[cfg(feature = "json")]
fn json_metadata<'b>(b: &'b [u8], args: &mut [u64; 2]) -> Option<MetaParts<'b>> {
    let mut p = b"{\"record\":\"metadata\"".len();
    if !b.starts_with(b"{\"record\":\"metadata\"") {
        return None;
    }
    for head in [&b",\"section\":"[..], b",\"index\":", b",\"offset\":"] {
        if !b[p..].starts_with(head) {
            return None;
        }
        p += head.len();
        json_number(b, &mut p)?;
    }
    let name = |head: &[u8], p: &mut usize| -> Option<(usize, usize)> {
        if !b.get(*p..)?.starts_with(head) {
            return None;
        }
        *p += head.len();
        let start = *p;
        let len = b[start..]
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.'))?;
        *p += len;
        if b.get(*p) != Some(&b'"') || len == 0 {
            return None;
        }
        *p += 1;
        Some((start, start + len))
    };
    let r = name(b",\"set\":{\"record\":\"", &mut p)?;
    let f = name(b",\"field\":\"", &mut p)?;
    let prop = name(b",\"property\":\"", &mut p)?;
    if b[r.0..r.1].contains(&b'.') || !b[p..].starts_with(b",\"args\":[") {
        return None;
    }
    p += 9;
    let mut nargs = 0;
    while b.get(p) != Some(&b']') {
        if nargs == args.len() || (nargs > 0 && b.get(p) != Some(&b',')) {
            return None;
        }
        if nargs > 0 {
            p += 1;
        }
        args[nargs] = json_number(b, &mut p)?;
        nargs += 1;
    }
    (&b[p..] == b"]}}").then_some((&b[r.0..r.1], &b[f.0..f.1], &b[prop.0..prop.1], nargs))
}

/// Bytes a line is compared with at a position: a key and what surrounds it.
struct Pattern {
    bytes: Box<[u8]>,
    /// For a pattern of at most 16 bytes: its bytes as a little-endian word, and the mask of
    /// the bytes it has.
    word: u128,
    mask: u128,
    /// For a pattern of 4 to 16 bytes: its first and last eight bytes (four if it has fewer
    /// than eight), compared where fewer than 16 bytes of the line are left.
    head: u64,
    tail: u64,
}

impl Pattern {
    fn new(bytes: Vec<u8>) -> Pattern {
        let mut w = [0u8; 16];
        let n = bytes.len().min(16);
        w[..n].copy_from_slice(&bytes[..n]);
        let (head, tail) = ends(&bytes);
        Pattern {
            head,
            tail,
            word: u128::from_le_bytes(w),
            mask: if bytes.len() > 16 {
                0
            } else {
                u128::MAX.checked_shr(8 * (16 - n as u32)).unwrap_or(0)
            },
            bytes: bytes.into(),
        }
    }

    /// Whether `b[p..]` starts with the pattern.
    #[inline(always)]
    fn at(&self, b: &[u8], p: usize) -> bool {
        // One load and compare where 16 bytes are left, rather than a call to memcmp.
        match b.get(p..p + 16) {
            Some(w) if self.mask != 0 => {
                let w = u128::from_le_bytes(w.try_into().unwrap_or([0; 16]));
                w & self.mask == self.word
            }
            // Near the end of a line (a short line, the last keys): the pattern's ends, in
            // two loads that may overlap, rather than a call to memcmp.
            _ if self.mask != 0 && self.bytes.len() >= 4 => b
                .get(p..p + self.bytes.len())
                .is_some_and(|r| ends(r) == (self.head, self.tail)),
            _ => b.get(p..).is_some_and(|r| r.starts_with(&self.bytes)),
        }
    }
}

/// The first and last eight bytes of `b` as little-endian words (four where `b` has 4 to 7
/// bytes; 0 where it has fewer), as [`Pattern::at`] compares them.
#[inline(always)]
fn ends(b: &[u8]) -> (u64, u64) {
    let n = b.len();
    let word8 = |r: &[u8]| u64::from_le_bytes(r.try_into().unwrap_or([0; 8]));
    let word4 = |r: &[u8]| u64::from(u32::from_le_bytes(r.try_into().unwrap_or([0; 4])));
    if n >= 8 {
        (word8(&b[..8]), word8(&b[n - 8..]))
    } else if n >= 4 {
        (word4(&b[..4]), word4(&b[n - 4..]))
    } else {
        (0, 0)
    }
}

/// Decimal digits from `b[*p]` on: at least one; past [`DEC_DIGITS`] read with checks.
#[inline(always)]
fn dec_digits(b: &[u8], p: &mut usize) -> Option<u64> {
    let start = *p;
    let mut v: u64 = 0;
    // Eight bytes at a time while a line has them, then one at a time. A run that ends inside
    // a word ends at a byte that is not a digit: nothing is left to read one at a time.
    while let Some(w) = word_at(b, *p) {
        let n = swar::run(swar::in_range(w, b'0', b'9'));
        if n == 0 {
            return dec_end(b, start, *p, v);
        }
        // One digit and a separator, the commonest number of a dump: no arithmetic.
        if n == 1 && *p == start {
            *p += 1;
            return Some(w & 0x0f);
        }
        v = v
            .wrapping_mul(swar::POW10[n])
            .wrapping_add(swar::decimal(w, n));
        *p += n;
        if n < 8 {
            return dec_end(b, start, *p, v);
        }
    }
    while let Some(&c) = b.get(*p) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        *p += 1;
    }
    dec_end(b, start, *p, v)
}

/// The value of the decimal digits `b[start..end]` read as `v` without overflow checks.
#[inline(always)]
fn dec_end(b: &[u8], start: usize, end: usize, v: u64) -> Option<u64> {
    match end - start {
        0 => None,
        1..=DEC_DIGITS => Some(v),
        _ => checked(&b[start..end], 10),
    }
}

/// Hexadecimal digits from `b[*p]` on: at least one; past [`HEX_DIGITS`] read with checks.
#[inline(always)]
fn hex_digits(b: &[u8], p: &mut usize) -> Option<u64> {
    let start = *p;
    let mut v: u64 = 0;
    while let Some(w) = word_at(b, *p) {
        let n = swar::run(swar::hex(w));
        if n == 0 {
            return hex_end(b, start, *p, v);
        }
        v = (v << (4 * n)) | swar::hexadecimal(w, n);
        *p += n;
        if n < 8 {
            // The run ended inside the word, at a byte that is not a digit.
            return hex_end(b, start, *p, v);
        }
    }
    while let Some(&c) = b.get(*p) {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => break,
        };
        v = (v << 4) | u64::from(d);
        *p += 1;
    }
    hex_end(b, start, *p, v)
}

/// The value of the hex digits `b[start..end]` read as `v` without overflow checks.
#[inline(always)]
fn hex_end(b: &[u8], start: usize, end: usize, v: u64) -> Option<u64> {
    match end - start {
        0 => None,
        1..=HEX_DIGITS => Some(v),
        _ => checked(&b[start..end], 16),
    }
}

/// The eight bytes at `b[p..]` as a little-endian word, if the line has them.
#[inline]
fn word_at(b: &[u8], p: usize) -> Option<u64> {
    b.get(p..p + 8)?.try_into().ok().map(u64::from_le_bytes)
}

/// Digits read eight at a time from a little-endian word (the first character in the low
/// byte), without a branch per digit.
// Design: the numbers of a dump are up to 16 hex or 20 decimal digits, and a loop per digit
// ends in a mispredicted branch whose place varies from number to number; classifying eight
// bytes at once and combining their digits in pairs, fours and eights does it in a fixed number
// of steps. Tests compare them with the loop on every length and character.
mod swar {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;

    /// The high bit of each byte of `w` that is in `lo..=hi` (below 0x80). A byte of 0x80 or
    /// more is never marked, and may disturb only the bytes after it, which [`run`] ignores.
    #[inline]
    pub(super) fn in_range(w: u64, lo: u8, hi: u8) -> u64 {
        let ge_lo = w.wrapping_add(ONES * u64::from(0x80 - lo));
        let gt_hi = w.wrapping_add(ONES * u64::from(0x7f - hi));
        ge_lo & !gt_hi & !w & HIGH
    }

    /// The bytes of `w` that are hex digits.
    #[inline]
    pub(super) fn hex(w: u64) -> u64 {
        in_range(w, b'0', b'9') | in_range(w, b'a', b'f') | in_range(w, b'A', b'F')
    }

    /// How many of the first bytes are marked: 0..=8.
    #[inline]
    pub(super) fn run(marked: u64) -> usize {
        ((!marked & HIGH).trailing_zeros() / 8) as usize
    }

    /// The first `n` (1..=8) digit values of `d` (one per byte), the last digit moved to the
    /// low byte and the bytes after the `n` cleared.
    #[inline]
    fn reversed(d: u64, n: usize) -> u64 {
        (d << (8 * (8 - n))).swap_bytes()
    }

    /// The value of the first `n` (1..=8) decimal digits of `w`.
    #[inline]
    pub(super) fn decimal(w: u64, n: usize) -> u64 {
        let mut e = reversed(w & (ONES * 0x0f), n);
        e = (e & 0x00ff_00ff_00ff_00ff) + ((e >> 8) & 0x00ff_00ff_00ff_00ff) * 10;
        e = (e & 0x0000_ffff_0000_ffff) + ((e >> 16) & 0x0000_ffff_0000_ffff) * 100;
        (e & 0xffff_ffff) + (e >> 32) * 10_000
    }

    /// The value of the first `n` (1..=8) hex digits of `w`.
    #[inline]
    pub(super) fn hexadecimal(w: u64, n: usize) -> u64 {
        let nibbles = (w & (ONES * 0x0f)) + 9 * ((w >> 6) & ONES);
        let mut e = reversed(nibbles, n);
        e = (e | (e >> 4)) & 0x00ff_00ff_00ff_00ff;
        e = (e | (e >> 8)) & 0x0000_ffff_0000_ffff;
        (e | (e >> 16)) & 0xffff_ffff
    }

    /// 10ⁿ for a run of n digits.
    pub(super) const POW10: [u64; 9] = [
        1,
        10,
        100,
        1_000,
        10_000,
        100_000,
        1_000_000,
        10_000_000,
        100_000_000,
    ];
}

/// Digits of a run too long to be read without overflow checks; `None` past 2⁶⁴ − 1.
fn checked(digits: &[u8], radix: u64) -> Option<u64> {
    digits.iter().try_fold(0u64, |v, &c| {
        let d = (c as char).to_digit(radix as u32)?;
        v.checked_mul(radix)?.checked_add(u64::from(d))
    })
}

/// A JSON number without sign, fraction or exponent: `0` or digits not starting with `0`,
/// followed by `,`, `}` or `"`; `None` for anything else (read by the full parser).
/// A JSON string at `b[*p]` of printable ASCII without an escape (what the full parser reads
/// as those bytes): the range of its characters, `*p` past its closing quote.
#[cfg(feature = "json")]
fn json_plain_string(b: &[u8], p: &mut usize) -> Option<(usize, usize)> {
    if b.get(*p) != Some(&b'"') {
        return None;
    }
    let start = *p + 1;
    // The first byte that is not a plain character must be the closing quote.
    let len = b
        .get(start..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || !(0x20..0x7f).contains(&c))?;
    let end = start + len;
    if b[end] != b'"' {
        return None;
    }
    *p = end + 1;
    Some((start, end))
}

#[cfg(feature = "json")]
fn json_number(b: &[u8], p: &mut usize) -> Option<u64> {
    let start = *p;
    let v = dec_digits(b, p)?;
    if *p - start > 1 && b[start] == b'0' {
        return None;
    }
    matches!(b.get(*p), Some(b',' | b'}' | b'"')).then_some(v)
}

/// Turn an error of [`TraceWriter::finish`] into one that names the input line of the record
/// it concerns, when it concerns one.
pub fn finish_error(e: EncodeError, map: &LineMap) -> PackError {
    match e.record_index().and_then(|i| map.line_of(i)) {
        Some(line) => PackError::Text(TextError {
            line,
            column: 1,
            kind: TextErrorKind::Encode(e),
        }),
        None => PackError::Write(e),
    }
}

/// Pack a whole input (header line first) into a trace in memory, with `schema`.
pub fn pack_to_vec(
    schema: &crate::dtd::Schema,
    input: impl BufRead,
    format: InputFormat,
) -> Result<Vec<u8>, PackError> {
    let mut lines = LineReader::new(input);
    let h = read_header(&mut lines, format)?;
    let mut w = TraceWriter::in_memory(schema, h.class, h.order, &h.dtd);
    let mut map = LineMap::default();
    pack_lines(&mut lines, format, &mut w, &mut map)?;
    w.finish_to_vec().map_err(|e| finish_error(e, &map))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of the `hatf-bench` DTD the fast reader takes, in the text form and as JSON lines.
    const TAKEN: [&[&str]; 2] = [
        &[
            "alloc size=16 address=0x7f0000001000 time=5 thread=1 heap=0",
            "alloc size=-1 address=0X1F time=0 thread=0 heap=-9223372036854775808",
            "free address=18446744073709551615 time=00 thread=-0 heap=-0x10",
            "realloc size=1 old=2 address=3 time=4 thread=5 heap=6",
        ],
        &[
            r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":16,"address":139637976731648,"time":5,"thread":1,"heap":0}}"#,
            r#"{"record":"free","section":1,"index":0,"offset":0,"fields":{"address":"18446744073709551615","time":"-0","thread":-5,"heap":"-9223372036854775808"}}"#,
        ],
    ];

    /// Lines the fast reader leaves to the full parser, in the text form and as JSON lines.
    const REFUSED: [&[&str]; 2] = [
        &[
            "alloc size=16  address=1 time=5 thread=1 heap=0",
            " alloc size=16 address=1 time=5 thread=1 heap=0",
            "alloc size=16:x address=1 time=5 thread=1 heap=0",
            "alloc size=16~0x10 address=1 time=5 thread=1 heap=0",
            "alloc address=1 size=16 time=5 thread=1 heap=0",
            "alloc size=16 address=1 time=5 thread=1",
            "alloc size=16 address=1 time=5 thread=1 heap=0 # note",
            "alloc size=16 address=1 time=5 thread=1 heap=0 ",
            "alloc size=18446744073709551616 address=1 time=5 thread=1 heap=0",
            "alloc size=-9223372036854775809 address=1 time=5 thread=1 heap=0",
            "alloc size=0x address=1 time=5 thread=1 heap=0",
            "alloc size=\"16\" address=1 time=5 thread=1 heap=0",
            "alloc size=#1 address=1 time=5 thread=1 heap=0",
            "section number=1",
            "metadata alloc.size width 2",
            "nosuch a=1",
        ],
        &[
            r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":016,"address":1,"time":5,"thread":1,"heap":0}}"#,
            r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":-0,"address":1,"time":5,"thread":1,"heap":0}}"#,
            r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":1.5,"address":1,"time":5,"thread":1,"heap":0}}"#,
            r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":1,"address":1,"time":5,"thread":1,"heap":0}} "#,
            r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"address":1,"size":1,"time":5,"thread":1,"heap":0}}"#,
            r#"{"record":"alloc", "section":1,"index":10,"offset":20,"fields":{"size":1,"address":1,"time":5,"thread":1,"heap":0}}"#,
            r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":99999999999999999999,"address":1,"time":5,"thread":1,"heap":0}}"#,
        ],
    ];

    /// Each line of `lines` (text form, JSON lines) with its format.
    fn with_format(
        lines: [&'static [&'static str]; 2],
    ) -> impl Iterator<Item = (InputFormat, &'static str)> {
        let [text, jsonl] = lines;
        let text = text.iter().map(|l| (InputFormat::Text, *l));
        text.chain(jsonl.iter().map(|l| (InputFormat::Jsonl, *l)))
    }

    /// A writer of `schema` (64-bit, little-endian, as a header line gives them) in section 1.
    fn writer_in_section_1(schema: &crate::dtd::Schema) -> TraceWriter<'_> {
        use crate::text::Parsed;
        let header = "%mtf 1 dtd=\"x\" class=64 order=little";
        let Some(Parsed {
            line: Line::Header(h),
            ..
        }) = parse_line(InputFormat::Text, header, 1).unwrap()
        else {
            panic!("a header")
        };
        let mut w = TraceWriter::in_memory(schema, h.class, h.order, "x");
        w.section(1).unwrap();
        w
    }

    /// `line` is taken by the fast reader, as the record type the full parser names, with the
    /// values the full parser and the assembler give it.
    fn taken_as_the_full_parser_reads_it(
        fast: &mut Fast,
        w: &TraceWriter<'_>,
        format: InputFormat,
        line: &str,
    ) {
        use crate::text::Parsed;
        let rid = fast.parse(format, line.as_bytes(), w.schema(), w.section_id());
        assert!(rid.is_some(), "{line}");
        let Some(Parsed {
            line: Line::Record { name, fields },
            ..
        }) = parse_line(format, line, 1).unwrap()
        else {
            panic!("{line}: not a record")
        };
        assert_eq!(rid, w.lookup(&name));
        let want = w.assemble(rid.unwrap(), &fields).unwrap();
        fast.materialize(format, line.as_bytes(), rid.unwrap());
        assert_eq!(fast.values, want, "{line}");
    }

    /// The fast reader takes exactly the lines it should, with the values the full parser and
    /// the assembler give them.
    #[cfg(all(feature = "import", feature = "json"))]
    #[test]
    fn fast_lines_read_as_the_full_parser_reads_them() {
        let dtd = include_str!("../benches/hatf-bench.dtd");
        let schema = crate::dtd::parse_str("hatf-bench.dtd", dtd).unwrap().schema;
        let w = writer_in_section_1(&schema);
        let mut fast = Fast::new(&w);
        for (format, line) in with_format(TAKEN) {
            taken_as_the_full_parser_reads_it(&mut fast, &w, format, line);
        }
        for (format, line) in with_format(REFUSED) {
            assert_eq!(
                fast.parse(format, line.as_bytes(), &schema, w.section_id()),
                None,
                "{line}"
            );
        }
    }

    /// Records with a byte string: the fast reader takes a plain quoted string with the values
    /// the full parser and the assembler give, and leaves every other form to the full parser.
    #[cfg(feature = "import")]
    #[test]
    fn fast_strings_read_as_the_full_parser_reads_them() {
        let dtd = include_str!("../benches/bench-metadata.dtd");
        let schema = crate::dtd::parse_str("bench-metadata.dtd", dtd)
            .unwrap()
            .schema;
        let w = writer_in_section_1(&schema);
        let mut fast = Fast::new(&w);
        let head = "alloc size=16 address=0x7f0000001000 time=5 thread=0 heap=0";
        for note in [
            "note.len=3 note.data=\"abc\"",
            "note.len=0 note.data=\"\"",
            "note.len=2 note.data=\"a \"",
        ] {
            let line = format!("{head} {note}");
            // Twice: the second time with the first line's buffer.
            for _ in 0..2 {
                taken_as_the_full_parser_reads_it(&mut fast, &w, InputFormat::Text, &line);
            }
        }
        for note in [
            "note.len=1 note.data=\"\\x41\"",
            "note.len=1 note.data=\"\t\"",
            "note.len=2 note.data=\"\u{e9}\"",
            "note.len=1 note.data=x\"41\"",
            "note.len=1 note.data=\"a\":x",
            "note.len=1 note.data=\"a\" ",
            "note.len=1 note.data=\"a",
            "note.len=1 note.data=1",
            "note.data=\"a\" note.len=1",
        ] {
            let line = format!("{head} {note}");
            assert_eq!(
                fast.parse(InputFormat::Text, line.as_bytes(), &schema, 1),
                None,
                "{line}"
            );
        }
    }

    /// The same as JSON lines: a byte string written as a JSON string of printable ASCII
    /// without an escape is taken with the full parser's values; an escape, a character
    /// outside printable ASCII, `{"hex": …}`, a number or another order is left to it.
    #[cfg(all(feature = "import", feature = "json"))]
    #[test]
    fn fast_json_strings_read_as_the_full_parser_reads_them() {
        let dtd = include_str!("../benches/bench-metadata.dtd");
        let schema = crate::dtd::parse_str("bench-metadata.dtd", dtd)
            .unwrap()
            .schema;
        let w = writer_in_section_1(&schema);
        let mut fast = Fast::new(&w);
        let line = |note: &str| {
            format!(
                "{{\"record\":\"alloc\",\"section\":1,\"index\":2,\"offset\":72,\"fields\":\
                 {{\"size\":16,\"address\":139637976727552,\"time\":5,\"thread\":0,\
                 \"heap\":0,{note}}}}}"
            )
        };
        for note in [
            r#""note.len":3,"note.data":"abc""#,
            r#""note.len":0,"note.data":"""#,
            r#""note.len":"2","note.data":"a ""#,
            r#""note.len":2,"note.data":"{}""#,
        ] {
            let line = line(note);
            for _ in 0..2 {
                taken_as_the_full_parser_reads_it(&mut fast, &w, InputFormat::Jsonl, &line);
            }
        }
        for note in [
            r#""note.len":1,"note.data":"\u0041""#,
            r#""note.len":1,"note.data":"\"""#,
            "\"note.len\":1,\"note.data\":\"\t\"",
            "\"note.len\":2,\"note.data\":\"\u{e9}\"",
            r#""note.len":1,"note.data":{"hex":"41"}"#,
            r#""note.len":1,"note.data":1"#,
            r#""note.len":1,"note.data":"a"#,
            r#""note.data":"a","note.len":1"#,
            r#""note.len":1, "note.data":"a""#,
        ] {
            let line = line(note);
            assert_eq!(
                fast.parse(InputFormat::Jsonl, line.as_bytes(), &schema, 1),
                None,
                "{line}"
            );
        }
    }

    /// The word-at-a-time digits read as the loop over characters reads them: every run length,
    /// every byte around a run, every position near the end of a line.
    #[test]
    fn digits_eight_at_a_time_as_one_at_a_time() {
        fn slow(b: &[u8], p: usize, radix: u32) -> (Option<u64>, usize) {
            let n = b[p..]
                .iter()
                .take_while(|&&c| (c as char).is_digit(radix))
                .count();
            let v = (n > 0)
                .then(|| {
                    u64::from_str_radix(std::str::from_utf8(&b[p..p + n]).unwrap(), radix).ok()
                })
                .flatten();
            (v, p + n)
        }
        let digits = b"0123456789abcdefABCDEF";
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let len = (next() % 26) as usize;
            let mut line: Vec<u8> = (0..len)
                .map(|_| digits[(next() % digits.len() as u64) as usize])
                .collect();
            // Then anything: a separator, a byte of UTF-8, a character next to a digit's range.
            let after = [
                b' ', b'=', 0xc3, 0xff, b'/', b':', b'@', b'G', b'`', b'g', b'"', 0x80,
            ];
            line.push(after[(next() % after.len() as u64) as usize]);
            line.extend((0..next() % 10).map(|_| digits[(next() % 10) as usize]));
            let p = (next() % 3) as usize % line.len().max(1);
            if p >= line.len() {
                continue;
            }
            for (radix, f) in [
                (10, dec_digits as fn(&[u8], &mut usize) -> Option<u64>),
                (16, hex_digits),
            ] {
                let (want, end) = slow(&line, p, radix);
                let mut q = p;
                let got = f(&line, &mut q);
                assert_eq!((got, q), (want, end), "{radix} {:?} at {p}", line);
            }
        }
        for s in [
            "18446744073709551615",
            "18446744073709551616",
            "000000000000000000000001",
            "ffffffffffffffff",
            "10000000000000000",
            "00000000000000000000ff",
        ] {
            for (radix, f) in [
                (10, dec_digits as fn(&[u8], &mut usize) -> Option<u64>),
                (16, hex_digits),
            ] {
                let mut q = 0;
                assert_eq!(
                    (f(s.as_bytes(), &mut q), q),
                    slow(s.as_bytes(), 0, radix),
                    "{s}"
                );
            }
        }
    }

    #[test]
    fn line_map_follows_shifts() {
        let mut m = LineMap::default();
        m.note(0, 2);
        m.note(1, 3);
        m.note(2, 6);
        assert_eq!(m.line_of(0), Some(2));
        assert_eq!(m.line_of(1), Some(3));
        assert_eq!(m.line_of(2), Some(6));
        assert_eq!(m.line_of(5), Some(9));
        assert_eq!(m.0.len(), 2);
    }
}
