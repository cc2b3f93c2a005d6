//! The live metadata state (docs/format.md §6.3): the current width and interpretation of every
//! (record type, slot) of one scope, with the previous values and cursors that `delta`, `stride`
//! and `sectionStride` need.
//!
//! The decoder and the writer share this module, so the rules exist once.

// Design: the state of a scope is one flat `Vec<SlotState>`; a record type's slots start at
// `base[record]`. Resetting a scope at a `section` record is a `clone_from` of the initial
// vector, which reuses the allocation.

use crate::dtd::{Builtin, Interp, RecordId, Schema, SlotId, SlotKind};

/// The live state of one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotState {
    /// Current width in bytes (0..=8).
    pub width: u8,
    /// The most recent non-zero width (0 if none).
    pub lastwidth: u8,
    /// Current interpretation.
    pub interp: Interp,
    /// Previous value, for `delta` and `stride`.
    pub prev: u64,
    /// Element cursor, for `sectionStride`.
    pub cursor: i64,
}

impl SlotState {
    /// The state a scope starts from for a slot declared with `width` and `interp`.
    pub fn initial(width: u8, interp: Interp) -> SlotState {
        let (lastwidth, width) = (width, if interp.is_zero_width() { 0 } else { width });
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
        }
    }
}

/// What a metadata record changes (docs/format.md §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaProperty {
    /// Property code 0: a new width.
    Width(u8),
    /// Property codes 1..=7: a new interpretation.
    Interp(Interp),
}

impl MetaProperty {
    /// The `property` byte of the metadata record.
    pub fn code(self) -> u8 {
        match self {
            MetaProperty::Width(_) => 0,
            MetaProperty::Interp(i) => match i {
                Interp::None => 1,
                Interp::BaseOffset(_) => 2,
                Interp::Delta(_) => 3,
                Interp::Default(_) => 4,
                Interp::SectionOffset(_) => 5,
                Interp::Stride { .. } => 6,
                Interp::SectionStride { .. } => 7,
            },
        }
    }

    /// How many value words follow a property code, or `None` for an unknown code.
    pub fn words_for_code(code: u8) -> Option<usize> {
        match code {
            1 => Some(0),
            0 | 2..=5 => Some(1),
            6 | 7 => Some(2),
            _ => None,
        }
    }

    /// The value words to store (zero-extended; strides as two's complement).
    pub fn words(self) -> ([u64; 2], usize) {
        match self {
            MetaProperty::Width(w) => ([w as u64, 0], 1),
            MetaProperty::Interp(i) => match i {
                Interp::None => ([0, 0], 0),
                Interp::BaseOffset(v) | Interp::Delta(v) | Interp::Default(v) => ([v, 0], 1),
                Interp::SectionOffset(s) => ([s as u64, 0], 1),
                Interp::Stride { initial, stride } => ([initial, stride as u64], 2),
                Interp::SectionStride { section, stride } => ([section as u64, stride as u64], 2),
            },
        }
    }

    /// Build from a property code and its words. `word_bits` is 32 or 64: the stride word is
    /// sign-extended from it. Returns a message on a bad code or section id.
    pub fn from_code(code: u8, words: [u64; 2], word_bits: u32) -> Result<MetaProperty, String> {
        let signed = |w: u64| -> i64 {
            if word_bits >= 64 {
                w as i64
            } else {
                let shift = 64 - word_bits;
                ((w << shift) as i64) >> shift
            }
        };
        let section = |w: u64| -> Result<u8, String> {
            if (1..=255).contains(&w) {
                Ok(w as u8)
            } else {
                Err(format!("section id {w} is outside 1..255"))
            }
        };
        Ok(match code {
            0 => {
                if words[0] > 8 {
                    return Err(format!("width {} exceeds 8 bytes", words[0]));
                }
                MetaProperty::Width(words[0] as u8)
            }
            1 => MetaProperty::Interp(Interp::None),
            2 => MetaProperty::Interp(Interp::BaseOffset(words[0])),
            3 => MetaProperty::Interp(Interp::Delta(words[0])),
            4 => MetaProperty::Interp(Interp::Default(words[0])),
            5 => MetaProperty::Interp(Interp::SectionOffset(section(words[0])?)),
            6 => MetaProperty::Interp(Interp::Stride {
                initial: words[0],
                stride: signed(words[1]),
            }),
            7 => MetaProperty::Interp(Interp::SectionStride {
                section: section(words[0])?,
                stride: signed(words[1]),
            }),
            c => {
                return Err(format!(
                    "unknown metadata property code {c} (0..7 are defined)"
                ))
            }
        })
    }

    /// The symbolic name used in dumps: `width` or the interpretation keyword.
    pub fn name(self) -> &'static str {
        match self {
            MetaProperty::Width(_) => "width",
            MetaProperty::Interp(i) => i.keyword(),
        }
    }
}

/// A refused metadata change, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaRefused(pub String);

/// The live state of one scope.
#[derive(Debug, Clone)]
pub struct ScopeState {
    /// Section id of the scope (0 = global).
    pub section: u8,
    base: Vec<u32>,
    initial: Vec<SlotState>,
    /// Current state, indexed by `base[record] + slot`.
    pub slots: Vec<SlotState>,
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
                initial.push(SlotState::initial(width, slot.interp));
            }
        }
        ScopeState {
            section,
            base,
            slots: initial.clone(),
            initial,
        }
    }

    /// Back to the DTD defaults (a `section` record).
    pub fn reset(&mut self) {
        self.slots.clone_from(&self.initial);
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
        let base = self.base(record).ok_or_else(|| {
            MetaRefused(format!(
                "record `{}` is not defined in this section",
                rt.name
            ))
        })?;
        if matches!(rt.builtin, Some(Builtin::Section | Builtin::Metadata)) {
            return Err(MetaRefused(format!(
                "the fields of the built-in `{}` record cannot be changed",
                rt.name
            )));
        }
        let Some(def) = rt.slots.get(slot as usize) else {
            return Err(MetaRefused(format!(
                "record `{}` has no field {slot} (it has {} fields, 0..{})",
                rt.name,
                rt.slots.len(),
                rt.slots.len() - 1
            )));
        };
        if slot == 0 {
            return Err(MetaRefused(
                "the tag field cannot be changed by metadata".to_string(),
            ));
        }
        if matches!(def.kind, SlotKind::Bytes { .. }) {
            return Err(MetaRefused(format!(
                "field `{}.{}` is a byte string; its width comes from the DTD",
                rt.name, def.name
            )));
        }
        if let MetaProperty::Interp(
            Interp::SectionOffset(s) | Interp::SectionStride { section: s, .. },
        ) = prop
        {
            if schema.scope_for(s).is_none() {
                return Err(MetaRefused(format!(
                    "section {s} is not declared in the DTD"
                )));
            }
        }
        let st = &mut self.slots[base + slot as usize];
        match prop {
            MetaProperty::Width(w) => {
                if w > 8 {
                    return Err(MetaRefused(format!("width {w} exceeds 8 bytes")));
                }
                if w != 0 && st.interp.is_zero_width() {
                    return Err(MetaRefused(format!(
                        "width {w} on field `{}.{}` whose interpretation `{}` has width 0",
                        rt.name,
                        def.name,
                        st.interp.keyword()
                    )));
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

/// Sign-extend the low `width` bytes of `raw`.
#[inline]
pub fn sign_extend(raw: u64, width: u8) -> i64 {
    if width == 0 {
        0
    } else if width >= 8 {
        raw as i64
    } else {
        let shift = 64 - 8 * width as u32;
        ((raw << shift) as i64) >> shift
    }
}

/// Whether `v` fits in `width` bytes as an unsigned value.
#[inline]
pub fn fits_unsigned(v: u64, width: u8) -> bool {
    width >= 8 || v >> (8 * width as u32) == 0
}

/// Whether `v` fits in `width` bytes as a signed value.
#[inline]
pub fn fits_signed(v: i64, width: u8) -> bool {
    if width >= 8 {
        true
    } else if width == 0 {
        v == 0
    } else {
        let bits = 8 * width as u32;
        let min = -(1i64 << (bits - 1));
        let max = (1i64 << (bits - 1)) - 1;
        (min..=max).contains(&v)
    }
}

/// Keep the low `width` bytes.
#[inline]
pub fn truncate(v: u64, width: u8) -> u64 {
    if width >= 8 {
        v
    } else {
        v & ((1u64 << (8 * width as u32)) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_extension() {
        assert_eq!(sign_extend(0xff, 1), -1);
        assert_eq!(sign_extend(0x7f, 1), 127);
        assert_eq!(sign_extend(0x8000, 2), -32768);
        assert_eq!(sign_extend(0, 0), 0);
        assert_eq!(sign_extend(u64::MAX, 8), -1);
        assert_eq!(sign_extend(0xff_ffff, 3), -1);
    }

    #[test]
    fn fitting() {
        assert!(fits_unsigned(255, 1));
        assert!(!fits_unsigned(256, 1));
        assert!(fits_unsigned(0, 0));
        assert!(!fits_unsigned(1, 0));
        assert!(fits_signed(-128, 1));
        assert!(!fits_signed(128, 1));
        assert!(fits_signed(i64::MIN, 8));
        assert_eq!(truncate(0x1234, 1), 0x34);
    }

    #[test]
    fn property_codes_round_trip() {
        let props = [
            MetaProperty::Width(4),
            MetaProperty::Interp(Interp::None),
            MetaProperty::Interp(Interp::BaseOffset(0x1000)),
            MetaProperty::Interp(Interp::Delta(7)),
            MetaProperty::Interp(Interp::Default(9)),
            MetaProperty::Interp(Interp::SectionOffset(3)),
            MetaProperty::Interp(Interp::Stride {
                initial: 16,
                stride: -8,
            }),
            MetaProperty::Interp(Interp::SectionStride {
                section: 2,
                stride: 1,
            }),
        ];
        for (code, p) in props.into_iter().enumerate() {
            assert_eq!(p.code() as usize, code);
            let (w, n) = p.words();
            assert_eq!(MetaProperty::words_for_code(p.code()), Some(n));
            let w32 = [w[0] & 0xffff_ffff, w[1] & 0xffff_ffff];
            assert_eq!(MetaProperty::from_code(p.code(), w, 64).unwrap(), p);
            assert_eq!(MetaProperty::from_code(p.code(), w32, 32).unwrap(), p);
        }
        assert!(MetaProperty::from_code(8, [0, 0], 32).is_err());
        assert!(MetaProperty::from_code(0, [9, 0], 32).is_err());
        assert!(MetaProperty::from_code(5, [0, 0], 32).is_err());
        assert!(MetaProperty::from_code(5, [256, 0], 64).is_err());
    }
}
