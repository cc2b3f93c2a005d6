//! The sampled curve of live bytes and blocks, in bounded memory (for plots).

use super::Position;

/// A sampled curve of live bytes and blocks, in bounded memory: a fixed number of buckets over
/// record indices, each keeping the first, minimum, maximum and last value, so that the peak is
/// never lost. When the trace outgrows the buckets, pairs merge and each bucket spans twice as
/// many records.
#[derive(Debug, Clone)]
pub struct Curve {
    /// Records per bucket.
    pub span: u64,
    /// The buckets, in record order (the first starts at `origin`).
    pub buckets: Vec<CurveBucket>,
    /// The record index where bucket 0 starts.
    pub origin: u64,
    /// The first and the last heap event of the slice that changed the live state (`None`:
    /// none did): the records a picture's axis needs, whatever the records around them.
    pub events: Option<(Position, Position)>,
    limit: usize,
    /// The records of the last bucket, `[lo, hi)`, while it is the bucket of the latest
    /// point (`hi == 0`: not known): the usual point lands there without a division.
    last: (u64, u64),
}

/// One bucket of a [`Curve`]: the live bytes and blocks over a range of records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CurveBucket {
    /// The first record of the range.
    pub start: Position,
    /// Live bytes: lowest and highest within the range, and at its end.
    pub bytes_min: u128,
    /// Highest live bytes within the range.
    pub bytes_max: u128,
    /// Live bytes after the last event of the range.
    pub bytes_last: u128,
    /// Highest live block count within the range.
    pub blocks_max: u64,
    /// Live blocks after the last event of the range.
    pub blocks_last: u64,
}

impl Curve {
    pub(super) fn new(limit: usize) -> Curve {
        Curve {
            span: 1,
            buckets: Vec::new(),
            origin: 0,
            events: None,
            limit: limit.max(2),
            last: (0, 0),
        }
    }

    pub(super) fn add(&mut self, at: Position, bytes: u128, blocks: u64) {
        if at.record >= self.last.0 && at.record < self.last.1 {
            if let Some(b) = self.buckets.last_mut() {
                b.bytes_min = b.bytes_min.min(bytes);
                b.bytes_max = b.bytes_max.max(bytes);
                b.bytes_last = bytes;
                b.blocks_max = b.blocks_max.max(blocks);
                b.blocks_last = blocks;
                return;
            }
        }
        self.last = (0, 0);
        if self.buckets.is_empty() {
            self.origin = at.record;
        }
        let mut idx = (at.record.saturating_sub(self.origin) / self.span) as usize;
        while idx >= self.limit {
            self.halve();
            idx = (at.record.saturating_sub(self.origin) / self.span) as usize;
        }
        let n = self.buckets.len();
        match self.buckets.last_mut() {
            Some(b) if n == idx + 1 => {
                b.bytes_min = b.bytes_min.min(bytes);
                b.bytes_max = b.bytes_max.max(bytes);
                b.bytes_last = bytes;
                b.blocks_max = b.blocks_max.max(blocks);
                b.blocks_last = blocks;
            }
            _ => self.buckets.push(CurveBucket {
                start: at,
                bytes_min: bytes,
                bytes_max: bytes,
                bytes_last: bytes,
                blocks_max: blocks,
                blocks_last: blocks,
            }),
        }
        // The last bucket is the point's: it holds the records of its slot (`idx`).
        if self.buckets.len() == idx + 1 {
            let lo = self.origin + idx as u64 * self.span;
            self.last = (lo, lo.saturating_add(self.span));
        }
    }

    /// Merge pairs of buckets: each now spans twice as many records.
    fn halve(&mut self) {
        self.last = (0, 0);
        self.span *= 2;
        let origin = self.origin;
        let span = self.span;
        let mut merged: Vec<CurveBucket> = Vec::with_capacity(self.limit);
        for b in self.buckets.drain(..) {
            let slot = (b.start.record - origin) / span;
            match merged.last_mut() {
                Some(m) if (m.start.record - origin) / span == slot => {
                    m.bytes_min = m.bytes_min.min(b.bytes_min);
                    m.bytes_max = m.bytes_max.max(b.bytes_max);
                    m.bytes_last = b.bytes_last;
                    m.blocks_max = m.blocks_max.max(b.blocks_max);
                    m.blocks_last = b.blocks_last;
                }
                _ => merged.push(b),
            }
        }
        self.buckets = merged;
    }
}

/// Points kept by the live-bytes curve of each namespace (see [`Curve`]).
pub const CURVE_POINTS: usize = 2048;
