//! Where a trace is cut into chunks that decode independently.

use std::ops::Range;

use crate::decode::{Checkpoint, Reader, Records};
use crate::index::{Index, IndexError};

/// Trace bytes per chunk a worker decodes into memory: what it holds is some 30 times larger
/// (decoded values, or the text of a dump), and `2 × jobs` chunks may be held at once.
pub const CHUNK_BYTES: u64 = 256 << 10;

/// Where a chunk's decode starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum From {
    /// Whole regions (indices into [`Reader::regions`]), from the start of the first, with
    /// record indices counted from 0 and no record count checked.
    Regions(Range<usize>),
    /// The start of the trace (a full decode).
    Start,
    /// A checkpoint of a seek index (a full decode resumed there).
    Checkpoint(Box<Checkpoint>),
}

/// A part of a trace that decodes without the state of what comes before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Where its decode starts.
    pub from: From,
    /// Where it ends: before the record of this index (and after the problems of the one
    /// before); `None`: at the end of its regions, or of the trace.
    pub until: Option<u64>,
    /// Its size in bytes (about).
    pub bytes: u64,
    /// The index of its first record, when known before decoding what precedes it (a
    /// checkpoint's); `None` for a chunk cut at a region.
    pub first_index: Option<u64>,
    /// Too large to hold decoded in memory: the thread that consumes the outputs decodes it
    /// itself, streaming, when it comes to it (the workers meanwhile decode what follows).
    pub inline: bool,
}

impl Chunk {
    /// The decode of the chunk: its events are those up to [`Chunk::until`] (see
    /// [`Chunk::ended`]).
    /// Pages of a mapped trace are released behind it from where it starts, not before (others
    /// may read there: [`Records::release_own_pages`]); [`Records::release_pages`] releases
    /// from the start of the trace.
    pub fn records<'r>(&self, reader: &'r Reader<'r>) -> Records<'r> {
        let mut records = match &self.from {
            From::Regions(r) => reader.region_records(r.clone()),
            From::Start => reader.records(),
            From::Checkpoint(cp) => match reader.records_from(cp) {
                Ok(r) => r,
                // [`plan_indexed`] resumed at every checkpoint once already; should the same
                // resume fail now, decode from the start (the caller skips to the chunk).
                Err(_) => reader.records(),
            },
        };
        records.release_own_pages(self.start(reader));
        records
    }

    /// The byte offset where the chunk starts.
    pub fn start(&self, reader: &Reader<'_>) -> u64 {
        match &self.from {
            From::Regions(r) => reader.regions().get(r.start).map_or(0, |r| r.start),
            From::Start => 0,
            From::Checkpoint(cp) => cp.offset(),
        }
    }

    /// Whether `records` (from [`Chunk::records`]) has given out every event of the chunk.
    pub fn ended(&self, records: &Records<'_>) -> bool {
        self.until
            .is_some_and(|u| records.count() >= u && records.at_record_boundary())
    }

    /// Whether `records` is still before the chunk (only after a failed resume, see
    /// [`Chunk::records`]).
    pub fn before(&self, records: &Records<'_>) -> bool {
        self.first_index.is_some_and(|f| {
            records.count() < f || (records.count() == f && !records.at_record_boundary())
        })
    }
}

/// The chunks of a trace, in trace order; together they are every region once.
#[derive(Debug, Clone, Default)]
pub struct ChunkPlan {
    /// The chunks.
    pub chunks: Vec<Chunk>,
    /// Whether the last chunk's decode checks the header's record count itself (a full
    /// decode's end); else whoever joins the chunks does ([`Reader::record_count_problem`]).
    pub counted: bool,
}

impl ChunkPlan {
    /// How many chunks the workers decode (not inline).
    pub fn parallel_chunks(&self) -> usize {
        self.chunks.iter().filter(|c| !c.inline).count()
    }

    /// Whether more than one thread has anything to do.
    pub fn is_parallel(&self) -> bool {
        self.parallel_chunks() > 1
    }
}

/// Cut a trace at its regions: consecutive small regions (the global region, each section)
/// grouped up to [`CHUNK_BYTES`], a region larger than that decoded inline.
pub fn plan(reader: &Reader<'_>) -> ChunkPlan {
    plan_with(reader, CHUNK_BYTES, CHUNK_BYTES)
}

/// [`plan`] with other sizes: regions grouped up to `chunk_bytes` (1: every region on its
/// own), and a region larger than `inline_over` decoded inline.
pub fn plan_with(reader: &Reader<'_>, chunk_bytes: u64, inline_over: u64) -> ChunkPlan {
    let mut chunks: Vec<Chunk> = Vec::new();
    for (i, r) in reader.regions().iter().enumerate() {
        let bytes = r.end.saturating_sub(r.start);
        let inline = bytes > inline_over;
        match chunks.last_mut() {
            Some(c) if !inline && !c.inline && c.bytes + bytes <= chunk_bytes => {
                if let From::Regions(r) = &mut c.from {
                    r.end = i + 1;
                }
                c.bytes += bytes;
            }
            _ => chunks.push(Chunk {
                from: From::Regions(i..i + 1),
                until: None,
                bytes,
                first_index: None,
                inline,
            }),
        }
    }
    ChunkPlan {
        chunks,
        counted: false,
    }
}

/// Cut a trace at the checkpoints of its seek index: one chunk from the start to the first
/// checkpoint, then one from each checkpoint to the next. An error when the index does not fit
/// the trace or a checkpoint does not resume (the caller then cuts at regions).
pub fn plan_indexed<'r>(reader: &'r Reader<'r>, index: &Index) -> Result<ChunkPlan, IndexError> {
    index.fits(reader)?;
    let entries = index.entries();
    let mut chunks = Vec::with_capacity(entries.len() + 1);
    let mut from = From::Start;
    let (mut first, mut offset) = (0u64, 0u64);
    for i in 0..=entries.len() {
        let (until, end) = match entries.get(i) {
            Some(e) => (Some(e.record), e.offset),
            None => (None, reader.bytes().len() as u64),
        };
        if until != Some(first) {
            chunks.push(Chunk {
                from: std::mem::replace(&mut from, From::Start),
                until,
                bytes: end.saturating_sub(offset),
                first_index: Some(first),
                inline: false,
            });
        }
        if let Some(e) = entries.get(i) {
            // Resumed once here, so that a checkpoint that does not fit is found now.
            index.resume_at(reader, i)?;
            from = From::Checkpoint(Box::new(index.checkpoint(i, reader.schema())?));
            first = e.record;
            offset = e.offset;
        }
    }
    Ok(ChunkPlan {
        chunks,
        counted: true,
    })
}
