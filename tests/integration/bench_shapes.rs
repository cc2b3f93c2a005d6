//! The benchmark shapes (`gen_hatf --shape`, docs/performance.md): every shape's trace checks
//! valid with `mtf check`, and `mtf stats`' heap figures equal those of the heap analysis
//! written by hand for the shapes (benches/heap_handwritten.rs: a decode and a table of live
//! blocks written from docs/format.md, without the library), the yardstick `benches/compare.sh`
//! times `stats` against.

use super::util::{mtf, tempdir};
use serde_json::Value;

#[path = "../../examples/gen_hatf.rs"]
pub(super) mod generator;
#[path = "../../benches/heap_handwritten.rs"]
mod heap;

/// A JSON figure as text (docs/stats.md: a byte figure beyond 64 bits is a decimal string).
fn figure(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[test]
fn every_shape_checks_valid_and_stats_equals_the_hand_written_analysis() {
    for (name, shape) in generator::Shape::ALL {
        let mut bytes = Vec::new();
        generator::generate(&mut bytes, 40_000, 3, shape).expect("in memory");
        let dir = tempdir();
        let (dtd_name, dtd) = shape.dtd();
        std::fs::write(dir.path().join(dtd_name), dtd).expect("written");
        let path = dir.path().join("trace.mtf");
        std::fs::write(&path, &bytes).expect("written");
        let p = path.to_str().expect("a UTF-8 path");

        let out = mtf(&["check", "-q", p]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {said}");
        assert!(said.contains(": valid"), "{name}: {said}");

        let hand = heap::report(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut lines = hand.lines().map(|l| l.split_once(' ').expect("name value"));
        let (_, namespace) = lines.next().expect("the namespace first");
        let out = mtf(&["stats", "-f", "json", p]);
        assert!(out.status.success(), "{name}");
        let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let ns = json["namespaces"]
            .as_array()
            .and_then(|a| a.iter().find(|n| n["name"] == namespace))
            .unwrap_or_else(|| panic!("{name}: no namespace {namespace} in stats"));
        let mut compared = 0;
        for (key, value) in lines {
            let theirs = match key {
                "peak_bytes" => &ns["peak"]["bytes"],
                "peak_blocks" => &ns["peak"]["blocks"],
                "leaked_bytes" => &ns["leaked"]["bytes"],
                "leaked_blocks" => &ns["leaked"]["blocks"],
                k => &ns[k],
            };
            assert_eq!(figure(theirs), value, "{name}: {key}");
            compared += 1;
        }
        assert_eq!(compared, 9, "{name}");
        // The figures are not trivially equal: every shape allocates, frees and keeps blocks
        // alive, and the new shapes free blocks allocated before tracing began.
        for key in ["allocations", "frees", "leaked_blocks", "peak_bytes"] {
            assert!(
                !hand.contains(&format!("\n{key} 0\n")),
                "{name}: {key} is 0"
            );
        }
        if shape != generator::Shape::Default {
            assert!(
                !hand.contains("unknown_frees 0\n"),
                "{name}: no unknown frees"
            );
        }
    }
}
