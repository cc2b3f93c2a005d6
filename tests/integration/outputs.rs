//! What commands write: never over one of their inputs; compressed by the output's name; the
//! traces they still read when cut short or compressed.

use std::path::Path;

use crate::util::{self, mtf, text};

/// Every command that writes refuses an output that is one of its inputs — by the same name,
/// through a symbolic link, through a hard link, through standard input — with status 2, the
/// typed error, and the input left as it was.
#[cfg(unix)]
#[test]
fn no_command_writes_over_one_of_its_inputs() {
    let dir = util::tempdir();
    let d = dir.path();
    let t = d.join("t.mtf");
    let imported = d.join("imp.mtf");
    let txt = d.join("trace.txt");
    std::fs::copy(util::root().join("traces/hatf-le32.mtf"), &t).unwrap();
    std::fs::copy(util::root().join("traces/src/hatf-le32.txt"), &txt).unwrap();
    std::fs::copy(util::root().join("traces/android.mtf"), &imported).unwrap();
    std::os::unix::fs::symlink("t.mtf", d.join("link.mtf")).unwrap();
    std::fs::hard_link(&t, d.join("hard.mtf")).unwrap();
    let dtd = d.join("hatf10.dtd");
    std::fs::copy(util::root().join("dtds/hatf10.dtd"), &dtd).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (ts, link, hard, dtds) = (
        s(&t),
        s(&d.join("link.mtf")),
        s(&d.join("hard.mtf")),
        s(&dtd),
    );
    let cases: Vec<Vec<String>> = vec![
        vec!["stats".into(), ts.clone(), "-o".into(), ts.clone()],
        vec!["stats".into(), ts.clone(), "-o".into(), link.clone()],
        vec!["report".into(), ts.clone(), "-o".into(), hard.clone()],
        vec![
            "plot".into(),
            ts.clone(),
            "-f".into(),
            "svg".into(),
            "-o".into(),
            ts.clone(),
        ],
        vec![
            "diff".into(),
            ts.clone(),
            ts.clone(),
            "-o".into(),
            link.clone(),
        ],
        vec!["compact".into(), ts.clone(), "-o".into(), hard.clone()],
        vec!["index".into(), ts.clone(), "-o".into(), link.clone()],
        vec!["simulate".into(), ts.clone(), "-o".into(), ts.clone()],
        vec!["pack".into(), s(&txt), "-o".into(), s(&txt)],
        // The DTD is an input too, named or found beside the trace.
        vec![
            "stats".into(),
            ts.clone(),
            "-d".into(),
            dtds.clone(),
            "-o".into(),
            dtds.clone(),
        ],
        vec!["stats".into(), ts.clone(), "-o".into(), dtds.clone()],
        vec!["export".into(), s(&imported), "-o".into(), s(&imported)],
    ];
    let before: Vec<Vec<u8>> = [&t, &txt, &dtd, &imported]
        .iter()
        .map(|p| std::fs::read(p).unwrap_or_default())
        .collect();
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = mtf(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("mtf::io::overwrites_input"), "{args:?}: {err}");
        assert!(err.contains("not writing over it"), "{args:?}: {err}");
    }
    // Standard input redirected from the trace.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args(["stats", "-", "-o", &ts])
        .stdin(std::fs::File::open(&t).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("standard input"));
    let after: Vec<Vec<u8>> = [&t, &txt, &dtd, &imported]
        .iter()
        .map(|p| std::fs::read(p).unwrap_or_default())
        .collect();
    assert!(before == after, "an input was changed");
    assert!(std::fs::symlink_metadata(d.join("link.mtf"))
        .unwrap()
        .file_type()
        .is_symlink());
    // Another output is written as always.
    let out = mtf(&["stats", &ts, "-o", &s(&d.join("stats.txt"))]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}
