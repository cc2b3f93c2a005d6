//! The text form of a trace (docs/text-format.md): what `mtf dump` prints and `mtf pack` reads.

pub mod parse;
pub mod print;

pub use parse::{
    pack_lines, pack_to_vec, read_header, InputFormat, PackError, TextError, TextHeader,
};
pub use print::{DumpHeader, Format, Printer};

use crate::dtd::{Node, RecordType};

/// The key of a repeat in the text form: its full path, as its item's slot names carry it
/// (`frames`, or `group.n_items` for a composite repeat inside a nested record). A repeat of a
/// single field is keyed by that field's name.
pub(crate) fn repeat_key(rt: &RecordType, name: &str, item: &[Node]) -> String {
    fn first(nodes: &[Node]) -> Option<u16> {
        nodes.iter().find_map(|n| match n {
            Node::Field(s) => Some(*s),
            Node::Group { children, .. } => first(children),
            Node::Repeat { item, .. } => first(item),
        })
    }
    let Some(s) = first(item) else {
        return name.to_string();
    };
    let full = &rt.slots[s as usize].name;
    if let [Node::Field(_)] = item {
        return full.clone();
    }
    let needle = format!("{name}.");
    let mut from = 0;
    while let Some(p) = full[from..].find(&needle) {
        let at = from + p;
        if at == 0 || full.as_bytes()[at - 1] == b'.' {
            return full[..at + name.len()].to_string();
        }
        from = at + 1;
    }
    name.to_string()
}
