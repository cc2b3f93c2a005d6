//! DHAT's JSON (`dhatFileVersion` 2, mode `heap`), as valgrind's `dh_view.html` loads it: the
//! program points with their totals, maxima, figures at the global peak (t-gmax) and at the end
//! (t-end), and the frame table, `[root]` first.

use std::collections::HashMap;
use std::io::Write;

use serde_json::{json, Value};

use super::{num, HeapView, Stacks, ViewerError};

/// The version of DHAT's file format written (and the one dh_view.html expects).
pub const DHAT_FILE_VERSION: u64 = 2;

/// Writes `view` as a DHAT file, `command` shown as the command DHAT ran (the trace's name).
///
/// Times (`te`, `tg`, lifetimes `tl`) are in the trace's declared unit (`tu`: `ns`, `us`, `ms`,
/// `s`, `ticks`), counted from its first data record, or in data records where it declares no
/// time (`tu` `records`): never instructions. `tuth`, the lifetime below which dh_view calls a
/// block short-lived, is 500 of that unit (DHAT's own threshold is 500 instructions). Accesses
/// are not known (`bkacc` false). The figures are `mtf stats`': t-gmax is the first moment
/// live bytes were highest (DHAT keeps the latest of equal highs), a realloc ends one block and
/// starts another (DHAT continues a block resized in place), `mb` is the point's own highest
/// live bytes. Program points whose frames read the same are written as one,
/// their figures added, its maximum the largest of theirs (dh_view takes every point's frames to
/// be different).
pub fn write_dhat(view: &HeapView, command: &str, out: &mut dyn Write) -> Result<(), ViewerError> {
    let stacks = Stacks::of(&view.profile, true);
    let mut ftbl: Vec<Value> = Vec::with_capacity(stacks.frames.len() + 1);
    ftbl.push(json!("[root]"));
    ftbl.extend(stacks.frames.iter().map(|f| json!(f.text())));
    // The program points, merged by their frames, in the order first met.
    struct Pp {
        fs: Vec<u32>,
        tb: u128,
        tbk: u64,
        tl: u128,
        mb: u128,
        mbk: u64,
        gb: u128,
        gbk: u64,
        eb: u128,
        ebk: u64,
    }
    let mut pps: Vec<Pp> = Vec::new();
    let mut by_frames: HashMap<Vec<u32>, usize> = HashMap::new();
    for (i, leaf) in view.profile.leaves.iter().enumerate() {
        let c = &leaf.costs;
        let f = view.points.get(i).copied().unwrap_or_default();
        // DHAT lists a point's frames innermost first; frame 0 is `[root]`.
        let fs: Vec<u32> = stacks.stacks[i].iter().rev().map(|&x| x + 1).collect();
        let (bytes, peak, end) = if view.sized {
            (c.bytes, c.peak, c.leaked)
        } else {
            (
                c.allocations as u128,
                c.peak_blocks as u128,
                c.leaked_blocks as u128,
            )
        };
        let k = *by_frames.entry(fs.clone()).or_insert_with(|| {
            pps.push(Pp {
                fs,
                tb: 0,
                tbk: 0,
                tl: 0,
                mb: 0,
                mbk: 0,
                gb: 0,
                gbk: 0,
                eb: 0,
                ebk: 0,
            });
            pps.len() - 1
        });
        let p = &mut pps[k];
        p.tb += bytes;
        p.tbk += c.allocations;
        p.tl += f.lifetimes;
        if f.max_bytes > p.mb || (f.max_bytes == p.mb && f.max_blocks > p.mbk) {
            p.mb = f.max_bytes;
            p.mbk = f.max_blocks;
        }
        p.gb += peak;
        p.gbk += c.peak_blocks;
        p.eb += end;
        p.ebk += c.leaked_blocks;
    }
    let pps: Vec<Value> = pps
        .into_iter()
        .map(|p| {
            json!({
                "tb": num(p.tb), "tbk": p.tbk, "tl": num(p.tl),
                "mb": num(p.mb), "mbk": p.mbk,
                "gb": num(p.gb), "gbk": p.gbk,
                "eb": num(p.eb), "ebk": p.ebk,
                "fs": p.fs,
            })
        })
        .collect();
    let tu = view.time_word();
    let mtu = match tu {
        "ns" => "ms",
        "us" => "s",
        "ms" => "ks",
        "s" => "Ms",
        "ticks" => "Mticks",
        _ => "Mrecords",
    };
    let te = view.end.time.saturating_sub(view.start);
    let tg = view.peak.map_or(0, |p| p.time.saturating_sub(view.start));
    let doc = json!({
        "dhatFileVersion": DHAT_FILE_VERSION,
        "mode": "heap",
        "verb": "Allocated",
        "bklt": true,
        "bkacc": false,
        "tu": tu,
        "Mtu": mtu,
        "tuth": 500,
        "cmd": format!("{command} ({}, exported by mtf)", view.space),
        "pid": 0,
        "te": te,
        "tg": tg,
        "pps": pps,
        "ftbl": ftbl,
    });
    serde_json::to_writer(&mut *out, &doc).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}
