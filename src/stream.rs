//! Reading a trace as a stream (a pipe, standard input, a compressed trace opened with
//! [`crate::OpenOptions::stream`]) from a bounded window of its bytes, in one pass, as they
//! arrive: the crate's `TraceStream`, read through [`crate::events::read`] (the one way to get a
//! trace's events), and [`StreamError`], why such a stream's events stopped early.
//!
//! ```
//! use metatf::decode::Event;
//! use metatf::events::{read, EventOptions};
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let opened = metatf::OpenOptions::new().stream(true).open("-")?;
//! let reader = opened.reader();
//! let ((), end) = read(&opened, &reader, &EventOptions::new(), |_| {}, |events| {
//!     while let Some(event) = events.next_event() {
//!         if let Event::Record(r) = event {
//!             println!("{} at byte {}", r.name(), r.offset());
//!         }
//!     }
//! });
//! if let Some(e) = end.fault {
//!     eprintln!("{e}");
//! }
//! # Ok(()) }
//! ```

// Unsafe code (docs/architecture.md, *Unsafe code*): the decoder and its reader borrow the
// window the driver owns (the design note on unsafe below).
#![allow(unsafe_code)]

// Design: the header and the whole section table lie at the front of a trace (docs/format.md
// §2), so they are read first and the regions are known (a trace without sections: its one
// region runs to the end, known when the stream ends). The decoder then reads a window
// `[base, base + len)` of the file (`decode::Bytes::Window` with its `base`), while regions,
// positions and every offset it reports stay absolute. At a record boundary with fewer than
// half a window of bytes left (and the region going on) it stops; the driver takes a checkpoint
// (`Records::checkpoint`: the complete metadata state, live sets included), keeps the unread
// tail, reads more and resumes (`Reader::records_from`) on a reader over the new window. A
// record longer than half a window stops the decoder in its middle, with its state changed:
// the driver then doubles the window (up to `limits::MAX_STREAM_WINDOW`), resumes from the
// checkpoint at the window's start and drops the events it had already given out (decoding is
// deterministic, so they are the same events). At the end of the last region the decoder stops
// once more before its trace-wide checks, so that the container's checks that need the file's
// length (docs/format.md §2.2: the last section ends at the end of the file; `nrecords`) are
// made first, with the same errors a file gives. What a stream cannot do is random access
// (`OpenOptions::open` spools a trace whose DTD declares references into tables): a metadata
// record that makes a field such a reference stops the decoder; a trace whole in its first
// window is decoded as a file from the start; while the window still holds the trace's start
// (or the trace is a regular file, which can be read again) and no record of a section that
// turns out a table was given out, the rest is read whole after all and decoded as a file (the
// events given out dropped). A pipe cannot be read again: a stream of a trace with sections that
// is not a regular file keeps every byte it drops from its window in the unlinked spool file
// `io` reads long inputs into (`io::Kept`, made on first use, bounded by the input cap like the
// stream itself, dropped once the last region is read), so that it too is mapped whole and
// decoded as a file. Only when neither is possible (no temporary folder, a full disk) does the
// stream end with [`StreamError::RandomAccess`].
// A compressed stream that fails (cut short) with salvage ends there: its bytes are decoded as
// a file of that length, and the fault is `TraceStream::take_input_fault`.
//
// Design: no self-reference. The decoder's state (`decode::Decoder`: position, metadata state,
// buffers) holds no borrow of the bytes it decodes; the reader is handed to each call. So the
// stream owns a `Reader` that owns the window (`decode::Bytes::Window`) beside the decoder, both
// plain fields; events borrow `&mut self`, so none outlives a refill, which takes the window
// back out of the reader, slides and refills it, and builds a reader over it again.

use std::sync::Arc;

use miette::Diagnostic;

use crate::container::{ContainerError, Trace};
use crate::decode::{Bytes, Checkpoint, Decoder, Event, EventStream, Reader, Region, Window};
use crate::dtd::Schema;
use crate::io::{IoError, StreamInput};
use crate::layout::Compiled;

/// Why a trace read as a stream could not be read to its end: what the same bytes in a file
/// give when opened ([`StreamError::Io`], [`StreamError::Container`]), found only when the
/// stream reaches them, or what a stream cannot do.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum StreamError {
    /// The stream could not be read (a read error, a corrupt or truncated compressed stream, an
    /// input over the cap).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Io(#[from] IoError),
    /// The container is invalid: the stream ends before its last region does, goes on after
    /// it, or is too short for its header's claims.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Container(#[from] ContainerError),
    /// A metadata record makes a field a reference into a section read as a table.
    #[error("{trace}: the metadata record at byte {offset} makes a field a reference into a section read as a table (docs/format.md §8), which needs random access to the trace")]
    #[diagnostic(
        code(mtf::stream::random_access),
        help("give the trace as a file (decompressed if it is compressed), or set MTF_STREAM_WINDOW=0 to copy a stream to a temporary file first")
    )]
    RandomAccess {
        /// The trace as named.
        trace: String,
        /// Offset of the metadata record.
        offset: u64,
    },
    /// A record is longer than the largest window.
    #[error("{trace}: the record at byte {offset} is longer than {limit} bytes, the most a stream is read in at once")]
    #[diagnostic(
        code(mtf::stream::record_too_long),
        help("give the trace as a file, or set MTF_STREAM_WINDOW=0 to copy a stream to a temporary file first")
    )]
    RecordTooLong {
        /// The trace as named.
        trace: String,
        /// Offset of the record.
        offset: u64,
        /// [`crate::limits::MAX_STREAM_WINDOW`].
        limit: u64,
    },
    /// The events of a trace opened to be read as a stream were read already: a stream's
    /// events are given once.
    #[error("the trace was opened to be read as a stream, and its events were read already: a stream gives them once")]
    #[diagnostic(
        code(mtf::stream::read_already),
        help("open the trace again, or open it without `OpenOptions::stream` to read it more than once")
    )]
    ReadAlready,
}

/// What [`TraceStream::on_fault`] calls.
type OnFault<'o> = Box<dyn FnMut(&StreamError) + 'o>;

/// What [`TraceStream`] knows of the trace before reading its records.
pub(crate) struct Head<'o> {
    pub(crate) trace: &'o Trace<'static>,
    pub(crate) schema: &'o Schema,
    pub(crate) compiled: Arc<Compiled>,
    /// The trace as named in messages.
    pub(crate) name: String,
    /// How the whole input is read when a stream turns out to need random access.
    pub(crate) input: crate::io::InputOptions,
}

/// The events of a trace read as a stream, in trace order, from a window of a few MiB (see
/// [`crate::OpenOptions::stream_window`]); an [`EventStream`] like `Reader::records`, whose
/// events (record views, problems, damage, with absolute offsets) are exactly those of the same
/// bytes in a file. When the stream cannot be read to its end the events stop, and
/// `TraceStream::take_fault` says why: the error the same bytes give as a file when opened.
pub(crate) struct TraceStream<'o> {
    /// The reader over the window (which it then holds: `buf` is empty), or over the whole
    /// trace read after all.
    reader: Option<Reader<'o>>,
    /// The decode of `reader`'s bytes.
    decoder: Option<Decoder>,
    /// The window, while no reader holds it.
    buf: Vec<u8>,
    base: u64,
    src: StreamInput,
    eof: bool,
    head: Head<'o>,
    regions: Vec<Region>,
    window: usize,
    cp: Checkpoint,
    /// Events given out since `cp`.
    since: u64,
    /// Events still to drop (given out before a resume from `cp`).
    skip: u64,
    skip_values: bool,
    fault: Option<StreamError>,
    /// A damaged container found where the stream ended: the regions were cut back to the
    /// bytes there are, their records decoded as a damaged file's are, and the damage is the
    /// fault once they have all been given out.
    damage: Option<StreamError>,
    on_fault: Option<OnFault<'o>>,
    done: bool,
    /// The length of the whole trace, once read after all (a stream that needed random
    /// access); `reader` then reads it as a file.
    whole: Option<u64>,
    /// With salvage, the fault of a compressed stream that ended early: the stream ended
    /// there, its bytes decoded as a file of that length is.
    input_fault: Option<IoError>,
    /// The sections read as tables, for a trace decoded whole after all.
    tables: Vec<u8>,
    /// Events given out since the start.
    given: u64,
    /// The bytes dropped from the window so far (`[0, base)`), kept while the stream may still
    /// need random access (see the design note).
    kept: Option<crate::io::Kept>,
    /// Whether to keep dropped bytes: a trace with sections (a table is a section) that cannot
    /// be read again from its start (not a regular file).
    may_keep: bool,
}

impl<'o> TraceStream<'o> {
    /// A stream of `head`'s trace whose first `buf.len()` bytes have been read from `src`.
    pub(crate) fn new(
        head: Head<'o>,
        src: StreamInput,
        buf: Vec<u8>,
        window: usize,
    ) -> TraceStream<'o> {
        let regions = Window::regions_of(head.trace);
        let mut s = TraceStream {
            reader: None,
            decoder: None,
            buf,
            base: 0,
            src,
            eof: false,
            head,
            regions,
            window: window.max(1),
            cp: Checkpoint::start(),
            since: 0,
            skip: 0,
            skip_values: false,
            fault: None,
            damage: None,
            on_fault: None,
            done: false,
            whole: None,
            input_fault: None,
            tables: Vec::new(),
            given: 0,
            kept: None,
            may_keep: false,
        };
        s.may_keep = s.regions.iter().any(|r| r.section != 0)
            && !s
                .head
                .trace
                .path()
                .is_some_and(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()));
        let target = s.window;
        if let Err(e) = s.fill(target) {
            s.fail(e);
        } else if s.eof && (s.damage.is_none() || s.head.input.salvages()) {
            // Design: the whole trace is in the window: it is decoded as the file of those
            // bytes, so that a trace whose metadata makes a section a table (which needs random
            // access) reads as a file does, even when records of that section come before the
            // metadata record that says so.
            match s.read_whole(None) {
                Ok(_) => {}
                Err(e) => s.fail(e),
            }
        } else {
            s.build();
        }
        s
    }

    /// Validate only, as [`Records::skip_values`].
    pub fn skip_values(&mut self, skip: bool) {
        self.skip_values = skip;
        if let Some(d) = self.decoder.as_mut() {
            d.skip_values(skip);
        }
    }

    /// Call `f` with the fault as soon as it is found, before the events stop (the command
    /// line reports it there and exits, as it would have when opening the same bytes as a
    /// file).
    pub fn on_fault(&mut self, f: impl FnMut(&StreamError) + 'o) {
        self.on_fault = Some(Box::new(f));
        if let Some(e) = &self.fault {
            if let Some(f) = self.on_fault.as_mut() {
                f(e);
            }
        }
    }

    /// Why the events stopped before the end of the trace, if they did (taken).
    pub fn take_fault(&mut self) -> Option<StreamError> {
        self.fault.take()
    }

    /// For a trace opened with [`crate::OpenOptions::salvage`], the fault of a compressed
    /// stream that ended early or turned corrupt ([`IoError::Decompress`]), taken: the events
    /// are those of the bytes decompressed before it, as for a file of that length (whose
    /// damaged container is then the stream's fault), exactly as `zstd -dc | mtf … -` gives
    /// them.
    pub fn take_input_fault(&mut self) -> Option<IoError> {
        self.input_fault.take()
    }

    /// A read error `e`: with salvage, a compressed stream's fault ends the stream where it
    /// is (the bytes before it were kept); anything else is the stream's fault.
    fn salvage_or(&mut self, e: IoError) -> Result<(), StreamError> {
        if self.head.input.salvages() && matches!(e, IoError::Decompress { .. }) {
            self.input_fault = Some(e);
            return self.at_end();
        }
        Err(e.into())
    }

    /// The sections read as tables (`Reader::is_table`): known once the stream needed random
    /// access and was decoded whole (a streamed trace has none).
    pub fn tables(&self) -> &[u8] {
        &self.tables
    }

    /// The regions of the trace; the last one ends at `u64::MAX` until the stream has ended
    /// when the trace has no sections (then it ends at the end of the stream).
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The bytes read from the stream so far (decompressed).
    pub fn bytes_read(&self) -> u64 {
        match self.whole {
            Some(len) => len,
            None => self.src.bytes_read(),
        }
    }

    /// The decode is over: the damage found at the stream's end, if any, is the fault.
    fn finish(&mut self) {
        match self.damage.take() {
            Some(e) => self.fail(e),
            None => self.done = true,
        }
    }

    fn fail(&mut self, e: StreamError) {
        self.done = true;
        self.drop_decoder();
        if let Some(f) = self.on_fault.as_mut() {
            f(&e);
        }
        self.fault = Some(e);
    }

    /// Drops the decoder and its reader, taking the window back.
    fn drop_decoder(&mut self) {
        self.decoder = None;
        if let Some(reader) = self.reader.take() {
            if let Bytes::Window { buf, .. } = reader.input.bytes {
                self.buf = buf;
            }
        }
    }

    /// Reads until the window holds `target` bytes or the stream ends; at its end, makes the
    /// container checks that need the file's length.
    fn fill(&mut self, target: usize) -> Result<(), StreamError> {
        if self.eof || self.buf.len() >= target {
            return Ok(());
        }
        self.drop_decoder();
        // The window grows as bytes arrive (at most doubling), so that a short stream does not
        // cost a large window's memory.
        let mut have = self.buf.len();
        while have < target {
            let step = (target - have).min(have.max(64 << 10));
            self.buf.resize(have + step, 0);
            let n = match self.src.read_full(&mut self.buf[have..]) {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(have);
                    return self.salvage_or(e);
                }
            };
            self.buf.truncate(have + n);
            have += n;
            if n < step {
                return self.at_end();
            }
        }
        Ok(())
    }

    /// The stream has ended: the file is `base + buf.len()` bytes long.
    fn at_end(&mut self) -> Result<(), StreamError> {
        // A short read that ended in a fault: the bytes before it were kept.
        if let Some(e) = self.src.take_fault() {
            if !(self.head.input.salvages() && matches!(e, IoError::Decompress { .. })) {
                return Err(e.into());
            }
            self.input_fault = Some(e);
        }
        self.eof = true;
        let len = self.base + self.buf.len() as u64;
        if let Some(e) = self.length_damage(len) {
            // Design: the records before the damage are given out as a damaged file's are
            // (the regions cut back to the bytes there are, no record count to check), and
            // the damage is reported after them: failing here would lose the records of the
            // window and of the regions still to come.
            self.damage = Some(e);
            let current = self.cp.region();
            let mut i = 0;
            self.regions.retain(|r| {
                let keep = i <= current || r.start < len;
                i += 1;
                keep
            });
        }
        for r in &mut self.regions {
            r.start = r.start.min(len);
            r.end = r.end.min(len);
        }
        Ok(())
    }

    /// What is wrong with the container of a trace of `len` bytes with this head, if anything.
    fn length_damage(&self, len: u64) -> Option<StreamError> {
        let e = Trace::check_stream_length(self.head.trace.bytes(), len)?;
        Some(
            match self.head.trace.path() {
                Some(p) => ContainerError::InFile {
                    path: p.to_path_buf(),
                    source: Box::new(e),
                },
                None => e,
            }
            .into(),
        )
    }

    /// Reads the rest of the stream, keeping none of it (after the last region).
    fn drain(&mut self) -> Result<(), StreamError> {
        self.drop_decoder();
        // Past the last region nothing needs random access any more.
        self.kept = None;
        self.may_keep = false;
        // Only the length counts: the window is emptied and `base` moves past the rest.
        self.base += self.buf.len() as u64;
        self.buf.clear();
        let mut chunk = vec![0u8; self.window.clamp(4096, 1 << 20)];
        loop {
            let n = match self.src.read_full(&mut chunk) {
                Ok(n) => n,
                Err(e) => return self.salvage_or(e),
            };
            self.base += n as u64;
            if n < chunk.len() {
                break;
            }
        }
        self.at_end()
    }

    /// Reads the rest of the stream and decodes the whole trace from its start, dropping the
    /// events given out since the start (from the regions up to `upto`; `None`: none given).
    fn read_whole(&mut self, upto: Option<usize>) -> Result<bool, StreamError> {
        self.drop_decoder();
        let buf = std::mem::take(&mut self.buf);
        let src = std::mem::replace(&mut self.src, crate::io::StreamInput::empty());
        // The whole trace already in the window stays there (nothing more to read, nothing to
        // spool); the rest of a longer one is read as a file's would be.
        let options = if self.eof {
            self.head.input.clone().spool_above(u64::MAX)
        } else {
            self.head.input.clone()
        };
        let (input, fault) = src.into_input(buf, &options)?;
        let skip = self.since;
        self.decode_whole(input, fault, upto, skip)
    }

    /// The trace read again from its start, as a file (a compressed file: it can be), once the
    /// stream needs random access after its start left the window: decoded whole, the events
    /// given out dropped, unless records of a table were given out as records. `Ok(false)`
    /// also when the trace is not a regular file.
    fn reopen(&mut self, upto: usize) -> Result<bool, StreamError> {
        let Some(path) = self.head.trace.path().map(|p| p.to_path_buf()) else {
            return Ok(false);
        };
        if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            return Ok(false);
        }
        self.drop_decoder();
        self.src = crate::io::StreamInput::empty();
        self.buf = Vec::new();
        let (input, fault) = crate::io::Input::open_with(&path, &self.head.input)?;
        let skip = self.given;
        self.decode_whole(input, fault, Some(upto), skip)
    }

    /// Keeps the window's first `n` bytes, about to be dropped, when the stream keeps what it
    /// drops (the spool is made on first use).
    fn keep(&mut self, n: usize) {
        if n == 0 || !self.may_keep {
            return;
        }
        let buf = std::mem::take(&mut self.buf);
        self.keep_bytes(&buf[..n]);
        self.buf = buf;
    }

    /// Appends `bytes`, the next bytes of the stream, to the spool of dropped bytes. Keeping is
    /// best effort: when the spool cannot be made or written, the stream goes on without it
    /// (and a later need of random access ends it, [`StreamError::RandomAccess`]).
    fn keep_bytes(&mut self, bytes: &[u8]) {
        if !self.may_keep {
            return;
        }
        if self.kept.is_none() {
            self.kept = crate::io::Kept::start(&self.head.input);
        }
        let path = self.src.path().to_path_buf();
        let kept = self
            .kept
            .as_mut()
            .is_some_and(|k| k.keep(bytes, &path).is_ok());
        if !kept {
            self.kept = None;
            self.may_keep = false;
        }
    }

    /// Reads the rest of a stream whose dropped bytes were kept, maps the whole and decodes it
    /// as a file from its start, dropping the events given out (`Ok(false)` when records of a
    /// table were given out as records, as for [`TraceStream::reopen`]).
    fn read_kept(&mut self, upto: usize) -> Result<bool, StreamError> {
        let Some(kept) = self.kept.take() else {
            return Ok(false);
        };
        debug_assert_eq!(kept.len(), self.base);
        self.drop_decoder();
        self.may_keep = false;
        let buf = std::mem::take(&mut self.buf);
        let src = std::mem::replace(&mut self.src, crate::io::StreamInput::empty());
        let (input, fault) = src.into_input_kept(kept, buf, &self.head.input)?;
        let skip = self.given;
        self.decode_whole(input, fault, Some(upto), skip)
    }

    /// Decodes `input`, the whole trace, as a file from its start, dropping the first `skip`
    /// events (given out already).
    fn decode_whole(
        &mut self,
        input: crate::io::Input,
        fault: Option<IoError>,
        upto: Option<usize>,
        skip: u64,
    ) -> Result<bool, StreamError> {
        let path = self.head.trace.path().map(|p| p.to_path_buf());
        // With salvage, a compressed stream cut short is decoded as the file of the bytes it
        // gave, damaged container and all (as `OpenOptions::open` reads it).
        let trace = if self.head.input.salvages() {
            if fault.is_some() {
                self.input_fault = fault;
            }
            self.damage = self.length_damage(input.bytes().len() as u64);
            Trace::salvage(input.into(), path)?
        } else {
            Trace::from_data(input.into(), path)?
        };
        self.whole = Some(trace.bytes().len() as u64);
        self.eof = true;
        self.skip = skip;
        self.since = 0;
        let reader = Reader::owning(trace, self.head.schema, self.head.compiled.clone());
        self.tables = reader
            .regions()
            .iter()
            .map(|g| g.section)
            .filter(|&s| reader.is_table(s))
            .collect();
        // Records of a section that turns out a table were given out as records: what a file
        // gives cannot be given any more.
        if upto.is_some_and(|upto| {
            reader
                .regions()
                .iter()
                .take(upto + 1)
                .any(|g| reader.is_table(g.section))
        }) {
            return Ok(false);
        }
        let mut records = reader.records();
        records.skip_values(self.skip_values);
        self.decoder = Some(records.into_decoder());
        self.reader = Some(reader);
        Ok(true)
    }

    /// A reader over the window and a decoder resumed from `cp`.
    fn build(&mut self) {
        self.drop_decoder();
        let bytes = Bytes::Window {
            buf: std::mem::take(&mut self.buf),
            base: self.base,
        };
        // A damaged container's record count is not checked (as for a salvaged file).
        let check_count = self.damage.is_none();
        let window = Window::of_head(
            bytes,
            self.head.trace.header(),
            self.regions.clone(),
            check_count,
            true,
        );
        let reader = Reader::from_window(window, self.head.schema, self.head.compiled.clone());
        let decoder = reader.records_from(&self.cp).map(|r| r.into_decoder());
        self.reader = Some(reader);
        match decoder {
            Ok(mut decoder) => {
                decoder.skip_values(self.skip_values);
                if !self.eof {
                    decoder.stop_within((self.window as u64 / 2).max(1));
                }
                self.decoder = Some(decoder);
            }
            // Not reached but after damage: the checkpoint was taken from a reader over the
            // same regions.
            Err(_) => self.finish(),
        }
    }

    /// The decoder stopped: refill and resume, or end.
    fn on_stop(&mut self) {
        use crate::decode::Stop;
        let (Some(decoder), Some(reader)) = (self.decoder.as_ref(), self.reader.as_ref()) else {
            self.finish();
            return;
        };
        let stop = decoder.stopped();
        let offset = decoder.record_start();
        let cp = decoder.checkpoint(reader);
        // The window back, before its length is looked at.
        self.drop_decoder();
        match stop {
            None => self.finish(),
            // The regions given out from so far: the stop's and those before it.
            Some(Stop::RandomAccess) => match self.read_after_all(cp.region()) {
                Ok(true) => {}
                Ok(false) => {
                    let trace = self.head.name.clone();
                    self.fail(StreamError::RandomAccess { trace, offset });
                }
                Err(e) => self.fail(e),
            },
            Some(Stop::Boundary) => {
                self.cp = cp;
                self.since = 0;
                let at = self.cp.offset();
                let result = if at >= self.last_end() {
                    // The end of the last region: the rest of the stream only counts.
                    self.slide(at);
                    self.drain()
                } else {
                    self.slide(at);
                    let target = self.window;
                    self.fill(target)
                };
                match result {
                    Ok(()) => self.build(),
                    Err(e) => self.fail(e),
                }
            }
            Some(Stop::MidRecord) => {
                // Resume from the checkpoint with a larger window, dropping what was given out.
                let offset = self.base + self.buf.len() as u64;
                let grown = (self.buf.len().max(self.window)).saturating_mul(2);
                if grown as u64 > crate::limits::MAX_STREAM_WINDOW {
                    let trace = self.head.name.clone();
                    let offset = offset.min(self.cp.offset());
                    self.fail(StreamError::RecordTooLong {
                        trace,
                        offset,
                        limit: crate::limits::MAX_STREAM_WINDOW,
                    });
                    return;
                }
                self.skip = self.since;
                self.since = 0;
                match self.fill(grown) {
                    Ok(()) => self.build(),
                    Err(e) => self.fail(e),
                }
            }
        }
    }

    /// The decoder needs random access: reads the trace whole after all and decodes it as a
    /// file from its start, the events given out (from the regions up to `upto`) dropped.
    /// `Ok(false)` when it cannot be: records of a table were given out as records, or the
    /// start of the trace is gone (a pipe whose dropped bytes could not be kept).
    fn read_after_all(&mut self, upto: usize) -> Result<bool, StreamError> {
        // Nothing dropped yet: read the rest as a file is read (spooled beyond a few MiB).
        if self.base == 0 && self.whole.is_none() && self.read_whole(Some(upto))? {
            return Ok(true);
        }
        // A pipe: the bytes dropped from the window were kept.
        if self.whole.is_none() && self.kept.is_some() && self.read_kept(upto)? {
            return Ok(true);
        }
        // The window has moved on: a compressed file is read again from its start.
        if self.whole.is_none() && !self.src.is_stdin() && self.reopen(upto)? {
            return Ok(true);
        }
        Ok(false)
    }

    /// The end of the last region (`u64::MAX` while it is the end of a stream not yet read).
    fn last_end(&self) -> u64 {
        self.regions.last().map_or(0, |r| r.end)
    }

    /// Drops the window's bytes before `at`, skipping the stream up to it if the window ends
    /// first.
    fn slide(&mut self, at: u64) {
        self.drop_decoder();
        let end = self.base + self.buf.len() as u64;
        let dropped = (at.min(end) - self.base) as usize;
        self.keep(dropped);
        if at >= end {
            self.buf.clear();
            let mut gap = at - end;
            let mut chunk = vec![0u8; (gap.min(1 << 20)) as usize];
            while gap > 0 && !self.eof {
                let want = gap.min(chunk.len() as u64) as usize;
                match self.src.read_full(&mut chunk[..want]) {
                    Ok(n) => {
                        self.keep_bytes(&chunk[..n]);
                        gap -= n as u64;
                        self.base += n as u64;
                        if n < want {
                            // Ends inside a region: `fill` finds the end and reports it.
                            break;
                        }
                    }
                    Err(e) => {
                        self.base = end + (at - end - gap);
                        if let Err(e) = self.salvage_or(e) {
                            self.fail(e);
                        }
                        return;
                    }
                }
            }
            self.base = end + (at - end - gap);
        } else {
            self.buf.drain(..(at - self.base) as usize);
            self.base = at;
        }
        // A window grown for one long record goes back to its size.
        if self.buf.capacity() > 2 * self.window.max(self.buf.len()) {
            self.buf.shrink_to(self.window.max(self.buf.len()));
        }
    }
}

impl EventStream for TraceStream<'_> {
    fn next_event(&mut self) -> Option<Event<'_>> {
        loop {
            if self.done {
                return None;
            }
            let (Some(decoder), Some(reader)) = (self.decoder.as_mut(), self.reader.as_ref())
            else {
                self.finish();
                return None;
            };
            match decoder.advance(reader) {
                Some(_) if self.skip > 0 => {
                    // Given out before a resume from `cp`.
                    self.skip -= 1;
                    self.since += 1;
                }
                Some(ready) => {
                    self.since += 1;
                    self.given += 1;
                    let (Some(decoder), Some(reader)) = (&self.decoder, &self.reader) else {
                        return None;
                    };
                    return Some(decoder.event(reader, ready));
                }
                None => self.on_stop(),
            }
        }
    }

    fn dropped_problems(&self) -> u64 {
        self.decoder.as_ref().map_or(0, |d| d.dropped_problems())
    }

    fn as_records(&self) -> Option<&crate::decode::Records<'_>> {
        None
    }
}
