//! The Trace Event Format of Chrome and Perfetto (JSON object form: `traceEvents`,
//! `displayTimeUnit`, `otherData`): live bytes and live blocks as counter events (`"ph":"C"`),
//! in total and per allocating thread, and the peak as a global instant event (`"ph":"i"`).

use std::io::Write;

use serde_json::{json, Value};

use super::{num, Curve, HeapView, Sample, ViewerError};

/// Writes `view` as trace events, `name` (the trace) naming the process.
///
/// Timestamps (`ts`, microseconds in the format) come from the trace's declared times,
/// converted from its unit; where the unit does not convert (`tick`) or the trace declares no
/// time, `ts` is the tick or the data record (`otherData.timestamps` says which). Each curve
/// has at most [`super::ViewOptions::points`] points: of every stretch of events its highest
/// point and its last, so the peak counter is the peak.
pub fn write_chrome(view: &HeapView, name: &str, out: &mut dyn Write) -> Result<(), ViewerError> {
    let ts = |s: &Sample| -> Value {
        match view.micros(s.time) {
            Some(us) => json!(us),
            None => json!(s.time),
        }
    };
    let mut events: Vec<Value> = Vec::new();
    events.push(json!({
        "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
        "args": { "name": format!("{name}: {}", view.space) },
    }));
    let counters = |curve: &Curve, label: &str, tid: u64, events: &mut Vec<Value>| {
        for s in &curve.points {
            if view.sized {
                events.push(json!({
                    "name": format!("live bytes{label}"), "ph": "C", "ts": ts(s),
                    "pid": 1, "tid": tid, "args": { "bytes": num(s.bytes) },
                }));
            }
            events.push(json!({
                "name": format!("live blocks{label}"), "ph": "C", "ts": ts(s),
                "pid": 1, "tid": tid, "args": { "blocks": s.blocks },
            }));
        }
    };
    counters(&view.curve, "", 0, &mut events);
    for (id, curve) in &view.threads {
        counters(curve, &format!(", thread {id}"), *id, &mut events);
    }
    if let Some(p) = &view.peak {
        events.push(json!({
            "name": "peak", "ph": "i", "s": "g", "ts": ts(p), "pid": 1, "tid": 0,
            "args": { "bytes": num(p.bytes), "blocks": p.blocks, "record": p.record },
        }));
    }
    let timestamps = match (view.time_unit, view.micros(0)) {
        (Some(u), Some(_)) => format!("declared times ({}) in microseconds", u.keyword()),
        (Some(_), None) => "declared ticks, one per microsecond".to_string(),
        (None, _) => "data records, one per microsecond".to_string(),
    };
    let doc = json!({
        "traceEvents": events,
        "displayTimeUnit": if view.time_unit == Some(crate::analysis::TimeUnit::Ns) { "ns" } else { "ms" },
        "otherData": {
            "trace": name,
            "namespace": view.space,
            "timestamps": timestamps,
            "thinned": view.curve.thinned || view.threads.iter().any(|(_, c)| c.thinned),
            "exporter": concat!("mtf ", env!("CARGO_PKG_VERSION")),
        },
    });
    serde_json::to_writer(&mut *out, &doc).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}
