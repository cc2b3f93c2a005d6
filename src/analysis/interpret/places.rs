//! The numbers the interpreter gives live blocks (`Places`), looked up by id: for the
//! statistics of a chunk resumed from an analysis state, which holds blocks by id
//! (`stats/heap/merge.rs`).

use super::state::NO_STORE;
use super::Interpreter;

impl Interpreter<'_> {
    /// The number of live id (`key`, `id`) of namespace `sp`, where it has one and the
    /// namespace holds no id shared by several blocks.
    pub(crate) fn place_of(&self, sp: usize, key: u64, id: u64) -> Option<u32> {
        if self.shared.get(sp).is_some_and(|m| !m.is_empty()) {
            return None;
        }
        let l = self.live.get(sp)?.get(&(key, id))?;
        (l.stored != NO_STORE).then_some(l.stored)
    }
}
