//! Hive-style partitions of an export: which part a data record's rows go to, and the part's
//! folder name — by ranges of data records (`part=K`) or by time buckets (`time_bucket=S`).

use crate::decode::{Event, EventPasses, Reader};

use super::{ParquetError, ParquetOptions, TimeSpan};

/// Where a table's rows go: the (staged) folder, and its parts when partitioned.
#[derive(Clone, Copy)]
pub(super) struct Target<'a> {
    /// The export's folder.
    pub dir: &'a std::path::Path,
    /// The partitions, if any.
    pub parts: Option<&'a Parts>,
}

/// How an export cuts its tables into parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Parts {
    /// Part K: data records `K × N` to `(K + 1) × N − 1`.
    Records(u64),
    /// Per bucket that holds data records, in order: the first data record in it and the
    /// bucket's start (a multiple of the span, in the trace's time unit). The first bucket
    /// starts at data record 0.
    Time(Vec<(u64, u64)>),
}

// Design: a record's bucket is that of its *clock*: the largest declared time of the data
// records up to it (docs/format.md §14.4 gives a record without a time the latest time before
// it; the largest is the same wherever times do not go backwards, and the seek index's
// checkpoints take it too). So every bucket is one range of data records, found by one pass
// before the tables are written, and the partitioned writers (records, `events`, `blocks`)
// need nothing else than a data record → part map: a table's rows, in record order, go to
// each part once, in order, and a part's file is never opened twice. A record whose time goes
// back (threads writing out of order) stays in the bucket the clock reached. The records before
// the first declared time are in the first bucket.

impl Parts {
    /// The partitions `opts` asks for; a partition by time reads the trace once (through
    /// `events`) for its clock.
    pub(super) fn plan(
        reader: &Reader<'_>,
        opts: &ParquetOptions,
        events: &mut EventPasses<'_>,
    ) -> Result<Option<Parts>, ParquetError> {
        match (opts.partition_records, opts.partition_time) {
            (Some(_), Some(_)) => Err(ParquetError::Partition {
                message: "partitions are by data records or by time, not both".into(),
            }),
            (Some(0), None) => Err(ParquetError::Partition {
                message: "a part holds at least one data record".into(),
            }),
            (Some(n), None) => Ok(Some(Parts::Records(n))),
            (None, Some(span)) => time_buckets(reader, span, events).map(Some),
            (None, None) => Ok(None),
        }
    }

    /// The part of the rows of data record `record` (the position after the last data record:
    /// the last part): its number, or its bucket's start.
    pub(super) fn key(&self, record: u64) -> u64 {
        match self {
            Parts::Records(n) => record / n,
            Parts::Time(starts) => {
                let i = starts.partition_point(|&(first, _)| first <= record);
                starts
                    .get(i.saturating_sub(1))
                    .map_or(0, |&(_, start)| start)
            }
        }
    }

    /// The Hive folder of a part: `part=K` or `time_bucket=S`.
    pub(super) fn folder(&self, key: u64) -> String {
        match self {
            Parts::Records(_) => format!("part={key}"),
            Parts::Time(_) => format!("time_bucket={key}"),
        }
    }
}

/// Whether `name` is a part's folder as [`Parts::folder`] names it.
pub(super) fn is_part_folder(name: &str) -> bool {
    ["part=", "time_bucket="].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|k| k.parse::<u64>().is_ok())
    })
}

/// The span in the trace's unit.
fn span_in_units(reader: &Reader<'_>, span: TimeSpan) -> Result<u64, ParquetError> {
    use crate::analysis::TimeUnit;
    let Some(unit) = reader.schema().analysis.time_unit else {
        return Err(ParquetError::NoClock {
            reason: "its DTD declares no time".into(),
        });
    };
    let Some(given) = span.unit else {
        return Ok(span.count);
    };
    if unit == TimeUnit::Tick {
        return Err(ParquetError::Partition {
            message: format!(
                "time:{span}: the trace's clock counts ticks, which have no duration: give the span in ticks, time:N"
            ),
        });
    }
    let nanos = span.count.checked_mul(given.nanos());
    match nanos {
        Some(ns) if ns % unit.nanos() == 0 => Ok(ns / unit.nanos()),
        Some(_) => Err(ParquetError::Partition {
            message: format!(
                "time:{span} is not a whole number of the trace's time unit ({})",
                unit.keyword()
            ),
        }),
        None => Err(ParquetError::Partition {
            message: format!("time:{span}: too long a span"),
        }),
    }
}

/// The buckets of `span` that hold data records (one pass over the trace).
fn time_buckets(
    reader: &Reader<'_>,
    span: TimeSpan,
    events: &mut EventPasses<'_>,
) -> Result<Parts, ParquetError> {
    let every = span_in_units(reader, span)?;
    let schema = reader.schema();
    let mut starts: Vec<(u64, u64)> = Vec::new();
    let mut clock: Option<u64> = None;
    let mut least: Option<u64> = None;
    let mut data = 0u64;
    events(&mut |records| {
        while let Some(event) = records.next_event() {
            let Event::Record(view) = event else { continue };
            if !view.is_data() {
                continue;
            }
            if let Some(t) = crate::index::record_time(schema, &view) {
                least = Some(least.map_or(t, |l| l.min(t)));
                let now = clock.map_or(t, |c| c.max(t));
                clock = Some(now);
                let start = now - now % every;
                if starts.last().is_none_or(|&(_, s)| s != start) {
                    starts.push((data, start));
                }
            }
            data += 1;
        }
    });
    match (least, clock) {
        (None, _) | (_, None) => Err(ParquetError::NoClock {
            reason: "no record carries a time".into(),
        }),
        (Some(l), Some(c)) if l == c => Err(ParquetError::NoClock {
            reason: format!("every record has the same time, {c}"),
        }),
        _ => {
            if let Some(first) = starts.first_mut() {
                first.0 = 0;
            }
            Ok(Parts::Time(starts))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_goes_to_the_bucket_its_range_starts_in() {
        let p = Parts::Time(vec![(0, 0), (10, 500), (11, 1500)]);
        assert_eq!(
            [0, 9, 10, 11, 99].map(|r| p.key(r)),
            [0, 0, 500, 1500, 1500]
        );
        assert_eq!(p.folder(1500), "time_bucket=1500");
        let r = Parts::Records(10);
        assert_eq!([0, 9, 10, 25].map(|x| r.key(x)), [0, 0, 1, 2]);
        assert_eq!(r.folder(2), "part=2");
    }

    #[test]
    fn spans_parse_with_or_without_a_unit() {
        use crate::analysis::TimeUnit;
        let s: TimeSpan = "500ms".parse().unwrap_or(TimeSpan {
            count: 0,
            unit: None,
        });
        assert_eq!(
            s,
            TimeSpan {
                count: 500,
                unit: Some(TimeUnit::Ms)
            }
        );
        assert_eq!(s.to_string(), "500ms");
        assert_eq!(
            "1000000".parse::<TimeSpan>(),
            Ok(TimeSpan {
                count: 1_000_000,
                unit: None
            })
        );
        for bad in ["", "0", "-1", "1h", "1tick", "s", "1.5s"] {
            assert!(bad.parse::<TimeSpan>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_part_folder_is_recognised_by_its_name() {
        assert!(is_part_folder("part=3"));
        assert!(is_part_folder("time_bucket=1000"));
        assert!(!is_part_folder("time_bucket=x"));
        assert!(!is_part_folder("bucket=1"));
    }
}
