//! The JSON form of the figures (`mtf stats --format json`; docs/stats.md has the schema).

use serde_json::{json, Map, Value};

use super::{
    Clock, LifetimeSummary, Position, SiteOrder, SiteSummary, SizeClass, SpaceSummary, Stats,
    JSON_SCHEMA,
};

/// An integer as a JSON number where it fits 64 bits, else as a decimal string.
fn int(v: i128) -> Value {
    if let Ok(x) = i64::try_from(v) {
        json!(x)
    } else if let Ok(x) = u64::try_from(v) {
        json!(x)
    } else {
        json!(v.to_string())
    }
}

/// A byte figure (128 bits): a JSON number where it fits 64 bits, else a decimal string.
fn big(v: u128) -> Value {
    if let Ok(x) = u64::try_from(v) {
        json!(x)
    } else {
        json!(v.to_string())
    }
}

/// A position (docs/stats.md): the data record, the time where there is a clock, and the
/// line of an imported trace's input.
fn at(a: Position, files: &[String], clock: bool) -> Value {
    json!({
        "data_record": a.record,
        "time": if clock { a.time } else { None },
        "line": a.source.map(|l| l.line),
        "file": a.source.and_then(|l| files.get(l.file as usize)),
    })
}

fn classes(c: &[SizeClass], bytes: bool) -> Value {
    Value::Array(
        c.iter()
            .map(|c| {
                let mut m = Map::new();
                m.insert("lo".into(), json!(c.lo));
                m.insert("hi".into(), json!(c.hi));
                m.insert("count".into(), json!(c.count));
                if bytes {
                    m.insert("bytes".into(), big(c.bytes));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

fn lifetime(l: &LifetimeSummary) -> Value {
    json!({
        "count": l.count, "min": l.min, "mean": l.mean, "median": l.median, "p99": l.p99,
        "max": l.max, "quantiles_exact": l.exact, "histogram": classes(&l.histogram, false),
    })
}

fn site(s: &SiteSummary) -> Value {
    json!({
        "site": s.site, "name": s.name, "allocations": s.allocations,
        "bytes_allocated": big(s.bytes_allocated), "peak_bytes": big(s.peak_bytes),
        "peak_blocks": s.peak_blocks, "max_live_bytes": big(s.max_live_bytes),
        "leaked_bytes": big(s.leaked_bytes), "leaked_blocks": s.leaked_blocks,
        "temporary": s.temporary,
    })
}

fn space(s: &SpaceSummary, top: usize) -> Value {
    json!({
        "name": s.name,
        "sized": s.sized,
        "time_unit": s.time_unit,
        "allocations": s.allocations,
        "frees": s.frees,
        "moves": s.moves,
        "bytes_allocated": big(s.bytes_allocated),
        "bytes_freed": big(s.bytes_freed),
        "peak": { "bytes": big(s.peak_bytes), "blocks": s.peak_blocks,
                  "at": at(s.peak_at, &s.files, s.clock) },
        "max_blocks": { "blocks": s.max_blocks, "at": at(s.max_blocks_at, &s.files, s.clock) },
        "leaked": { "bytes": big(s.live_bytes), "blocks": s.live_blocks },
        "temporary": s.temporary,
        "unknown_frees": s.unknown_frees,
        "redefined": s.redefined,
        "sizes": classes(&s.sizes, true),
        "lifetime": {
            "data_records": lifetime(&s.lifetime_records),
            "time": s.lifetime_time.as_ref().map(lifetime),
        },
        "sites": {
            "count": s.sites.len(),
            "by_peak": s.top_sites(SiteOrder::Peak, top).map(site).collect::<Vec<_>>(),
            "by_leaked": s.top_sites(SiteOrder::Leaked, top).map(site).collect::<Vec<_>>(),
            "by_allocated": s.top_sites(SiteOrder::Allocated, top).map(site).collect::<Vec<_>>(),
        },
    })
}

impl Stats {
    /// The figures as JSON (docs/stats.md), with the `top` sites of each ordering.
    pub fn to_json(&self, top: usize) -> Value {
        let types: Vec<Value> = self
            .types
            .iter()
            .map(|t| {
                json!({
                    "name": t.name, "section": t.section, "count": t.count,
                    "fields": t.fields.iter().map(|f| json!({
                        "name": f.name, "count": f.count, "min": int(f.min),
                        "max": int(f.max), "sum": int(f.sum), "summable": f.summable,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let clock = self.clock == Clock::Moving;
        json!({
            "schema": JSON_SCHEMA,
            "slice": {
                "start": at(self.start, &self.files, clock),
                "end": at(self.end, &self.files, clock),
                "data_records": self.records,
            },
            "clock": match self.clock {
                Clock::None => "none",
                Clock::Constant(_) => "constant",
                Clock::Moving => "moving",
            },
            "problems": self.problems,
            "records": types,
            "namespaces": self.spaces.iter().map(|s| space(s, top)).collect::<Vec<_>>(),
        })
    }

    /// The live state at the moment (`mtf stats --at -f json`, docs/stats.md), with the `top`
    /// sites by live bytes.
    pub fn at_moment_json(&self, top: usize) -> Value {
        json!({
            "schema": "mtf-stats-at/1",
            "namespaces": self.spaces.iter().map(|s| json!({
                "name": s.name,
                "live": { "bytes": big(s.live_bytes), "blocks": s.live_blocks,
                          "before": json_at(s, s.end) },
                "sites": s.top_sites(SiteOrder::Leaked, top).map(|x| json!({
                    "site": x.site, "name": x.name, "bytes": big(x.leaked_bytes), "blocks": x.leaked_blocks,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The state at each namespace's peak as JSON (`mtf stats --at-peak -f json`,
    /// docs/stats.md), with the `top` sites.
    pub fn at_peak_json(&self, top: usize) -> Value {
        json!({
            "schema": "mtf-stats-at-peak/2",
            "namespaces": self.spaces.iter().map(|s| json!({
                "name": s.name,
                "peak": { "bytes": big(s.peak_bytes), "blocks": s.peak_blocks,
                          "at": json_at(s, s.peak_at) },
                "sites": s.top_sites(SiteOrder::Peak, top).map(|x| json!({
                    "site": x.site, "name": x.name, "bytes": big(x.peak_bytes), "blocks": x.peak_blocks,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// An integer as a JSON number where it fits 64 bits, else as a decimal string (docs/stats.md).
pub fn json_int(v: i128) -> serde_json::Value {
    int(v)
}

/// A byte figure as JSON: a number where it fits 64 bits, else a decimal string.
pub fn json_bytes(v: u128) -> serde_json::Value {
    big(v)
}

/// A position as JSON: `{ "data_record", "time", "line", "file" }` (docs/stats.md).
pub fn json_at(s: &SpaceSummary, a: Position) -> serde_json::Value {
    at(a, &s.files, s.clock)
}
