//! [`TraceStream`]: the events of a trace read as a stream (a pipe, standard input, a
//! compressed trace) from a bounded window of its bytes, in one pass, as they arrive; from
//! [`crate::Opened::stream`] for a trace opened with [`crate::OpenOptions::stream`].
//!
//! ```
//! use metatf::decode::{Event, EventStream};
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let opened = metatf::OpenOptions::new().stream(true).open("-")?;
//! if let Some(mut events) = opened.stream() {
//!     while let Some(event) = events.next_event() {
//!         if let Event::Record(r) = event {
//!             println!("{} at byte {}", r.name(), r.offset());
//!         }
//!     }
//!     if let Some(e) = events.fault() {
//!         eprintln!("{e}");
//!     }
//! }
//! # Ok(()) }
//! ```

// Unsafe code (docs/architecture.md, *Unsafe code*): the decoder and its reader borrow the
// window the driver owns (the design note on unsafe below).
#![allow(unsafe_code)]

// Design: the header and the whole section table lie at the front of a trace (docs/format.md
// §2), so they are read first and the regions are known (a trace without sections: its one
// region runs to the end, known when the stream ends). The decoder then reads a window
// `[base, base + len)` of the file: its `Input` holds the window with its `base`, while regions,
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
// events given out dropped); otherwise the stream ends with [`StreamError::RandomAccess`].
// A compressed stream that fails (cut short) with salvage ends there: its bytes are decoded as
// a file of that length, and the fault is `TraceStream::input_fault`.
//
// Design (unsafe): the reader and the decoder borrow the window, which the driver owns and
// refills; they are rebuilt after each refill. The borrow is made with a lifetime the compiler
// cannot check: the window (a `Vec`'s heap buffer) is neither written, moved nor reallocated
// while `records` or `reader` exist (every refill drops both first), and both are dropped before
// the window (`Drop`). Events borrow `&mut self`, so none outlives a refill.

use std::sync::Arc;

use miette::Diagnostic;

use crate::container::{ContainerError, Trace};
use crate::decode::{Checkpoint, Event, EventStream, Reader, Records, Region};
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
/// [`TraceStream::fault`] says why: the error the same bytes give as a file when opened.
pub struct TraceStream<'o> {
    // Dropped in this order (see the design note on unsafe): the decoder, its reader, the window.
    records: Option<Records<'o>>,
    reader: *mut Reader<'o>,
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
    /// The whole trace, read after all (a stream that needed random access before any byte
    /// of it was dropped from the window); the decoder then reads it as a file.
    whole: Option<Box<Trace<'static>>>,
    /// With salvage, the fault of a compressed stream that ended early: the stream ended
    /// there, its bytes decoded as a file of that length is.
    input_fault: Option<IoError>,
    /// The sections read as tables, for a trace decoded whole after all.
    tables: Vec<u8>,
    /// Events given out since the start.
    given: u64,
}

impl<'o> TraceStream<'o> {
    /// A stream of `head`'s trace whose first `buf.len()` bytes have been read from `src`.
    pub(crate) fn new(
        head: Head<'o>,
        src: StreamInput,
        buf: Vec<u8>,
        window: usize,
    ) -> TraceStream<'o> {
        let index = head.trace.sections();
        let global = index.global_region();
        let mut regions = vec![Region {
            section: 0,
            start: global.start,
            end: global.end,
        }];
        regions.extend(index.regions().map(|(section, r)| Region {
            section,
            start: r.start,
            end: r.end,
        }));
        let mut s = TraceStream {
            records: None,
            reader: std::ptr::null_mut(),
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
        };
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
        if let Some(r) = self.records.as_mut() {
            r.skip_values(skip);
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

    /// Why the events stopped before the end of the trace, if they did.
    pub fn fault(&self) -> Option<&StreamError> {
        self.fault.as_ref()
    }

    /// For a trace opened with [`crate::OpenOptions::salvage`], the fault of a compressed
    /// stream that ended early or turned corrupt ([`IoError::Decompress`]): the events are
    /// those of the bytes decompressed before it, as for a file of that length (whose damaged
    /// container is then [`TraceStream::fault`]), exactly as `zstd -dc | mtf … -` gives them.
    pub fn input_fault(&self) -> Option<&IoError> {
        self.input_fault.as_ref()
    }

    /// Whether section `section` is read as a table (`Reader::is_table`): known once the
    /// stream needed random access and was decoded whole (a streamed trace has no tables).
    pub fn is_table(&self, section: u8) -> bool {
        self.tables.contains(&section)
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

    /// The regions of the trace; the last one ends at `u64::MAX` until the stream has ended
    /// when the trace has no sections (then it ends at the end of the stream).
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The bytes read from the stream so far (decompressed).
    pub fn bytes_read(&self) -> u64 {
        match &self.whole {
            Some(t) => t.bytes().len() as u64,
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

    fn drop_decoder(&mut self) {
        self.records = None;
        if !self.reader.is_null() {
            // SAFETY: made by `Box::into_raw` in `build`; `records`, the only borrower, is gone.
            drop(unsafe { Box::from_raw(self.reader) });
            self.reader = std::ptr::null_mut();
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
        self.whole = Some(Box::new(trace));
        self.eof = true;
        self.skip = skip;
        self.since = 0;
        let whole = self.whole.as_deref().map(|t| t as *const Trace<'static>);
        if let Some(t) = whole {
            // SAFETY: the trace is boxed and lives until the stream is dropped, after the
            // reader (`Drop`); it is never replaced once set.
            let t: &'o Trace<'static> = unsafe { &*t };
            let reader = Box::into_raw(Box::new(Reader::with_compiled(
                t,
                self.head.schema,
                self.head.compiled.clone(),
            )));
            self.reader = reader;
            // SAFETY: as in `build`.
            let r: &'o Reader<'o> = unsafe { &*reader };
            self.tables = r
                .regions()
                .iter()
                .map(|g| g.section)
                .filter(|&s| r.is_table(s))
                .collect();
            // Records of a section that turns out a table were given out as records: what a
            // file gives cannot be given any more.
            if upto.is_some_and(|upto| {
                r.regions()
                    .iter()
                    .take(upto + 1)
                    .any(|g| r.is_table(g.section))
            }) {
                self.drop_decoder();
                return Ok(false);
            }
            let mut records = r.records();
            records.skip_values(self.skip_values);
            self.records = Some(records);
        }
        Ok(true)
    }

    /// A reader over the window and a decoder resumed from `cp`.
    fn build(&mut self) {
        self.drop_decoder();
        let h = self.head.trace.header();
        let bytes: &'o [u8] =
            // SAFETY: see the design note: `buf` is not touched while the reader exists.
            unsafe { std::slice::from_raw_parts(self.buf.as_ptr(), self.buf.len()) };
        let input = crate::decode::Input {
            bytes,
            base: self.base,
            more: !self.eof,
            margin: (self.window as u64 / 2).max(1),
            streamed: true,
            order: h.byte_order,
            class: h.class,
            regions: self.regions.clone(),
            // A damaged container's record count is not checked (as for a salvaged file).
            nrecords: self.damage.is_none().then_some(h.nrecords),
            nrecords_offset: crate::container::OFF_INTEGERS + 2 * h.int_width as u64,
            live: h.extensions & crate::container::EXT_LIVE != 0,
            trace: None,
        };
        let reader = Box::into_raw(Box::new(Reader::from_input(
            input,
            self.head.schema,
            self.head.compiled.clone(),
        )));
        self.reader = reader;
        // SAFETY: the reader lives until `drop_decoder`, which drops `records` first.
        let r: &'o Reader<'o> = unsafe { &*reader };
        match r.records_from(&self.cp) {
            Ok(mut records) => {
                records.skip_values(self.skip_values);
                self.records = Some(records);
            }
            // Not reached but after damage: the checkpoint was taken from a reader over the
            // same regions.
            Err(_) => self.finish(),
        }
    }

    /// The decoder stopped: refill and resume, or end.
    fn on_stop(&mut self) {
        use crate::decode::Stop;
        let Some(records) = self.records.as_ref() else {
            self.finish();
            return;
        };
        let stop = records.stopped();
        match stop {
            None => self.finish(),
            Some(Stop::RandomAccess) => {
                let offset = records.record_start();
                // The regions given out from so far (the stop's and those before it).
                let upto = records.checkpoint().region();
                if self.base == 0 && self.whole.is_none() {
                    // Nothing dropped yet: read the rest as a file is read (spooled beyond a
                    // few MiB), decode it whole from the start and drop what was given out,
                    // unless records of a table were given out as records already.
                    match self.read_whole(Some(upto)) {
                        Ok(true) => return,
                        Ok(false) => {}
                        Err(e) => {
                            self.fail(e);
                            return;
                        }
                    }
                }
                if self.whole.is_none() && !self.src.is_stdin() {
                    // The window has moved on: a compressed file is read again from its start.
                    match self.reopen(upto) {
                        Ok(true) => return,
                        Ok(false) => {}
                        Err(e) => {
                            self.fail(e);
                            return;
                        }
                    }
                }
                let trace = self.head.name.clone();
                self.fail(StreamError::RandomAccess { trace, offset });
            }
            Some(Stop::Boundary) => {
                self.cp = records.checkpoint();
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

    /// The end of the last region (`u64::MAX` while it is the end of a stream not yet read).
    fn last_end(&self) -> u64 {
        self.regions.last().map_or(0, |r| r.end)
    }

    /// Drops the window's bytes before `at`, skipping the stream up to it if the window ends
    /// first.
    fn slide(&mut self, at: u64) {
        self.drop_decoder();
        let end = self.base + self.buf.len() as u64;
        if at >= end {
            self.buf.clear();
            let mut gap = at - end;
            let mut chunk = vec![0u8; (gap.min(1 << 20)) as usize];
            while gap > 0 && !self.eof {
                let want = gap.min(chunk.len() as u64) as usize;
                match self.src.read_full(&mut chunk[..want]) {
                    Ok(n) => {
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

impl Drop for TraceStream<'_> {
    fn drop(&mut self) {
        self.drop_decoder();
    }
}

impl EventStream for TraceStream<'_> {
    #[inline]
    fn next_event(&mut self) -> Option<Event<'_>> {
        // The common case: an event of the current window, handed on as it is.
        if self.skip == 0 {
            if let Some(records) = self.records.as_mut() {
                let records: *mut Records<'_> = records;
                // SAFETY: as below.
                if let Some(event) = unsafe { (*records).next() } {
                    self.since += 1;
                    self.given += 1;
                    return Some(event);
                }
                self.on_stop();
            }
        }
        self.next_slow()
    }

    fn dropped_problems(&self) -> u64 {
        self.records.as_ref().map_or(0, |r| r.dropped_problems())
    }

    fn as_records(&self) -> Option<&Records<'_>> {
        None
    }
}

impl TraceStream<'_> {
    /// [`EventStream::next_event`] after a stop, or while events are dropped after a resume.
    #[cold]
    fn next_slow(&mut self) -> Option<Event<'_>> {
        loop {
            if self.done {
                return None;
            }
            let Some(records) = self.records.as_mut() else {
                self.finish();
                return None;
            };
            let records: *mut Records<'_> = records;
            // SAFETY: `records` points into `self`, borrowed mutably for the event's lifetime;
            // the raw pointer only works around the borrow checker's conditional-return limit
            // (the event is returned, or nothing borrows `self` any longer).
            match unsafe { (*records).next() } {
                Some(_) if self.skip > 0 => {
                    self.skip -= 1;
                    self.since += 1;
                }
                Some(event) => {
                    self.since += 1;
                    self.given += 1;
                    return Some(event);
                }
                None => self.on_stop(),
            }
        }
    }
}
