//! The numbers the interpreter gives live blocks (`Places`), looked up by id: for the
//! statistics of a chunk resumed from an analysis state, which holds blocks by id
//! (`stats/heap/merge.rs`).

use super::state::NO_STORE;
use super::Interpreter;

impl Interpreter<'_> {
    /// The numbers of the live blocks holding id (`key`, `id`) of namespace `sp`, the oldest
    /// first, into `out` (cleared first): one for an id of a namespace that is not shared, each
    /// holder's for a shared one. False, where the id is not alive or a block has no number.
    pub(crate) fn places_of(&self, sp: usize, key: u64, id: u64, out: &mut Vec<u32>) -> bool {
        out.clear();
        if let Some(l) = self.live.get(sp).and_then(|m| m.get(&(key, id))) {
            out.push(l.stored);
        } else if let Some(h) = self.shared.get(sp) {
            out.extend(h.chain((key, id)).map(|l| l.stored));
            out.reverse();
        }
        !out.is_empty() && !out.contains(&NO_STORE)
    }
}
