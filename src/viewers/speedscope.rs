//! speedscope's file format (https://www.speedscope.app/file-format-schema.json): the frames
//! shared, and one sampled profile per cost, each sample a program point's stack (root first)
//! weighted by its figure.

use std::io::Write;

use serde_json::{json, Value};

use crate::stacks::Cost;

use super::{num, HeapView, Stacks, ViewerError};

/// The schema a speedscope file names.
pub const SPEEDSCOPE_SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// Writes `view` as a speedscope file named `name` (the trace, shown as the file's name): four
/// sampled profiles — bytes allocated, allocations, bytes live at the peak, bytes leaked (live
/// at the end, leak suppressions applied as `mtf flamegraph --cost leaked` does). A namespace
/// without sizes has blocks where bytes would be (unit `none`). Program points whose figure is 0
/// are left out of that profile.
pub fn write_speedscope(
    view: &HeapView,
    name: &str,
    out: &mut dyn Write,
) -> Result<(), ViewerError> {
    let stacks = Stacks::of(&view.profile, false);
    let frames: Vec<Value> = stacks
        .frames
        .iter()
        .map(|f| {
            let mut o = json!({ "name": f.name });
            if let Some(file) = &f.file {
                o["file"] = json!(file);
            }
            if let Some(line) = f.line {
                o["line"] = json!(line);
            }
            o
        })
        .collect();
    let leaves = &view.profile.leaves;
    let blocks = |f: &dyn Fn(usize) -> u128| -> Vec<u128> { (0..leaves.len()).map(f).collect() };
    let (unit, what) = if view.sized {
        ("bytes", "bytes")
    } else {
        ("none", "blocks")
    };
    let costs: [(String, &str, Vec<u128>); 4] = [
        (
            format!("{what} allocated"),
            unit,
            if view.sized {
                blocks(&|i| Cost::Bytes.of(&leaves[i]))
            } else {
                blocks(&|i| leaves[i].costs.allocations as u128)
            },
        ),
        (
            "allocations".into(),
            "none",
            blocks(&|i| leaves[i].costs.allocations as u128),
        ),
        (
            format!("{what} live at the peak"),
            unit,
            if view.sized {
                blocks(&|i| leaves[i].costs.peak)
            } else {
                blocks(&|i| leaves[i].costs.peak_blocks as u128)
            },
        ),
        (
            format!("{what} leaked"),
            unit,
            if view.sized {
                blocks(&|i| Cost::Leaked.of(&leaves[i]))
            } else {
                blocks(&|i| {
                    if leaves[i].suppressed {
                        0
                    } else {
                        leaves[i].costs.leaked_blocks as u128
                    }
                })
            },
        ),
    ];
    let profiles: Vec<Value> = costs
        .iter()
        .map(|(title, unit, figures)| {
            let mut samples = Vec::new();
            let mut weights = Vec::new();
            let mut total: u128 = 0;
            for (i, &w) in figures.iter().enumerate() {
                if w == 0 {
                    continue;
                }
                samples.push(json!(stacks.stacks[i]));
                weights.push(json!(num(w)));
                total = total.saturating_add(w);
            }
            json!({
                "type": "sampled",
                "name": format!("{name}: {title} ({})", view.space),
                "unit": unit,
                "startValue": 0,
                "endValue": num(total),
                "samples": samples,
                "weights": weights,
            })
        })
        .collect();
    let doc = json!({
        "$schema": SPEEDSCOPE_SCHEMA,
        "name": name,
        "exporter": concat!("mtf ", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles,
    });
    serde_json::to_writer(&mut *out, &doc).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}
