//! Issue 16 item 17: the layering of docs/architecture.md is checked, not only described. The
//! table "Modules and what each may use" in that document is the source of truth: every
//! `crate::MODULE` path in a module's code (comments aside) must name a module its row allows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::util;

/// The rows of the table: module → the modules it may use; a module whose row says "every
/// module may use it" is added to every row.
fn table() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(util::root().join("docs/architecture.md")).unwrap();
    let mut rows = BTreeMap::new();
    let mut universal = Vec::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line.starts_with("| module |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        if line.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = line.split(" | ").collect();
        assert!(cells.len() >= 3, "a row of three cells: {line}");
        let module = backticked(cells[0])
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("a module name in {line}"));
        let module = module
            .trim_end_matches('/')
            .trim_end_matches(".rs")
            .to_string();
        let uses: BTreeSet<String> = backticked(cells[cells.len() - 1])
            .into_iter()
            .map(|u| u.split("::").next().unwrap().to_string())
            .collect();
        if cells[1].contains("every module may use it") {
            universal.push(module.clone());
        }
        rows.insert(module, uses);
    }
    assert!(rows.len() > 10, "the table was not found: {rows:?}");
    for uses in rows.values_mut() {
        uses.extend(universal.iter().cloned());
    }
    rows
}

/// Items the crate root re-exports (`pub use layout::{MetaProperty, …}` in src/lib.rs), with the
/// module each comes from: `crate::MetaProperty` is a use of `layout`.
fn root_items() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(util::root().join("src/lib.rs")).unwrap();
    let mut items = BTreeMap::new();
    for stmt in lib.split("pub use ").skip(1) {
        let stmt = stmt.split(';').next().unwrap();
        let Some((module, rest)) = stmt.split_once("::") else {
            continue;
        };
        for item in rest.split([',', '{', '}']) {
            let item = item.split(" as ").last().unwrap().trim();
            if !item.is_empty() {
                items.insert(item.to_string(), module.trim().to_string());
            }
        }
    }
    items
}

/// The `code` spans of a table cell.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Every `.rs` file under `path` (or `path` itself).
fn files(path: &Path, out: &mut Vec<std::path::PathBuf>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            files(&e.unwrap().path(), out);
        }
    } else if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The modules of the crate that the code of `module` names as `crate::NAME`.
fn used_by(module: &str, root: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    // The command line is its own package (crates/mtf); the library's modules are in src/.
    let src = match module {
        "cli" => util::root().join("crates/mtf/src"),
        _ => util::root().join("src"),
    };
    let mut paths = Vec::new();
    files(&src.join(module), &mut paths);
    files(&src.join(format!("{module}.rs")), &mut paths);
    assert!(!paths.is_empty(), "no source for module `{module}`");
    let mut used = BTreeMap::new();
    let mut add = |name: String, at: String| {
        let name = root.get(&name).cloned().unwrap_or(name);
        if name != module {
            used.entry(name).or_insert(at);
        }
    };
    for p in paths {
        let text = std::fs::read_to_string(&p).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            for (i, _) in code.match_indices("crate::") {
                // `metatf::crate::` does not exist; `$crate::` in macros is the crate too.
                let rest = &code[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    add(name, format!("{}:{}", p.display(), n + 1));
                }
            }
            // `use crate::{a, b}` lists.
            if let Some(i) = code.find("crate::{") {
                let list = &code[i + "crate::{".len()..];
                for item in list.split([',', '}']) {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        add(name, format!("{}:{}", p.display(), n + 1));
                    }
                }
            }
        }
    }
    used
}

#[test]
fn every_module_uses_only_what_docs_architecture_md_allows() {
    let table = table();
    let root = root_items();
    let src = util::root().join("src");
    // Every module of the library has a row.
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if matches!(name.as_str(), "lib" | "main") {
            continue;
        }
        assert!(
            table.contains_key(&name),
            "src/{name} has no row in docs/architecture.md"
        );
    }
    let mut wrong = Vec::new();
    for (module, allowed) in &table {
        if module == "cli" {
            // The binary: the library's public API only (`metatf::…`), never `crate::` of
            // the library (its `crate::` is the binary's own root).
            for (name, at) in used_by(module, &root) {
                if name != "cli" {
                    wrong.push(format!("cli uses crate::{name} ({at})"));
                }
            }
            continue;
        }
        for (name, at) in used_by(module, &root) {
            if !allowed.contains(&name) {
                wrong.push(format!("{module} uses {name} ({at})"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "uses the table of docs/architecture.md does not allow:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_table_parser_reads_the_cells_it_is_given() {
    assert_eq!(
        backticked("`container` (to hand bytes over as a `Trace`), `escape`"),
        ["container", "Trace", "escape"]
    );
}
