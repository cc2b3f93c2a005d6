//! Figures for people in the text forms of trees and differences.

use super::Cost;

// Design: the byte units of every text form, plot and report (binary, one decimal) live here,
// at the bottom (`stacks` uses nothing else of the crate, docs/architecture.md), and
// `analysis::stats::human_bytes` is this function; the text forms print the exact figure in
// JSON only, a column of `1.2 MiB` reads better in a tree.

/// `10.0 MiB`, `512 B`: a byte count in binary units, for people (text, plots, reports).
pub fn bytes(n: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = n;
    let mut u = 0;
    while v.abs() >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// A figure of a cost for people: a byte count in units, a count in decimal.
pub fn figure(cost: Cost, v: u128) -> String {
    if cost.is_bytes() {
        bytes(v as f64)
    } else {
        v.to_string()
    }
}

/// A signed difference of a cost for people: `+1.2 KiB`, `-3`, `0`.
pub fn delta(cost: Cost, v: i128) -> String {
    let sign = if v > 0 {
        "+"
    } else if v < 0 {
        "-"
    } else {
        ""
    };
    format!("{sign}{}", figure(cost, v.unsigned_abs()))
}

/// `12.5 %` of a total (empty when the total is 0).
pub fn percent(v: u128, total: u128) -> String {
    if total == 0 {
        String::new()
    } else {
        format!("{:.1} %", v as f64 * 100.0 / total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_like_stats() {
        assert_eq!(figure(Cost::Allocations, 15), "15");
        assert_eq!(figure(Cost::Peak, 73660), "71.9 KiB");
        assert_eq!(figure(Cost::Leaked, 304), "304 B");
        assert_eq!(delta(Cost::Bytes, -2048), "-2.0 KiB");
        assert_eq!(delta(Cost::Temporary, 3), "+3");
        assert_eq!(percent(1, 3), "33.3 %");
        assert_eq!(percent(1, 0), "");
    }
}
