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
    /// `origin` is fixed (a chunk's curve, on the whole trace's slots: [`Curve::anchor`]).
    anchored: bool,
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
            anchored: false,
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
        if self.buckets.is_empty() && !self.anchored {
            self.origin = at.record;
        }
        let mut idx = (at.record.saturating_sub(self.origin) / self.span) as usize;
        while idx >= self.limit {
            self.halve();
            idx = (at.record.saturating_sub(self.origin) / self.span) as usize;
        }
        // Points come in record order: the last bucket is the point's when it starts inside
        // the point's slot (slots without a point have no bucket).
        let lo = self.origin + idx as u64 * self.span;
        match self.buckets.last_mut() {
            Some(b) if b.start.record >= lo => {
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
        self.last = (lo, lo.saturating_add(self.span));
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

// Design: a curve is a function of its origin and its points alone: its span is the least
// power of two that puts the last point's slot below the limit (a span doubles only when a
// point needs it), and each bucket gathers the points of one slot (halving gathers whole slots).
// So the curves of consecutive chunks of a trace, each anchored at the trace's origin, join
// exactly: both brought to the larger span, a slot the two share gathered into one bucket.
impl Curve {
    /// Fix the origin at `origin` (that of the curve of the chunks before).
    pub(super) fn anchor(&mut self, origin: u64) {
        self.origin = origin;
        self.anchored = true;
    }

    /// Append `later`, the curve of the records after this one's, anchored at this one's
    /// origin; false (nothing changed) when it is not.
    pub(super) fn join(&mut self, mut later: Curve) -> bool {
        if later.limit != self.limit {
            return false;
        }
        let events = match (self.events, later.events) {
            (Some((first, _)), Some((_, last))) => Some((first, last)),
            (a, b) => a.or(b),
        };
        if self.buckets.is_empty() {
            if !later.buckets.is_empty() && !later.anchored {
                return false;
            }
            later.events = events;
            later.anchored = self.anchored;
            *self = later;
            self.last = (0, 0);
            return true;
        }
        self.events = events;
        if later.buckets.is_empty() {
            return true;
        }
        if !later.anchored || later.origin != self.origin {
            return false;
        }
        while self.span < later.span {
            self.halve();
        }
        while later.span < self.span {
            later.halve();
        }
        self.last = (0, 0);
        let (origin, span) = (self.origin, self.span);
        let slot = |b: &CurveBucket| b.start.record.saturating_sub(origin) / span;
        let mut rest = later.buckets.iter();
        if let (Some(m), Some(b)) = (self.buckets.last_mut(), later.buckets.first()) {
            if slot(m) == slot(b) {
                m.bytes_min = m.bytes_min.min(b.bytes_min);
                m.bytes_max = m.bytes_max.max(b.bytes_max);
                m.bytes_last = b.bytes_last;
                m.blocks_max = m.blocks_max.max(b.blocks_max);
                m.blocks_last = b.blocks_last;
                rest.next();
            }
        }
        self.buckets.extend(rest.copied());
        true
    }
}

/// Points kept by the live-bytes curve of each namespace (see [`Curve`]).
pub const CURVE_POINTS: usize = 2048;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(record: u64) -> Position {
        Position {
            record,
            time: None,
            source: None,
        }
    }

    /// A slot is one bucket, whatever slots before had no point (a record without heap
    /// events); and a curve cut anywhere joins back into the one curve, bucket for bucket.
    #[test]
    fn one_bucket_per_slot_and_cut_curves_join() {
        let mut c = Curve::new(8);
        for r in [0, 1, 3, 3, 3] {
            c.add(at(r), r as u128, 1);
        }
        assert_eq!(c.buckets.len(), 3);
        let points: Vec<u64> = (0..300u64).filter(|r| r % 7 != 3 && r % 11 != 5).collect();
        let mut one = Curve::new(16);
        for &r in &points {
            one.add(at(r), (r * 37 % 101) as u128, r % 13);
        }
        for cut in [1, 40, 100, 250, 299] {
            let (mut a, mut b) = (Curve::new(16), Curve::new(16));
            b.anchor(0);
            for &r in &points {
                let c = if r < cut { &mut a } else { &mut b };
                c.add(at(r), (r * 37 % 101) as u128, r % 13);
            }
            assert!(a.join(b));
            assert_eq!(
                (a.span, &a.buckets, a.origin),
                (one.span, &one.buckets, one.origin),
                "cut {cut}"
            );
        }
    }
}
