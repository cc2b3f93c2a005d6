//! No input makes the DTD loader panic or overflow the stack.

use proptest::prelude::*;

use metatf::dtd;

/// Fragments that look like DTD text, so that random inputs get past the first token.
const PIECES: &[&str] = &[
    "tag",
    "a",
    "b",
    "vfield",
    "section",
    "s",
    "1",
    "0x10",
    "256",
    "99999999999999999999",
    ":",
    "(",
    ")",
    "{",
    "}",
    ",",
    ";",
    ".",
    "=",
    "*",
    "+",
    "-",
    "width",
    "value",
    "interpretation",
    "display",
    "none",
    "default",
    "delta",
    "stride",
    "sectionOffset",
    "sectionStride",
    "hex",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "é",
    "@",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn token_soup_never_panics(idx in proptest::collection::vec(0..PIECES.len(), 0..60)) {
        let text: Vec<&str> = idx.iter().map(|&i| PIECES[i]).collect();
        let text = text.join(" ");
        let _ = dtd::parse_str("fuzz.dtd", &text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = dtd::parse_str("fuzz.dtd", &text);
    }
}

#[test]
fn deep_inputs_are_rejected_not_crashing() {
    let deep_types: String = (0..2000)
        .map(|i| format!("t{i} : (t{});\n", i + 1))
        .collect::<String>()
        + "t2000 : (x);\nr : (tag, t0) { tag.value = 4; }\nx.width = 1; x.interpretation = none;";
    let e = dtd::parse_str("deep.dtd", &deep_types).unwrap_err();
    assert!(e.errors.iter().any(|e| e.code_str() == "mtf::dtd::limit"));

    // Exponential expansion (each type holds its inner type twice) is capped.
    let wide: String = (0..40)
        .map(|i| format!("w{i} : (w{0}, w{0});\n", i + 1))
        .collect::<String>()
        + "w40 : (x);\nr : (tag, w0) { tag.value = 4; }\nx.width = 1; x.interpretation = none;";
    let e = dtd::parse_str("wide.dtd", &wide).unwrap_err();
    assert!(e.errors.iter().any(|e| e.code_str() == "mtf::dtd::limit"));

    let parens = format!("x.width = {}1{};", "(".repeat(100_000), ")".repeat(100_000));
    assert!(dtd::parse_str("p.dtd", &parens).is_err());
}

#[test]
fn many_wide_types_are_bounded() {
    // 300 record types, each expanding to ~65,000 fields: stopped by the whole-DTD budget.
    let mut text: String = (0..16)
        .map(|i| format!("w{i} : (w{0}, w{0});\n", i + 1))
        .collect::<String>()
        + "w16 : (x);\nx.width = 1; x.interpretation = none;\n";
    for i in 0..300 {
        text.push_str(&format!("r{i} : (tag, w0) {{ tag.value = {}; }}\n", i + 4));
    }
    let start = std::time::Instant::now();
    let e = dtd::parse_str("many.dtd", &text).unwrap_err();
    assert!(e.errors.iter().any(|e| e.code_str() == "mtf::dtd::limit"));
    assert!(start.elapsed().as_secs() < 30);
}
