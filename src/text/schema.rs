//! The text of `mtf dtd show`: every scope of a schema, every record type visible there, and a
//! table of its slots with their widths, interpretations and repeats.

// Design: a pure function of the schema, so it is golden-tested without running the binary.
// Which repeat a slot is in comes from the record's `Shape`, whose keys are the compiled
// program's (the keys dumps use).

use crate::dtd::analysis::{AExpr, Analysis, Namespace, RecordDecl, Site, SpaceKind};
use crate::dtd::{resolve::show_expr, Builtin, Expr, RecordType, Schema, SlotKind};
use crate::layout::Shape;

/// For each slot inside a repeat: the innermost repeat's key and its count field's name, from
/// the record's shape (the keys dumps use).
fn repeats(rec: &RecordType) -> Vec<Option<(String, String)>> {
    fn walk(
        shape: &[Shape],
        rec: &RecordType,
        inside: Option<&(String, String)>,
        marks: &mut [Option<(String, String)>],
    ) {
        for s in shape {
            match s {
                Shape::Field { slot, .. } => marks[*slot as usize] = inside.cloned(),
                Shape::Group { members, .. } => walk(members, rec, inside, marks),
                Shape::List {
                    key, count, item, ..
                } => {
                    let count_name = rec
                        .slots
                        .get(*count as usize)
                        .map_or("?", |s| s.name.as_str());
                    let here = (key.clone(), count_name.to_string());
                    walk(item, rec, Some(&here), marks);
                }
            }
        }
    }
    let mut marks = vec![None; rec.slots.len()];
    walk(&Shape::of(rec), rec, None, &mut marks);
    marks
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// How many record types and sections a schema has, with the built-ins counted apart so that
/// the sum is what `dtd show` lists: `7 record types and the 3 built-in ones in 1 section`.
pub fn schema_summary(schema: &Schema) -> String {
    let user = schema
        .records
        .iter()
        .filter(|r| r.builtin.is_none())
        .count();
    count_summary(user, schema.records.len() - user, schema.scopes.len() - 1)
}

fn count_summary(records: usize, builtin: usize, sections: usize) -> String {
    format!(
        "{} and the {builtin} built-in ones in {}",
        plural(records, "record type", "record types"),
        plural(sections, "section", "sections")
    )
}

/// The text of `mtf dtd show`: every scope (global first), every record type visible there, and
/// a table of its slots.
pub fn schema_listing(schema: &Schema) -> String {
    let mut out = String::new();
    let user = schema
        .records
        .iter()
        .filter(|r| r.builtin.is_none())
        .count();
    out.push_str(&format!(
        "{}: tag width {}, {}\n",
        schema.name,
        plural(schema.tag_width as usize, "byte", "bytes"),
        count_summary(user, schema.records.len() - user, schema.scopes.len() - 1)
    ));
    for scope in &schema.scopes {
        out.push('\n');
        if scope.id == 0 {
            out.push_str("global scope");
        } else {
            out.push_str(&format!("section {} (id {})", scope.name, scope.id));
        }
        out.push_str(&format!(
            ": {}\n",
            plural(scope.records.len(), "record type", "record types")
        ));
        // A section shows its own record types in full and names the global ones it can also
        // hold (shown in full once, under the global scope).
        let (global, own): (Vec<_>, Vec<_>) = scope
            .records
            .iter()
            .map(|&r| schema.record(r))
            .partition(|r| r.scope == 0 && scope.id != 0);
        if !global.is_empty() {
            let names: Vec<String> = global
                .iter()
                .map(|r| format!("{} (tag {})", r.name, r.tag))
                .collect();
            out.push_str(&format!("  also global: {}\n", names.join(", ")));
        }
        for rec in own {
            out.push('\n');
            format_record(&mut out, rec, scope.id);
        }
    }
    format_analysis(&mut out, schema);
    out
}

/// The analysis declarations (extension analysis/1): namespaces, then what each record does.
fn format_analysis(out: &mut String, schema: &Schema) {
    let a = &schema.analysis;
    if !a.is_declared() {
        return;
    }
    out.push_str(&format!(
        "\nanalysis/{}: {}{}\n",
        a.version,
        plural(a.namespaces.len(), "namespace", "namespaces"),
        a.time_unit
            .map_or(String::new(), |u| format!(", times in {}", u.keyword()))
    ));
    for ns in &a.namespaces {
        let attrs = namespace_attrs(a, ns);
        out.push_str(&format!("  namespace {}: {}\n", ns.name, attrs.join(", ")));
    }
    for (rid, rd) in a.records.iter().enumerate() {
        if rd.is_empty() {
            continue;
        }
        let rt = schema.record(rid as crate::dtd::RecordId);
        let parts = record_decl_parts(a, rt, rd);
        out.push_str(&format!("  record {}: {}\n", rt.name, parts.join("; ")));
    }
}

/// A namespace's attributes, those that differ from the defaults of its kind.
fn namespace_attrs(a: &Analysis, ns: &Namespace) -> Vec<String> {
    let mut attrs = vec![ns.kind.keyword().to_string()];
    if let Some(k) = &ns.key {
        attrs.push(format!("keyed by {k}"));
    }
    if ns.shared {
        attrs.push("shared".into());
    }
    if let Some(n) = ns.null {
        attrs.push(format!("null {n}"));
    }
    if ns.kind == SpaceKind::Ids {
        attrs.push(format!("unknown {}", ns.unknown.keyword()));
        if ns.unknown_refers != ns.unknown {
            attrs.push(format!("unknown refers {}", ns.unknown_refers.keyword()));
        }
    }
    if ns.kind != SpaceKind::Table {
        attrs.push(format!("at end {}", ns.at_end.keyword()));
    }
    if ns.kind == SpaceKind::Nesting && !ns.close_same {
        attrs.push("close any".into());
    }
    if ns.first != 0 {
        attrs.push(format!("first {}", ns.first));
    }
    if ns.sized {
        attrs.push("sized".into());
    }
    if ns.site_text {
        attrs.push("sites: text".into());
    } else if let Some(s) = ns.site_space {
        attrs.push(format!("sites: {}", a.namespaces[s as usize].name));
    }
    attrs
}

/// What one record does: its actions, then byte counts, times, guards, thread, alignment,
/// sizes, site, monotonic series, depths and names.
fn record_decl_parts(a: &Analysis, rt: &RecordType, rd: &RecordDecl) -> Vec<String> {
    let slot = |s: u16| rt.slots[s as usize].name.clone();
    let space = |sp: u32| a.namespaces[sp as usize].name.as_str();
    let mut parts: Vec<String> = rd
        .actions
        .iter()
        .map(|x| {
            let null = match (x.dead_null, x.leaves_null) {
                (true, true) => ", dead null, leaves null",
                (true, false) => ", dead null",
                (false, true) => ", leaves null",
                (false, false) => "",
            };
            format!(
                "{} {} ({}{null})",
                x.kind.keyword(),
                space(x.space),
                slot(x.slot)
            )
        })
        .collect();
    for b in &rd.bytes {
        let mut t = format!("bytes {}", byte_count(&b.expr, a, rt));
        if let Some((s, v)) = b.when {
            t.push_str(&format!(" when {} is {v}", slot(s)));
        }
        parts.push(t);
    }
    for (s, u) in &rd.time {
        parts.push(format!("time {} ({})", slot(*s), u.keyword()));
    }
    for (s, g) in &rd.guards {
        let op = if g.negated { "is not" } else { "is" };
        parts.push(format!(
            "{} only when {} {op} {}",
            slot(*s),
            slot(g.slot),
            g.value
        ));
    }
    if let Some(s) = rd.thread {
        parts.push(format!("thread {}", slot(s)));
    }
    if let Some(s) = rd.align {
        parts.push(format!("align {}", slot(s)));
    }
    for s in &rd.sizes {
        parts.push(format!("size {} (bytes)", slot(*s)));
    }
    match rd.site {
        Some(Site::Field { slot: s, space: sp }) => {
            parts.push(format!("site {} ({})", slot(s), sp.map_or("text", space)))
        }
        Some(Site::Inherited { space: sp }) => parts.push(format!("site of its {}", space(sp))),
        None => {}
    }
    for m in &rd.monotonic {
        let what = m.slot.map_or("time".to_string(), slot);
        let per = m.key.map_or("trace".to_string(), slot);
        parts.push(format!("monotonic {what} per {per}"));
    }
    for d in &rd.depth {
        parts.push(format!("depth {} ({})", slot(d.slot), space(d.space)));
    }
    for (s, sp) in &rd.names {
        parts.push(format!("names {} ({})", space(*sp), slot(*s)));
    }
    parts
}

/// A byte count's expression as written, every binary operation in parentheses.
fn byte_count(e: &AExpr, a: &Analysis, rt: &RecordType) -> String {
    let bin = |x: &AExpr, op: &str, y: &AExpr| {
        format!("({} {op} {})", byte_count(x, a, rt), byte_count(y, a, rt))
    };
    match e {
        AExpr::Const(v) => v.to_string(),
        AExpr::Field(s) => format!("{}.value", rt.slots[*s as usize].name),
        AExpr::Lookup { space, stored } => {
            let ns = &a.namespaces[*space as usize];
            format!("{}.{}.value", ns.name, ns.stored[*stored as usize])
        }
        AExpr::Add(x, y) => bin(x, "+", y),
        AExpr::Sub(x, y) => bin(x, "-", y),
        AExpr::Mul(x, y) => bin(x, "*", y),
    }
}

/// The size of a record: `Some(bytes)` when every field has a constant width and there is no
/// repeat.
pub(crate) fn fixed_size(rec: &RecordType) -> Option<u64> {
    if rec.builtin == Some(Builtin::Metadata) {
        return None; // its value words depend on the property code (§5.4)
    }
    let mut total = 0u64;
    for s in &rec.slots {
        match &s.kind {
            SlotKind::Int { .. } if !s.in_repeat => total += u64::from(s.initial_width()),
            SlotKind::Bytes {
                width: Expr::Const(c),
            } if !s.in_repeat => total = total.saturating_add(*c),
            _ => return None,
        }
    }
    Some(total)
}

fn format_record(out: &mut String, rec: &RecordType, scope: u8) {
    let size = match fixed_size(rec) {
        Some(n) => plural(n as usize, "byte", "bytes"),
        None => "variable size".to_string(),
    };
    let origin = match (rec.builtin, rec.scope) {
        (Some(_), _) => ", built-in",
        (None, 0) if scope != 0 => ", global",
        _ => "",
    };
    out.push_str(&format!(
        "  record {}: tag {}, {size}{origin}\n",
        rec.name, rec.tag
    ));
    let repeat_of = repeats(rec);
    let mut rows = vec![[
        "slot",
        "field",
        "width",
        "interpretation",
        "value",
        "display",
        "notes",
    ]
    .map(String::from)];
    for (i, s) in rec.slots.iter().enumerate() {
        let width = match &s.kind {
            // The metadata value is 0, 1 or 2 class-sized words, by property code (§5.4).
            SlotKind::Int { .. } if rec.builtin == Some(Builtin::Metadata) && i == 4 => {
                "0-2 words".to_string()
            }
            SlotKind::Int { width } if s.initial_width() != *width => format!("0 (last {width})"),
            SlotKind::Int { width } => width.to_string(),
            SlotKind::Bytes { width } => format!("bytes[{}]", show_expr(width, &rec.slots)),
        };
        let mut notes = Vec::new();
        if let Some((name, count)) = &repeat_of[i] {
            notes.push(format!("repeated in {name} (count {count})"));
        }
        for (k, v) in &s.extra {
            notes.push(format!("{k} = {v}"));
        }
        rows.push([
            i.to_string(),
            s.name.clone(),
            width,
            if s.liveset != 0 {
                format!("{}, liveset {}", s.interp, s.liveset)
            } else {
                s.interp.to_string()
            },
            s.fixed.map_or_else(|| "-".to_string(), |v| v.to_string()),
            format!("{:?}", s.display).to_lowercase(),
            notes.join("; "),
        ]);
    }
    // The notes column only when some slot has notes.
    let ncols = if rows.iter().skip(1).any(|r| !r[6].is_empty()) {
        7
    } else {
        6
    };
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &rows {
        let mut line = String::from("   ");
        for (c, cell) in row.iter().enumerate().take(ncols) {
            line.push_str("  ");
            if c == 0 {
                line.push_str(&format!("{cell:>w$}", w = widths[c]));
            } else {
                line.push_str(&format!("{cell:<w$}", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}
