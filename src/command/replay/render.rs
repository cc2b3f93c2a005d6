//! A replay's figures rendered: the text of `mtf replay` (the trace's summary, the speed and
//! memory table, the latency table), its JSON document, and (feature `plot`) its picture of RSS
//! beside the trace's live bytes. The command line only chooses one and writes it.

use std::io::{self, Write};

use serde_json::{json, Value as Json};

use super::{median, thread_mode_name, timing_name, Prepared, Replayed, Runs};
use crate::replay::{Latency, Report, ThreadMode, Timing, TraceSummary};

/// The kinds of call latencies are kept for, in the order shown.
const KINDS: [&str; 3] = ["alloc", "free", "realloc"];

impl Replayed {
    /// Whether any run failed (each failure is in its allocator's [`Runs::failures`]).
    pub fn failed(&self) -> bool {
        self.runs.iter().any(|r| !r.failures.is_empty())
    }

    /// The JSON document of `mtf replay --format json`: the trace (named `trace`, already
    /// escaped for a terminal), its summary, how it was replayed, and each allocator's medians,
    /// runs and failures.
    pub fn to_json(&self, trace: &str, prepared: &Prepared) -> Json {
        json!({
            "trace": trace,
            "summary": summary_json(&prepared.summary),
            "undecodable_records": prepared.reading.problems(),
            "threads": thread_mode_name(self.options.threads),
            "timing": timing_name(self.options.timing),
            "touch": self.options.touch,
            "max_block_size": self.max_block_size,
            "allocators": self.runs.iter().map(|r| {
                let mut a = json!({
                    "allocator": r.alloc.name(),
                    "median": medians(r),
                    "runs": r.reports,
                    "failures": r.failures,
                });
                if let (Some(p), Some(o)) = (r.alloc.path(), a.as_object_mut()) {
                    o.insert("path".into(), json!(crate::io::escape_path(p).to_string()));
                }
                a
            }).collect::<Vec<_>>(),
        })
    }

    /// The text of `mtf replay`: the summary lines, then the speed and memory table, then the
    /// latency table, each after an empty line.
    pub fn write_text(&self, w: &mut dyn Write, prepared: &Prepared) -> io::Result<()> {
        let problems = prepared.reading.problems();
        self.write_summary(w, &prepared.summary, problems)?;
        writeln!(w)?;
        speed_table(w, &self.runs)?;
        writeln!(w)?;
        latency_table(w, &self.runs)?;
        if self.options.timing == Timing::Recorded {
            writeln!(w)?;
            timing_table(w, &self.runs)?;
        }
        self.write_waste(w)
    }

    /// The tables of waste by size class and site of each allocator's median run, at the
    /// trace's live peak and at the end (none with `top` 0).
    fn write_waste(&self, w: &mut dyn Write) -> io::Result<()> {
        let top = self.options.top;
        if top == 0 {
            return Ok(());
        }
        for r in &self.runs {
            let Some(rep) = r.median_run() else {
                continue;
            };
            let f = &rep.frag;
            if f.at_peak.is_none() && f.at_end.is_none() {
                continue;
            }
            writeln!(w)?;
            let page = f
                .at_end
                .as_ref()
                .or(f.at_peak.as_ref())
                .map_or(0, |s| s.page_size);
            writeln!(
                w,
                "waste by size class and site, {} (median run; RSS above the start minus live \
                 bytes; stranded: the unused bytes of the resident {page}-byte pages holding \
                 live bytes, split equally among the blocks on each page)",
                r.alloc.name()
            )?;
            let names = (
                "RSS above start",
                "outside pages with live bytes (allocator's own)",
            );
            if let Some(s) = &f.at_peak {
                let title = format!("at the trace's live peak (after event {})", s.event);
                crate::frag::text::write_snapshot(w, &title, s, top, names)?;
            }
            if let Some(s) = &f.at_end {
                let title = format!("at the end (after event {})", s.event);
                crate::frag::text::write_snapshot(w, &title, s, top, names)?;
            }
        }
        Ok(())
    }

    /// The lines above the tables: what the trace says, what was left out, how it was replayed.
    fn write_summary(&self, w: &mut dyn Write, s: &TraceSummary, problems: u64) -> io::Result<()> {
        writeln!(
            w,
            "trace: {} events ({} allocs, {} frees, {} reallocs, {} moves) on {} thread{}; \
             peak live {} bytes after event {}",
            s.events,
            s.counts.allocs,
            s.counts.frees,
            s.counts.reallocs,
            s.counts.moves,
            s.threads,
            if s.threads == 1 { "" } else { "s" },
            s.peak_live,
            s.peak_event
        )?;
        if s.counts.unknown_frees > 0 {
            writeln!(
                w,
                "       {} frees or reallocs of blocks not live in the trace (allocated before tracing began): skipped",
                s.counts.unknown_frees
            )?;
        }
        if problems > 0 {
            writeln!(
                w,
                "       {problems} records could not be decoded (mtf check shows them)"
            )?;
        }
        let o = &self.options;
        let threads = match o.threads {
            ThreadMode::Ordered => "in trace order",
            ThreadMode::Free => "free-running",
        };
        if o.timing == Timing::Recorded {
            writeln!(
                w,
                "       {} of the events have a time; recorded duration {} (first to last time); \
                 {} blocks with their present bytes (touched as the trace says)",
                s.timed,
                duration(s.duration_ns),
                s.present_blocks
            )?;
        }
        writeln!(
            w,
            "replay: threads {threads}{}{}; {} run{} per allocator, each in a fresh process; \
             median (± half the range)",
            if o.timing == Timing::Recorded {
                ", at the recorded times"
            } else {
                ""
            },
            if o.touch { ", pages touched" } else { "" },
            o.repeat,
            if o.repeat == 1 { "" } else { "s" }
        )?;
        self.runs.iter().try_for_each(|r| refusals(w, r))
    }

    /// The picture of `mtf replay -o`: the trace's live bytes and the RSS of each allocator's
    /// median run (by wall time).
    #[cfg(feature = "plot")]
    pub fn chart(
        &self,
        format: crate::picture::PictureFormat,
        title: &str,
        prepared: &Prepared,
    ) -> Result<Vec<u8>, crate::picture::PlotError> {
        let runs: Vec<(&str, &Report)> = self
            .runs
            .iter()
            .filter_map(|r| r.median_run().map(|rep| (r.alloc.name(), rep)))
            .collect();
        crate::replay::plot::chart(format, title, &prepared.summary.live, &runs)
    }
}

/// The line of an allocator whose first run refused or failed requests (none otherwise).
fn refusals(w: &mut dyn Write, r: &Runs) -> io::Result<()> {
    let Some(first) = r.reports.first() else {
        return Ok(());
    };
    let c = &first.counts;
    if c.refused == 0 && c.failed == 0 {
        return Ok(());
    }
    let largest = first
        .largest_refused
        .map(|(rec, size)| format!(" (largest {size} bytes, data record {rec})"))
        .unwrap_or_default();
    writeln!(
        w,
        "{}: {} requests refused as larger than --max-block-size or impossible{largest}; \
         {} answered with no memory",
        r.alloc.name(),
        c.refused,
        c.failed
    )
}

/// With recorded timing: the recorded duration beside the wall time, how late operations
/// started (percentiles over the timed operations), and the blocks touched as the trace's
/// present bytes say.
fn timing_table(w: &mut dyn Write, runs: &[Runs]) -> io::Result<()> {
    let nw = name_width(runs);
    writeln!(
        w,
        "{:<nw$} {:>12} {:>10} {:>11} {:>11} {:>11} {:>11} {:>14}",
        "timing",
        "recorded ms",
        "wall ms",
        "late p50 ms",
        "late p99 ms",
        "p99.9 ms",
        "max ms",
        "present blocks"
    )?;
    for r in runs {
        if r.reports.is_empty() {
            continue;
        }
        let m = |f: &dyn Fn(&Report) -> f64| r.median_spread(f).0;
        let late = |g: fn(&Latency) -> u64| {
            m(&|x: &Report| x.lateness.as_ref().map_or(0.0, |l| g(l) as f64 / 1e6))
        };
        writeln!(
            w,
            "{:<nw$} {:>12.1} {:>10.1} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>14.0}",
            r.alloc.name(),
            m(&|x| x.recorded_ns.unwrap_or(0) as f64 / 1e6),
            m(&|x| x.wall_ns as f64 / 1e6),
            late(|l| l.p50_ns),
            late(|l| l.p99_ns),
            late(|l| l.p999_ns),
            late(|l| l.max_ns),
            m(&|x| x.present_blocks as f64),
        )?;
    }
    Ok(())
}

/// What the trace says, as JSON: its events by kind, threads, peak and live bytes.
fn summary_json(s: &TraceSummary) -> Json {
    let c = &s.counts;
    json!({
        "events": s.events,
        "allocs": c.allocs,
        "frees": c.frees,
        "reallocs": c.reallocs,
        "moves": c.moves,
        "unknown_frees": c.unknown_frees,
        "threads": s.threads,
        "peak_live": s.peak_live,
        "peak_event": s.peak_event,
        "live": s.live,
        "every": s.every,
        "timed": s.timed,
        "duration_ns": s.duration_ns,
        "time_unit": s.time_unit,
        "present_blocks": s.present_blocks,
    })
}

/// An allocator's medians (with their spreads) as JSON.
fn medians(runs: &Runs) -> Json {
    let reports = &runs.reports;
    let ms = |f: &dyn Fn(&Report) -> f64| {
        let (m, s) = runs.median_spread(f);
        json!({"median": m, "spread": s})
    };
    let mut lat = serde_json::Map::new();
    for kind in KINDS {
        if reports.iter().any(|r| r.latency_of(kind).is_some()) {
            let q = |g: fn(&Latency) -> u64| {
                ms(&|r: &Report| r.latency_of(kind).map_or(0.0, |l| g(l) as f64))
            };
            lat.insert(
                kind.to_string(),
                json!({
                    "p50_ns": q(|l| l.p50_ns),
                    "p99_ns": q(|l| l.p99_ns),
                    "p999_ns": q(|l| l.p999_ns),
                }),
            );
        }
    }
    let mut m = json!({
        "runs": reports.len(),
        "wall_ms": ms(&|r| r.wall_ns as f64 / 1e6),
        "ops_per_sec": ms(&|r| r.ops_per_sec()),
        "calls_per_sec": ms(&|r| r.calls_per_sec()),
        "peak_rss": ms(&|r| r.peak_rss as f64),
        "peak_rss_above_baseline": ms(&|r| r.peak_rss.saturating_sub(r.rss_baseline) as f64),
        "fragmentation_at_peak": ms(&|r| r.fragmentation_at_peak().unwrap_or(0.0)),
        "minor_faults": ms(&|r| r.minor_faults as f64),
        "major_faults": ms(&|r| r.major_faults as f64),
        "latency": lat,
    });
    if let (true, Some(o)) = (
        reports.iter().any(|r| r.timing == Timing::Recorded),
        m.as_object_mut(),
    ) {
        let late = |g: fn(&Latency) -> u64| {
            ms(&|r: &Report| r.lateness.as_ref().map_or(0.0, |l| g(l) as f64))
        };
        o.insert(
            "recorded_ms".into(),
            ms(&|r| r.recorded_ns.unwrap_or(0) as f64 / 1e6),
        );
        o.insert(
            "lateness".into(),
            json!({
                "p50_ns": late(|l| l.p50_ns),
                "p99_ns": late(|l| l.p99_ns),
                "p999_ns": late(|l| l.p999_ns),
                "max_ns": late(|l| l.max_ns),
            }),
        );
        o.insert("present_blocks".into(), ms(&|r| r.present_blocks as f64));
        o.insert("present_bytes".into(), ms(&|r| r.present_bytes as f64));
    }
    m
}

/// A duration in ms (one decimal), or in µs below a millisecond.
fn duration(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

/// Bytes in MiB, one decimal.
fn mib(b: f64) -> String {
    format!("{:.1}", b / (1024.0 * 1024.0))
}

/// A spread as ± half of it, in percent.
fn pct(s: f64) -> String {
    format!("±{:.0}%", s * 50.0)
}

/// Speed, memory and faults: one line per allocator.
/// The width of the allocator column: its longest name (a library's file name), at least 9.
fn name_width(runs: &[Runs]) -> usize {
    runs.iter()
        .map(|r| r.alloc.name().chars().count())
        .max()
        .unwrap_or(0)
        .max(9)
}

fn speed_table(w: &mut dyn Write, runs: &[Runs]) -> io::Result<()> {
    let nw = name_width(runs);
    writeln!(
        w,
        "{:<nw$} {:>13} {:>16} {:>16} {:>14} {:>13} {:>12} {:>6}",
        "allocator",
        "wall ms",
        "ops/s",
        "calls/s in call",
        "peak RSS MiB",
        "RSS/live@pk",
        "minflt",
        "majflt"
    )?;
    for r in runs {
        if r.reports.is_empty() {
            writeln!(w, "{:<nw$} (no run succeeded)", r.alloc.name())?;
            continue;
        }
        let (wall, ws) = r.median_spread(|r| r.wall_ns as f64 / 1e6);
        let (ops, os) = r.median_spread(|r| r.ops_per_sec());
        let (calls, cs) = r.median_spread(|r| r.calls_per_sec());
        let (rss, _) = r.median_spread(|r| r.peak_rss.saturating_sub(r.rss_baseline) as f64);
        let (frag, _) = r.median_spread(|r| r.fragmentation_at_peak().unwrap_or(0.0));
        let (minflt, _) = r.median_spread(|r| r.minor_faults as f64);
        let (majflt, _) = r.median_spread(|r| r.major_faults as f64);
        writeln!(
            w,
            "{:<nw$} {:>13} {:>16} {:>16} {:>14} {:>13} {:>12} {:>6}",
            r.alloc.name(),
            format!("{wall:.1} {}", pct(ws)),
            format!("{:.0} {}", ops, pct(os)),
            format!("{:.0} {}", calls, pct(cs)),
            mib(rss),
            format!("{frag:.2}"),
            format!("{minflt:.0}"),
            format!("{majflt:.0}"),
        )?;
    }
    Ok(())
}

/// Latency percentiles: one line per allocator and kind of call.
fn latency_table(w: &mut dyn Write, runs: &[Runs]) -> io::Result<()> {
    let nw = name_width(runs);
    writeln!(
        w,
        "{:<nw$} {:<8} {:>10} {:>9} {:>9} {:>9} {:>10}",
        "latency", "call", "calls", "p50 ns", "p99 ns", "p99.9 ns", "max ns"
    )?;
    for r in runs {
        for kind in KINDS {
            let rs: Vec<&Report> = r
                .reports
                .iter()
                .filter(|x| x.latency_of(kind).is_some())
                .collect();
            if rs.is_empty() {
                continue;
            }
            let q = |g: fn(&Latency) -> u64| {
                median(
                    rs.iter()
                        .filter_map(|x| x.latency_of(kind).map(|l| g(l) as f64))
                        .collect(),
                )
            };
            writeln!(
                w,
                "{:<nw$} {:<8} {:>10.0} {:>9.0} {:>9.0} {:>9.0} {:>10.0}",
                r.alloc.name(),
                kind,
                q(|l| l.count),
                q(|l| l.p50_ns),
                q(|l| l.p99_ns),
                q(|l| l.p999_ns),
                q(|l| l.max_ns),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_are_half_the_range_in_percent() {
        assert_eq!(pct(0.1), "±5%");
        assert_eq!(mib(3.0 * 1024.0 * 1024.0), "3.0");
        assert_eq!(duration(100_000_000), "100.0 ms");
        assert_eq!(duration(9_000), "9.0 µs");
    }
}
