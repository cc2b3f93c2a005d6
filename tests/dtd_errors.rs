//! Golden tests of DTD diagnostics: every `tests/data/dtd/errors/*.dtd` must be rejected, and
//! its rendered diagnostics must equal `*.stderr`. Regenerate with `MTF_BLESS=1 cargo test`.

use std::fs;
use std::path::Path;

use metatf::dtd;

#[test]
fn error_goldens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dtd/errors");
    let bless = std::env::var_os("MTF_BLESS").is_some();
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dtd"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "expected at least 15 error cases");
    let mut failures = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(&path).unwrap();
        let errs = match dtd::parse_str(&name, &text) {
            Ok(_) => {
                failures.push(format!("{name}: accepted, but it is an error case"));
                continue;
            }
            Err(e) => e,
        };
        let rendered = dtd::render_plain(&errs);
        let golden = path.with_extension("stderr");
        if bless {
            fs::write(&golden, &rendered).unwrap();
            continue;
        }
        match fs::read_to_string(&golden) {
            Ok(expected) if expected == rendered => {}
            Ok(expected) => failures.push(format!(
                "{name}: diagnostics differ from {}\n--- expected\n{expected}\n--- actual\n{rendered}",
                golden.display()
            )),
            Err(_) => failures.push(format!("{name}: no golden file (run with MTF_BLESS=1)")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Each error file reports the code its name is about (guards against a golden file blessed
/// with the wrong error).
#[test]
fn error_codes() {
    let cases: &[(&str, &[&str])] = &[
        ("unknown_field.dtd", &["unknown_type"]),
        ("unknown_path.dtd", &["unknown_type"]),
        ("missing_width.dtd", &["missing_width"]),
        ("missing_interpretation.dtd", &["missing_interpretation"]),
        ("duplicate_tag.dtd", &["duplicate_tag"]),
        ("duplicate_tag_global.dtd", &["duplicate_tag"]),
        ("missing_tag_value.dtd", &["missing_tag_value"]),
        ("section_id_zero.dtd", &["section_id_range"]),
        ("section_id_256.dtd", &["section_id_range"]),
        ("duplicate_section_id.dtd", &["duplicate_section"]),
        ("duplicate_section_name.dtd", &["duplicate_section"]),
        ("forward_reference.dtd", &["forward_reference"]),
        ("self_reference.dtd", &["forward_reference"]),
        ("recursive_type.dtd", &["recursive_type"]),
        ("hex_upper_case.dtd", &["syntax"]),
        ("unknown_display.dtd", &["bad_property"]),
        ("tag_as_field_name.dtd", &["tag_not_first"]),
        ("tag_width_negative.dtd", &["bad_width"]),
        (
            "recursive_taggable.dtd",
            &["recursive_type", "recursive_type"],
        ),
        (
            "width_on_zero_width_body.dtd",
            &["width_on_zero_width", "width_on_zero_width"],
        ),
        ("width_on_default.dtd", &["width_on_zero_width"]),
        ("tag_width_twice.dtd", &["tag_width_twice"]),
        ("tag_width_in_section.dtd", &["tag_width_twice"]),
        ("unterminated_comment.dtd", &["unterminated_comment"]),
        ("syntax_recovery.dtd", &["syntax", "syntax"]),
        ("reserved_name.dtd", &["reserved_name", "reserved_name"]),
        ("reserved_tag.dtd", &["reserved_name"]),
        ("fragment_name.dtd", &["reserved_name"]),
        ("fragment_name_in_section.dtd", &["reserved_name"]),
        ("fragment_tag.dtd", &["duplicate_tag"]),
        ("duplicate_field.dtd", &["duplicate_field"]),
        ("duplicate_generated_field.dtd", &["duplicate_field"]),
        ("duplicate_record.dtd", &["duplicate_record"]),
        ("bad_integer.dtd", &["bad_integer"]),
        ("too_deep.dtd", &["limit"]),
        ("non_constant_value.dtd", &["non_constant_value"]),
        ("bad_count.dtd", &["bad_count"]),
        ("cyclic_width.dtd", &["cyclic_width"]),
        ("bad_tag_width.dtd", &["bad_width"]),
        ("tag_value_too_wide.dtd", &["bad_property"]),
        ("arithmetic_overflow.dtd", &["bad_width"]),
        ("tag_value_outside_body.dtd", &["bad_property"]),
        (
            "bad_property.dtd",
            &[
                "bad_property",
                "bad_property",
                "bad_property",
                "bad_property",
            ],
        ),
        (
            "bad_interpretation.dtd",
            &[
                "bad_interpretation",
                "bad_interpretation",
                "bad_interpretation",
            ],
        ),
        ("tag_not_first.dtd", &["tag_not_first", "tag_not_first"]),
        (
            "several_errors.dtd",
            &[
                "duplicate_section",
                "missing_interpretation",
                "missing_interpretation",
                "duplicate_tag",
                "missing_tag_value",
            ],
        ),
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dtd/errors");
    for (file, codes) in cases {
        let text = fs::read_to_string(dir.join(file)).unwrap();
        let errs = dtd::parse_str(file, &text).expect_err(file);
        let mut got: Vec<String> = errs
            .errors
            .iter()
            .map(|e| e.code_str().trim_start_matches("mtf::dtd::").to_string())
            .collect();
        let mut want: Vec<String> = codes.iter().map(|s| s.to_string()).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{file}: {}", dtd::render_plain(&errs));
    }
}
