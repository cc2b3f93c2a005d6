//! One way to get a trace's events: [`read`] hands a consumer every event of an [`Opened`]
//! trace in trace order as an [`EventStream`], whatever the trace was opened from and however
//! it is decoded — a mapped or spooled file through [`Reader::records`], a pipe or compressed
//! stream through its bounded window (the crate's `TraceStream`), or chunks decoded on several
//! threads (`-j`, feature `parallel`, [`EventOptions::chunks`]). The semantic check, the
//! statistics, dumps and exports consume the same stream.
//!
//! ```
//! use metatf::decode::Event;
//! use metatf::events::{read, EventOptions};
//! let opened = metatf::open("traces/hatf-le32.mtf")?;
//! let reader = opened.reader();
//! let (records, end) = read(&opened, &reader, &EventOptions::new(), |_| {}, |events| {
//!     let mut n = 0;
//!     while let Some(e) = events.next_event() {
//!         n += matches!(e, Event::Record(_)) as u64;
//!     }
//!     n
//! });
//! assert!(records > 0 && end.fault.is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Design: a consumer is a function of `&mut dyn EventStream` rather than a value it pulls
// from, because the parallel source runs its workers in a scope (`parallel::events`) that
// must end before the call returns; the three sources differ only in what they found once the
// events end (a stream's fault), which [`read`] returns beside the consumer's result. The
// stream's faults are also given to `on_fault` as soon as they are found, so that a command
// can stop there as opening the same bytes as a file would have.

use crate::decode::{EventStream, Reader, Region};
use crate::io::IoError;
use crate::stream::StreamError;
use crate::Opened;

/// How [`read`] decodes the events.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventOptions<'p> {
    skip_values: bool,
    #[cfg(feature = "parallel")]
    chunks: Option<(&'p crate::parallel::ChunkPlan, usize)>,
    #[cfg(not(feature = "parallel"))]
    chunks: std::marker::PhantomData<&'p ()>,
}

impl<'p> EventOptions<'p> {
    /// One thread, values kept.
    pub fn new() -> EventOptions<'p> {
        EventOptions::default()
    }

    /// Validate only ([`crate::decode::Records::skip_values`]).
    pub fn skip_values(mut self, skip: bool) -> EventOptions<'p> {
        self.skip_values = skip;
        self
    }

    /// Decode the chunks of `plan` on `jobs` threads (a trace that is not streamed; a stream
    /// is read once, in order, whatever the plan).
    #[cfg(feature = "parallel")]
    pub fn chunks(mut self, plan: &'p crate::parallel::ChunkPlan, jobs: usize) -> EventOptions<'p> {
        self.chunks = Some((plan, jobs));
        self
    }
}

/// What the events' source found, once the consumer returned.
#[derive(Debug, Default)]
pub struct Ended {
    /// Why a stream's events stopped before the end of the trace: the error the same bytes
    /// give as a file when opened.
    pub fault: Option<StreamError>,
    /// A compressed stream cut short and salvaged ([`crate::OpenOptions::salvage`]): its bytes
    /// were decoded as a file of that length.
    pub input_fault: Option<IoError>,
    /// What a stream knew at its end (`None` for a file or chunks).
    pub stream: Option<StreamEnd>,
}

/// What a stream knew once its events ended.
#[derive(Debug, Default)]
pub struct StreamEnd {
    /// The bytes read (decompressed).
    pub bytes: u64,
    /// Its regions, the last one ending where the stream did.
    pub regions: Vec<Region>,
    /// The sections read as tables: a stream decoded whole after all (its metadata made a
    /// section a table) knows its tables.
    pub tables: Vec<u8>,
}

/// Let `consume` read every event of `opened`'s trace in trace order (`reader` is a reader of
/// `opened`): the same records, problems and damage, with the same record indices and offsets,
/// from every source (see the module). `on_fault` is called with a stream's fault as soon as it
/// is found; the faults are also in the returned [`Ended`].
pub fn read<'r, T>(
    opened: &Opened,
    reader: &'r Reader<'r>,
    options: &EventOptions<'_>,
    mut on_fault: impl FnMut(&StreamError),
    consume: impl FnOnce(&mut dyn EventStream) -> T,
) -> (T, Ended) {
    if let Some(mut stream) = opened.stream() {
        stream.skip_values(options.skip_values);
        stream.on_fault(on_fault);
        let out = consume(&mut stream);
        let ended = Ended {
            fault: stream.take_fault(),
            input_fault: stream.take_input_fault(),
            stream: Some(StreamEnd {
                bytes: stream.bytes_read(),
                regions: stream.regions().to_vec(),
                tables: stream.tables().to_vec(),
            }),
        };
        return (out, ended);
    }
    if opened.is_streamed() {
        // Design: a stream's events are given once. A second read says so rather than give
        // the head's (no) records as if the trace had none.
        let fault = StreamError::ReadAlready;
        on_fault(&fault);
        let ended = Ended {
            fault: Some(fault),
            ..Ended::default()
        };
        return (consume(&mut NoEvents), ended);
    }
    #[cfg(feature = "parallel")]
    if let Some((plan, jobs)) = options.chunks {
        let out = crate::parallel::events(opened, reader, plan, jobs, options.skip_values, |e| {
            consume(e)
        });
        return (out, Ended::default());
    }
    let mut records = reader.records();
    records.skip_values(options.skip_values);
    (consume(&mut records), Ended::default())
}

/// The events of a stream read already: none.
struct NoEvents;

impl EventStream for NoEvents {
    fn next_event(&mut self) -> Option<crate::decode::Event<'_>> {
        None
    }
    fn dropped_problems(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Event;

    /// Each event as a line: kind, offset, record index.
    fn lines(events: &mut dyn EventStream) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(e) = events.next_event() {
            out.push(match e {
                Event::Record(r) => format!("record {} {} {}", r.name(), r.offset(), r.index()),
                Event::Problem(p) => format!("problem {p}"),
                Event::Damage(d) => format!("damage {d}"),
            });
        }
        out
    }

    /// A file, the same bytes gzipped and read as a stream through a small window, and the
    /// file cut into chunks decoded on two threads give the same events.
    #[test]
    fn every_source_gives_the_events_of_the_file() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/android.mtf");
        let opened = crate::open(&path).unwrap();
        let reader = opened.reader();
        let (want, end) = read(&opened, &reader, &EventOptions::new(), |_| {}, lines);
        assert!(end.fault.is_none() && want.len() > 100);

        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("android.mtf.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, &std::fs::read(&path).unwrap()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        let streamed = crate::OpenOptions::new().stream_window(4096).open(&gz);
        if let Ok(streamed) = streamed {
            let r = streamed.reader();
            let (got, end) = read(&streamed, &r, &EventOptions::new(), |_| {}, lines);
            assert!(end.fault.is_none(), "{:?}", end.fault);
            assert!(end
                .stream
                .is_some_and(|s| s.bytes == std::fs::metadata(&path).unwrap().len()));
            assert_eq!(got, want);
            // Given once: a second read has no events, and says why.
            let mut told = 0;
            let (got, end) = read(&streamed, &r, &EventOptions::new(), |_| told += 1, lines);
            assert!(got.is_empty() && end.stream.is_none());
            assert!(matches!(end.fault, Some(StreamError::ReadAlready)));
            assert_eq!(told, 1);
        }

        #[cfg(feature = "parallel")]
        {
            let plan = crate::parallel::plan_with(&reader, 4096, 1 << 20);
            let options = EventOptions::new().chunks(&plan, 2);
            let (got, end) = read(&opened, &reader, &options, |_| {}, lines);
            assert!(end.fault.is_none());
            assert_eq!(got, want);
        }
    }
}
