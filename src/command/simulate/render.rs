//! A simulation's figures rendered: the text of `mtf simulate` (the trace's summary and one
//! line per policy), its JSON document (feature `json`), and its picture of each policy's heap
//! extent beside the live payload (features `plot` and `replay`). The command line only chooses
//! one and writes it.

use std::io::{self, Write};

use super::Simulation;

impl Simulation {
    /// The text of `mtf simulate`: the summary lines, an empty line, then one line per policy.
    pub fn write_text(&self, w: &mut dyn Write) -> io::Result<()> {
        self.write_summary(w)?;
        writeln!(w)?;
        writeln!(
            w,
            "{:<11} {:>16} {:>16} {:>12} {:>12}",
            "policy", "peak heap", "peak live", "utilisation", "live blocks"
        )?;
        for r in &self.reports {
            writeln!(
                w,
                "{:<11} {:>16} {:>16} {:>12.4} {:>12}",
                r.options.policy.name(),
                r.peak_heap,
                r.peak_live,
                r.utilisation(),
                r.final_blocks
            )?;
        }
        self.write_waste(w)
    }

    /// The tables of waste by size class and site of each policy, at the heap's peak and at
    /// the end (none with `top` 0).
    fn write_waste(&self, w: &mut dyn Write) -> io::Result<()> {
        let top = self.options.top;
        if top == 0 {
            return Ok(());
        }
        for r in &self.reports {
            writeln!(w)?;
            writeln!(
                w,
                "waste by size class and site, {} (heap extent minus live payload; overhead: \
                 header, alignment, rounding; stranded: free gaps between live blocks, half to \
                 each neighbour)",
                r.options.policy.name()
            )?;
            let names = ("heap", "free above the highest live block");
            if let Some(s) = &r.frag.at_peak {
                let title = format!("at the heap's peak (after event {})", s.event);
                crate::frag::text::write_snapshot(w, &title, s, top, names)?;
            }
            if let Some(s) = &r.frag.at_end {
                let title = format!("at the end (after event {})", s.event);
                crate::frag::text::write_snapshot(w, &title, s, top, names)?;
            }
        }
        Ok(())
    }

    /// The summary lines above the table: the trace's events and what was left out.
    fn write_summary(&self, w: &mut dyn Write) -> io::Result<()> {
        let Some(r) = self.reports.first() else {
            return Ok(());
        };
        let n = self.reports.len();
        writeln!(
            w,
            "trace: {} events ({} allocs, {} frees, {} reallocs placed); peak live payload {} bytes; \
             alignment {}, header {} bytes; {:.2} s for {} polic{}",
            r.events,
            r.counts.allocs,
            r.counts.frees,
            r.counts.reallocs,
            r.peak_live,
            self.options.align,
            self.options.header,
            self.elapsed.as_secs_f64(),
            n,
            if n == 1 { "y" } else { "ies" }
        )?;
        if r.counts.unknown_frees > 0 || r.counts.unknown_moves > 0 {
            writeln!(
                w,
                "       {} frees and reallocs of blocks not live (allocated before tracing began): skipped",
                r.counts.unknown_frees + r.counts.unknown_moves
            )?;
        }
        if r.refused > 0 {
            let largest = r
                .largest_refused
                .map(|(rec, size)| format!(" (largest {size} bytes, data record {rec})"))
                .unwrap_or_default();
            writeln!(
                w,
                "       {} requests larger than --max-block-size refused{largest}",
                r.refused
            )?;
        }
        let problems = self.problems();
        if problems > 0 {
            writeln!(
                w,
                "       {problems} records could not be decoded (mtf check shows them)"
            )?;
        }
        Ok(())
    }

    /// The JSON document of `mtf simulate --format json`: the trace (named `trace`, already
    /// escaped for a terminal), the options, and each policy's figures and samples.
    #[cfg(feature = "json")]
    pub fn to_json(&self, trace: &str) -> serde_json::Value {
        use serde_json::json;
        json!({
            "trace": trace,
            "undecodable_records": self.problems(),
            "align": self.options.align,
            "header": self.options.header,
            "max_block_size": self.options.max_block_size,
            "policies": self.reports.iter().map(|r| json!({
                "policy": r.options.policy.name(),
                "events": r.events,
                "allocs": r.counts.allocs,
                "frees": r.counts.frees,
                "reallocs": r.counts.reallocs,
                "moves": r.counts.moves,
                "unknown_frees": r.counts.unknown_frees,
                "unknown_moves": r.counts.unknown_moves,
                "refused": r.refused,
                "largest_refused": r.largest_refused.map(|(rec, size)| json!({"data_record": rec, "bytes": size})),
                "peak_live": r.peak_live,
                "peak_heap": r.peak_heap,
                "utilisation": r.utilisation(),
                "final_live": r.final_live,
                "final_blocks": r.final_blocks,
                "samples": r.samples.iter().map(|s| json!([s.event, s.heap, s.live])).collect::<Vec<_>>(),
                "waste": {
                    "at_peak": r.frag.at_peak.as_ref().map(|s| crate::frag::text::to_json(s, self.options.top)),
                    "at_end": r.frag.at_end.as_ref().map(|s| crate::frag::text::to_json(s, self.options.top)),
                },
            })).collect::<Vec<_>>(),
        })
    }

    /// The picture of `mtf simulate -o`: the live payload (of the first policy's samples) and
    /// each policy's heap extent over the trace; below them, the waste by size class at each
    /// policy's peak, a bar per policy.
    #[cfg(all(feature = "plot", feature = "replay"))]
    pub fn chart(
        &self,
        format: crate::picture::PictureFormat,
        title: &str,
    ) -> Result<Vec<u8>, crate::picture::PlotError> {
        use crate::replay::plot::{lines_with_waste, Series, WastePanel};
        let mut series = Vec::new();
        if let Some(first) = self.reports.first() {
            series.push(Series {
                name: "live payload".into(),
                points: first.samples.iter().map(|s| (s.event, s.live)).collect(),
            });
        }
        for r in &self.reports {
            series.push(Series {
                name: format!("heap extent, {}", r.options.policy.name()),
                points: r.samples.iter().map(|s| (s.event, s.heap)).collect(),
            });
        }
        let snaps: Vec<(&str, &crate::frag::Snapshot)> = self
            .reports
            .iter()
            .filter_map(|r| {
                r.frag
                    .at_peak
                    .as_ref()
                    .map(|s| (r.options.policy.name(), s))
            })
            .collect();
        let panel = WastePanel {
            caption:
                "waste at the heap's peak by size class: overhead and free gaps between live blocks",
            own: "free above the highest live block",
        };
        lines_with_waste(format, title, &series, &snaps, &panel)
    }
}

#[cfg(test)]
mod tests {
    use crate::command::simulate::{simulate, SimulateOptions};

    #[test]
    fn the_text_states_the_options_and_one_line_per_policy() {
        let o = crate::open(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/android.mtf"))
            .expect("the sample trace opens");
        let options = SimulateOptions {
            align: 16,
            header: 4,
            ..SimulateOptions::default()
        };
        let sim = simulate(&o, &options).expect("simulated");
        let mut text = Vec::new();
        sim.write_text(&mut text).expect("written");
        let text = String::from_utf8(text).expect("utf-8");
        assert!(text.contains("alignment 16, header 4 bytes"), "{text}");
        let policies = text
            .lines()
            .skip_while(|l| !l.starts_with("policy"))
            .take_while(|l| !l.is_empty())
            .count();
        assert_eq!(policies, 1 + options.policies.len(), "{text}");
        // Then the tables of waste, one per policy.
        let tables = text
            .lines()
            .filter(|l| l.starts_with("waste by size class and site, "))
            .count();
        assert_eq!(tables, options.policies.len(), "{text}");
    }
}
