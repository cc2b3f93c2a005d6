//! The live metadata state (docs/format.md §6.3): the current width and interpretation of every
//! (record type, slot) of one scope, with the previous values and cursors that `delta`, `stride`
//! and `sectionStride` need.
//!
//! The decoder and the encoder share this module, so the rules exist once.

// Design: the state of a scope is one flat `Vec<SlotState>`; a record type's slots start at
// `base[record]`. A `section` record starts a new state from the DTD.

use crate::dtd::{Builtin, Interp, RecordId, Schema, SlotId, SlotKind};

use super::liveset::LiveSets;
use super::meta::{MetaProperty, MetaRefused};

/// The live state of one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotState {
    /// Current width in bytes (0..=8).
    pub width: u8,
    /// The most recent non-zero width (0 if none).
    pub(crate) lastwidth: u8,
    /// Current interpretation.
    pub(crate) interp: Interp,
    /// Previous value, for `delta` and `stride`.
    pub(crate) prev: u64,
    /// Element cursor, for `sectionStride`.
    pub(crate) cursor: i64,
    /// The live set this slot's values go into (0: none; extension `live/1`).
    pub(crate) liveset: u8,
}

impl SlotState {
    /// The state a scope starts from for a slot declared with `width` and `interp`.
    pub(crate) fn initial(width: u8, interp: Interp, liveset: u8) -> SlotState {
        // A zero-width interpretation keeps the declared width as the last non-zero one, so a
        // later switch to `none` restores it (docs/format.md §6.3).
        let lastwidth = width;
        let width = if interp.is_zero_width() { 0 } else { width };
        let prev = match interp {
            Interp::Delta(v) => v,
            Interp::Stride { initial, .. } => initial,
            _ => 0,
        };
        SlotState {
            width,
            lastwidth,
            interp,
            prev,
            cursor: 0,
            liveset,
        }
    }
}

/// The live state of one scope.
#[derive(Debug, Clone)]
pub struct ScopeState {
    /// Section id of the scope (0 = global).
    pub(crate) section: u8,
    base: Vec<u32>,
    /// Current state, indexed by `base[record] + slot`.
    pub slots: Vec<SlotState>,
    /// The scope's live sets (extension `live/1`).
    pub sets: LiveSets,
    /// Whether the trace declares extension `live/1` (metadata may then use codes 8 and 9).
    pub(crate) live: bool,
}

/// Marks a record type that is not visible in a scope.
const NOT_VISIBLE: u32 = u32::MAX;

impl ScopeState {
    /// The initial state of the scope with this section id (0 = global).
    ///
    /// # Panics
    /// If the schema does not declare the section (callers check first).
    pub fn new(schema: &Schema, section: u8) -> ScopeState {
        let scope = schema.scope_for(section).expect("declared section");
        let mut base = vec![NOT_VISIBLE; schema.records.len()];
        let mut initial = Vec::new();
        for &rid in &scope.records {
            base[rid as usize] = initial.len() as u32;
            for slot in &schema.record(rid).slots {
                let width = match slot.kind {
                    SlotKind::Int { width } => width,
                    SlotKind::Bytes { .. } => 0,
                };
                initial.push(SlotState::initial(width, slot.interp, slot.liveset));
            }
        }
        ScopeState {
            section,
            base,
            slots: initial,
            sets: LiveSets::default(),
            live: schema.uses_live(),
        }
    }

    /// The same state for a writer: it accepts extension `live/1` metadata (and declares the
    /// extension in the header when it uses it), and can look values up in its live sets.
    pub(crate) fn for_writer(mut self) -> ScopeState {
        self.live = true;
        self.sets = LiveSets::indexed();
        self
    }

    /// Index of a record type's first slot in `slots`, if the record is visible here.
    #[inline]
    pub fn base(&self, record: RecordId) -> Option<usize> {
        match self.base[record as usize] {
            NOT_VISIBLE => None,
            b => Some(b as usize),
        }
    }

    /// Validate and apply a metadata change (docs/format.md §5.4 and §6.3).
    pub fn apply(
        &mut self,
        schema: &Schema,
        record: RecordId,
        slot: SlotId,
        prop: MetaProperty,
    ) -> Result<(), MetaRefused> {
        let rt = schema.record(record);
        let base = self.base(record).ok_or_else(|| MetaRefused::NotInScope {
            record: rt.name.clone(),
        })?;
        if matches!(rt.builtin, Some(Builtin::Section | Builtin::Metadata)) {
            return Err(MetaRefused::Builtin {
                record: rt.name.clone(),
            });
        }
        let Some(def) = rt.slots.get(slot as usize) else {
            return Err(MetaRefused::NoSuchField {
                record: rt.name.clone(),
                slot: slot as u64,
                count: rt.slots.len(),
            });
        };
        if slot == 0 {
            return Err(MetaRefused::Tag);
        }
        if matches!(def.kind, SlotKind::Bytes { .. }) {
            return Err(MetaRefused::ByteString {
                record: rt.name.clone(),
                field: def.name.clone(),
            });
        }
        if let MetaProperty::Interp(
            Interp::SectionOffset(s) | Interp::SectionStride { section: s, .. },
        ) = prop
        {
            if schema.scope_for(s).is_none() {
                return Err(MetaRefused::UndeclaredSection { section: s });
            }
        }
        if prop.needs_live() && !self.live {
            return Err(MetaRefused::NeedsLive { what: prop.name() });
        }
        let st = &mut self.slots[base + slot as usize];
        match prop {
            MetaProperty::LiveSet(n) => st.liveset = n,
            MetaProperty::Width(w) => {
                if w > 8 {
                    return Err(MetaRefused::WidthTooLarge { width: w as u64 });
                }
                if w != 0 && st.interp.is_zero_width() {
                    return Err(MetaRefused::WidthOnZeroWidth {
                        width: w,
                        record: rt.name.clone(),
                        field: def.name.clone(),
                        interp: st.interp.keyword(),
                    });
                }
                st.width = w;
                if w != 0 {
                    st.lastwidth = w;
                }
            }
            MetaProperty::Interp(i) => {
                st.interp = i;
                st.width = if i.is_zero_width() { 0 } else { st.lastwidth };
                match i {
                    Interp::Delta(v) => st.prev = v,
                    Interp::Stride { initial, .. } => st.prev = initial,
                    Interp::SectionStride { .. } => st.cursor = 0,
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_width_interpretation_keeps_the_declared_width_as_last() {
        let st = SlotState::initial(2, Interp::Default(7), 0);
        assert_eq!((st.width, st.lastwidth), (0, 2));
        let st = SlotState::initial(0, Interp::Default(7), 0);
        assert_eq!((st.width, st.lastwidth), (0, 0));
        let st = SlotState::initial(3, Interp::Delta(5), 0);
        assert_eq!((st.width, st.lastwidth, st.prev), (3, 3, 5));
    }

    #[test]
    fn switching_to_none_restores_the_declared_width() {
        let schema = crate::dtd::parse_str(
            "t.dtd",
            "len.width = 2; len.interpretation = none;
             a : (tag, len) { tag.value = 4; len.interpretation = default 7; }",
        )
        .unwrap()
        .schema;
        let a = schema.record_by_name(0, "a").unwrap();
        let mut st = ScopeState::new(&schema, 0);
        let base = st.base(a).unwrap();
        assert_eq!(st.slots[base + 1].width, 0);
        st.apply(&schema, a, 1, MetaProperty::Interp(Interp::None))
            .unwrap();
        assert_eq!(st.slots[base + 1].width, 2);
    }
}
