//! Where a trace is cut into chunks that decode independently.

use std::ops::Range;

use crate::decode::Reader;

/// Trace bytes per chunk a worker decodes into memory: what it holds is some 30 times larger
/// (decoded values, or the text of a dump), and `2 × jobs` chunks may be held at once.
pub const CHUNK_BYTES: u64 = 256 << 10;

/// A part of a trace that decodes without the state of what comes before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Regions (indices into [`Reader::regions`]), decoded from the start of the first.
    pub regions: Range<usize>,
    /// Its size in bytes.
    pub bytes: u64,
    /// The index of its first record, when known before decoding what precedes it (a
    /// checkpoint's); `None` for a chunk cut at a region.
    pub first_index: Option<u64>,
    /// Too large to hold decoded in memory: the thread that consumes the outputs decodes it
    /// itself, streaming, when it comes to it (the workers meanwhile decode what follows).
    pub inline: bool,
}

/// The chunks of a trace, in trace order; together they are every region once.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The chunks.
    pub chunks: Vec<Chunk>,
}

impl Plan {
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
pub fn plan(reader: &Reader<'_>) -> Plan {
    plan_with(reader, CHUNK_BYTES, CHUNK_BYTES)
}

/// [`plan`] with other sizes: regions grouped up to `chunk_bytes` (1: every region on its
/// own), and a region larger than `inline_over` decoded inline.
pub fn plan_with(reader: &Reader<'_>, chunk_bytes: u64, inline_over: u64) -> Plan {
    let mut chunks: Vec<Chunk> = Vec::new();
    for (i, r) in reader.regions().iter().enumerate() {
        let bytes = r.end.saturating_sub(r.start);
        let inline = bytes > inline_over;
        match chunks.last_mut() {
            Some(c) if !inline && !c.inline && c.bytes + bytes <= chunk_bytes => {
                c.regions.end = i + 1;
                c.bytes += bytes;
            }
            _ => chunks.push(Chunk {
                regions: i..i + 1,
                bytes,
                first_index: None,
                inline,
            }),
        }
    }
    Plan { chunks }
}
