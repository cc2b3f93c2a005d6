//! The Trace Event Format of Chrome and Perfetto (JSON object form: `traceEvents`,
//! `displayTimeUnit`, `otherData`): live bytes and live blocks as counter events (`"ph":"C"`),
//! in total and per allocating thread, and the peak as a global instant event (`"ph":"i"`).

use std::io::Write;

use serde_json::{json, Value};

use super::{num, Curve, HeapView, Sample, ViewerError};

/// Writes `view` as trace events, `name` (the trace) naming the process.
///
/// Counters per thread (`live bytes, thread T`: the blocks thread T allocated that are still
/// alive, whoever frees them) are written where the trace has two threads or more.
///
/// Timestamps (`ts`, microseconds in the format) come from the trace's declared times,
/// converted from its unit; where the unit does not convert (`tick`) or the trace declares no
/// time, `ts` is the tick or the data record (`otherData.timestamps` says which). Each curve
/// has at most [`super::ViewOptions::points`] points: of every stretch of events its highest
/// point and its last, so the peak counter is the peak.
pub fn write_chrome(view: &HeapView, name: &str, out: &mut dyn Write) -> Result<(), ViewerError> {
    // Design: the events are written one at a time, not gathered into one JSON value: a long
    // trace with many threads has hundreds of thousands of counter points.
    let ts = |s: &Sample| -> Value {
        match view.micros(s.time) {
            Some(us) => json!(us),
            None => json!(s.time),
        }
    };
    let mut first = true;
    let mut event = |v: Value, out: &mut dyn Write| -> Result<(), ViewerError> {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        serde_json::to_writer(&mut *out, &v).map_err(std::io::Error::from)?;
        Ok(())
    };
    out.write_all(b"{\"traceEvents\":[")?;
    event(
        json!({
            "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
            "args": { "name": format!("{name}: {}", view.space) },
        }),
        out,
    )?;
    let mut counters = |curve: &Curve, label: &str, tid: u64, out: &mut dyn Write| {
        let (bytes, blocks) = (format!("live bytes{label}"), format!("live blocks{label}"));
        for s in &curve.points {
            if view.sized {
                event(
                    json!({
                        "name": bytes, "ph": "C", "ts": ts(s),
                        "pid": 1, "tid": tid, "args": { "bytes": num(s.bytes) },
                    }),
                    out,
                )?;
            }
            event(
                json!({
                    "name": blocks, "ph": "C", "ts": ts(s),
                    "pid": 1, "tid": tid, "args": { "blocks": s.blocks },
                }),
                out,
            )?;
        }
        Ok::<(), ViewerError>(())
    };
    counters(&view.curve, "", 0, out)?;
    // Per thread where there are two or more (one thread's counters would be the totals).
    let threads = if view.threads.len() > 1 {
        &view.threads[..]
    } else {
        &[]
    };
    for (id, curve) in threads {
        counters(curve, &format!(", thread {id}"), *id, out)?;
    }
    if let Some(p) = &view.peak {
        event(
            json!({
                "name": "peak", "ph": "i", "s": "g", "ts": ts(p), "pid": 1, "tid": 0,
                "args": { "bytes": num(p.bytes), "blocks": p.blocks, "record": p.record },
            }),
            out,
        )?;
    }
    let timestamps = match (view.time_unit, view.micros(0)) {
        (Some(u), Some(_)) => format!("declared times ({}) in microseconds", u.keyword()),
        (Some(_), None) => "declared ticks, one per microsecond".to_string(),
        (None, _) => "data records, one per microsecond".to_string(),
    };
    let display = if view.time_unit == Some(crate::analysis::TimeUnit::Ns) {
        "ns"
    } else {
        "ms"
    };
    let other = json!({
        "trace": name,
        "namespace": view.space,
        "timestamps": timestamps,
        "thinned": view.curve.thinned || view.threads.iter().any(|(_, c)| c.thinned),
        "exporter": concat!("mtf ", env!("CARGO_PKG_VERSION")),
    });
    write!(
        out,
        "\n],\n\"displayTimeUnit\":\"{display}\",\n\"otherData\":"
    )?;
    serde_json::to_writer(&mut *out, &other).map_err(std::io::Error::from)?;
    out.write_all(b"}\n")?;
    Ok(())
}
