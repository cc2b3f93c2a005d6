//! The format mappings built into `mtf`: every file of the repository's `formats/` folder.

use super::mapping::Mapping;

/// `(file name, text)` of each shipped mapping, in auto-detection order.
pub const SHIPPED: &[(&str, &str)] = &[
    ("et3.map", include_str!("../../formats/et3.map")),
    ("et_merlin.map", include_str!("../../formats/et_merlin.map")),
    ("jvm_trace.map", include_str!("../../formats/jvm_trace.map")),
    ("tptp.map", include_str!("../../formats/tptp.map")),
    ("android.map", include_str!("../../formats/android.map")),
    ("valgrind.map", include_str!("../../formats/valgrind.map")),
    ("mtrace.map", include_str!("../../formats/mtrace.map")),
    ("malloclab.map", include_str!("../../formats/malloclab.map")),
    ("heaptrack.map", include_str!("../../formats/heaptrack.map")),
    (
        "heaptrack_raw.map",
        include_str!("../../formats/heaptrack_raw.map"),
    ),
];

/// Every shipped mapping, parsed (they are checked by the tests, so parsing cannot fail).
// Design: the shipped mappings are part of the program, not input: a parse error here is a bug
// caught by `every_shipped_mapping_parses_and_its_dtd_is_shipped`, so it panics rather than
// making every caller handle an error that cannot happen in a tested build.
pub fn all() -> Vec<(&'static str, Mapping)> {
    SHIPPED
        .iter()
        .map(|(file, text)| {
            let m = Mapping::parse(file, text).unwrap_or_else(|e| panic!("shipped mapping {e}"));
            (*file, m)
        })
        .collect()
}

/// The text of `mtf import --list`: each shipped format with its description, DTD, mapping
/// file and record names (each once, in the order of the mapping's rules), four lines a format.
pub fn listing() -> String {
    let mut out = String::new();
    for (file, m) in all() {
        let rules: Vec<String> = m
            .parts
            .iter()
            .map(|p| {
                let mut names: Vec<&str> = Vec::new();
                for r in &p.rules {
                    if !names.contains(&r.record.as_str()) {
                        names.push(&r.record);
                    }
                }
                format!("{}: {}", p.name, names.join(" "))
            })
            .collect();
        out.push_str(&format!(
            "{}\n  {}\n  DTD {}, mapping formats/{file}\n  records: {}\n",
            m.name,
            m.describe,
            m.dtd,
            rules.join("; ")
        ));
    }
    out
}

/// The shipped mapping named `name` (its `format` name or its file name).
pub fn by_name(name: &str) -> Option<Mapping> {
    all()
        .into_iter()
        .find(|(f, m)| m.name == name || *f == name)
        .map(|x| x.1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_shipped_mapping_parses_and_its_dtd_is_shipped() {
        for (file, m) in super::all() {
            assert!(
                crate::container::shipped_dtd(&m.dtd).is_some(),
                "{file}: DTD {} not shipped",
                m.dtd
            );
        }
        // Every shipped DTD of a mapping takes in the engine's records by the fragment.
        for (file, m) in super::all() {
            let dtd = crate::container::shipped_dtd(&m.dtd).unwrap();
            assert!(
                dtd.contains("\ninclude import;\n"),
                "{file}: {} does not include the import fragment",
                m.dtd
            );
        }
        let listed: Vec<_> = super::SHIPPED.iter().map(|s| s.0).collect();
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/formats");
        for e in std::fs::read_dir(dir).unwrap() {
            let n = e.unwrap().file_name().into_string().unwrap();
            if n.ends_with(".map") {
                assert!(
                    listed.contains(&n.as_str()),
                    "formats/{n} is not in SHIPPED"
                );
            }
        }
    }
}
