//! The text of `mtf dtd show`: every scope of a schema, every record type visible there, and a
//! table of its slots with their widths, interpretations and repeats.

// Design: a pure function of the schema, so it is golden-tested without running the binary.
// Which repeat a slot is in comes from a static walk of the compiled program (each item once),
// the same walker and keys as dumps use.

use crate::dtd::{resolve::show_expr, Builtin, Expr, RecordType, Schema, SlotKind};
use crate::layout::{Compiled, Step, Walk};

/// For each slot inside a repeat: the innermost repeat's key and its count field's name.
fn repeats(
    schema: &Schema,
    rec: &RecordType,
    compiled: &Compiled,
) -> Vec<Option<(String, String)>> {
    let Some(rid) = schema.records.iter().position(|r| std::ptr::eq(r, rec)) else {
        return vec![None; rec.slots.len()];
    };
    let rid = rid as crate::dtd::RecordId;
    let prog = compiled.program(rid);
    let mut marks = vec![None; rec.slots.len()];
    let mut stack: Vec<(String, String)> = Vec::new();
    let mut walk = Walk::default();
    while let Some(step) = walk.next(prog, |_, _| 1) {
        match step {
            Step::Int { slot, .. } | Step::Bytes { slot, .. } => {
                marks[slot as usize] = stack.last().cloned();
            }
            Step::Enter { count, pc, .. } => {
                let count_name = rec
                    .slots
                    .get(count as usize)
                    .map_or("?", |s| s.name.as_str());
                stack.push((prog.keys[pc].to_string(), count_name.to_string()));
            }
            Step::Leave { .. } => {
                stack.pop();
            }
            Step::ItemStart { .. } | Step::ItemEnd { .. } => {}
            Step::Run { .. } => unreachable!("`next` yields fields one by one"),
        }
    }
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
    let compiled = Compiled::new(schema);
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
            format_record(&mut out, schema, rec, &compiled, scope.id);
        }
    }
    out
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

fn format_record(
    out: &mut String,
    schema: &Schema,
    rec: &RecordType,
    compiled: &Compiled,
    scope: u8,
) {
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
    let repeat_of = repeats(schema, rec, compiled);
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
