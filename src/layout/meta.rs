//! What a metadata record changes (docs/format.md §5.4): the property code table, its value
//! words, and why a change may be refused.

use crate::dtd::Interp;

/// A width or interpretation that a metadata record sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaProperty {
    /// Property code 0: a new width.
    Width(u8),
    /// Property codes 1..=8: a new interpretation (8, `live`, only with extension `live/1`).
    Interp(Interp),
    /// Property code 9 (extension `live/1`, docs/format.md §13): the live set the field's
    /// values go into, 0 for none.
    LiveSet(u8),
}

// Design: the table of docs/format.md §5.4 in one place. Row order is the code; the number of
// value words follows from the interpretation's arguments (a section id or a value is one word,
// `stride` and `sectionStride` take two, the second signed).

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
                Interp::Live(_) => 8,
            },
            MetaProperty::LiveSet(_) => 9,
        }
    }

    /// How many value words follow a property code, or `None` for an unknown code. Codes 8
    /// and 9 exist only in a trace that declares extension `live/1` (`live`).
    pub fn words_for_code(code: u8, live: bool) -> Option<usize> {
        match code {
            1 => Some(0),
            0 | 2..=5 => Some(1),
            6 | 7 => Some(2),
            8 | 9 if live => Some(1),
            _ => None,
        }
    }

    /// Whether this change needs extension `live/1`.
    pub fn needs_live(self) -> bool {
        matches!(
            self,
            MetaProperty::LiveSet(_) | MetaProperty::Interp(Interp::Live(_))
        )
    }

    /// The value words to store (zero-extended; strides as two's complement) and their number.
    pub fn words(self) -> ([u64; 2], usize) {
        match self {
            MetaProperty::Width(w) => ([w as u64, 0], 1),
            MetaProperty::Interp(i) => match i {
                Interp::None => ([0, 0], 0),
                Interp::BaseOffset(v) | Interp::Delta(v) | Interp::Default(v) => ([v, 0], 1),
                Interp::SectionOffset(s) => ([s as u64, 0], 1),
                Interp::Stride { initial, stride } => ([initial, stride as u64], 2),
                Interp::SectionStride { section, stride } => ([section as u64, stride as u64], 2),
                Interp::Live(n) => ([n as u64, 0], 1),
            },
            MetaProperty::LiveSet(n) => ([n as u64, 0], 1),
        }
    }

    /// Whether value word `i` is signed (the stride of codes 6 and 7).
    pub fn word_is_signed(self, i: usize) -> bool {
        i == 1 && matches!(self, MetaProperty::Interp(_))
    }

    /// Whether value word 0 names a section (codes 5 and 7).
    pub fn names_section(self) -> bool {
        matches!(
            self,
            MetaProperty::Interp(Interp::SectionOffset(_) | Interp::SectionStride { .. })
        )
    }

    /// Build from a property code and its words, as stored in a trace whose words are
    /// `word_bits` (32 or 64) wide: the stride word is sign-extended from that width.
    pub fn from_code(
        code: u8,
        words: [u64; 2],
        word_bits: u32,
    ) -> Result<MetaProperty, MetaRefused> {
        let signed = |w: u64| -> i64 {
            if word_bits >= 64 {
                w as i64
            } else {
                let shift = 64 - word_bits;
                ((w << shift) as i64) >> shift
            }
        };
        let live_set = |w: u64, least: u64| -> Result<u8, MetaRefused> {
            if (least..=crate::layout::MAX_LIVE_SETS as u64).contains(&w) {
                Ok(w as u8)
            } else {
                Err(MetaRefused::LiveSetRange { set: w, least })
            }
        };
        let section = |w: u64| -> Result<u8, MetaRefused> {
            if (1..=255).contains(&w) {
                Ok(w as u8)
            } else {
                Err(MetaRefused::SectionIdRange { id: w })
            }
        };
        Ok(match code {
            0 => {
                if words[0] > 8 {
                    return Err(MetaRefused::WidthTooLarge { width: words[0] });
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
            8 => MetaProperty::Interp(Interp::Live(live_set(words[0], 1)?)),
            9 => MetaProperty::LiveSet(live_set(words[0], 0)?),
            c => return Err(MetaRefused::UnknownCode { code: c }),
        })
    }

    /// The symbolic name used in dumps: `width` or the interpretation keyword.
    pub fn name(self) -> &'static str {
        match self {
            MetaProperty::Width(_) => "width",
            MetaProperty::Interp(i) => i.keyword(),
            MetaProperty::LiveSet(_) => "liveset",
        }
    }
}

/// Why a metadata change is refused (docs/format.md §5.4). The reader reports it and leaves the
/// state unchanged; the writer refuses to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaRefused {
    /// No record type with that tag in the current scope.
    #[error("no record type with tag {tag} in this section")]
    UnknownTag {
        /// The `record` field's value.
        tag: u64,
    },
    /// The record type is not visible in the current scope.
    #[error("record `{record}` is not defined in this section")]
    NotInScope {
        /// Record type name.
        record: String,
    },
    /// `section` and `metadata` cannot be changed.
    #[error("the fields of the built-in `{record}` record cannot be changed")]
    Builtin {
        /// Record type name.
        record: String,
    },
    /// The slot number names no field.
    #[error("record `{record}` has no field {slot} (it has {count} fields, 0..{})", count - 1)]
    NoSuchField {
        /// Record type name.
        record: String,
        /// The `field` byte.
        slot: u64,
        /// How many slots the record type has.
        count: usize,
    },
    /// Slot 0.
    #[error("the tag field cannot be changed by metadata")]
    Tag,
    /// A byte-string field.
    #[error("field `{record}.{field}` is a byte string; its width comes from the DTD")]
    ByteString {
        /// Record type name.
        record: String,
        /// Field name.
        field: String,
    },
    /// A section id outside 1..255.
    #[error("section id {id} is outside 1..255")]
    SectionIdRange {
        /// The stored id.
        id: u64,
    },
    /// A live set number outside `least..=16`.
    #[error("live set {set} is outside {least}..16")]
    LiveSetRange {
        /// The stored number.
        set: u64,
        /// 1 for `live`, 0 for `liveset` (0 = no set).
        least: u64,
    },
    /// A live set change in a trace that does not declare extension `live/1`.
    #[error("`{what}` needs extension live/1, which this trace's header does not declare")]
    NeedsLive {
        /// `live` or `liveset`.
        what: &'static str,
    },
    /// A section the DTD does not declare.
    #[error("section {section} is not declared in the DTD")]
    UndeclaredSection {
        /// The id.
        section: u8,
    },
    /// A width over 8 bytes.
    #[error("width {width} exceeds 8 bytes")]
    WidthTooLarge {
        /// The width.
        width: u64,
    },
    /// A non-zero width while the interpretation forces width 0.
    #[error(
        "width {width} on field `{record}.{field}` whose interpretation `{interp}` has width 0"
    )]
    WidthOnZeroWidth {
        /// The width.
        width: u8,
        /// Record type name.
        record: String,
        /// Field name.
        field: String,
        /// The current interpretation's keyword.
        interp: &'static str,
    },
    /// A property code outside 0..7 (0..9 with extension `live/1`): the record's length is
    /// unknown.
    #[error("unknown property code {code} (0..7 are defined, 8 and 9 with extension live/1); the record's length is unknown")]
    UnknownCode {
        /// The code.
        code: u8,
    },
    /// A value word that the trace's class cannot hold (writer side).
    #[error("value {value} does not fit the {bytes}-byte metadata word of this trace class")]
    WordTooWide {
        /// The value, as given.
        value: String,
        /// Word size in bytes.
        bytes: u8,
    },
    /// A slot number that the one-byte `field` cannot hold (writer side).
    #[error("field {slot} of `{record}` cannot be named in one byte")]
    SlotTooLarge {
        /// Record type name.
        record: String,
        /// The slot.
        slot: u16,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

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
            MetaProperty::Interp(Interp::Live(3)),
            MetaProperty::LiveSet(16),
        ];
        for (code, p) in props.into_iter().enumerate() {
            assert_eq!(p.code() as usize, code);
            let (w, n) = p.words();
            assert_eq!(MetaProperty::words_for_code(p.code(), true), Some(n));
            assert_eq!(
                MetaProperty::words_for_code(p.code(), false).is_some(),
                code < 8
            );
            let w32 = [w[0] & 0xffff_ffff, w[1] & 0xffff_ffff];
            assert_eq!(MetaProperty::from_code(p.code(), w, 64).unwrap(), p);
            assert_eq!(MetaProperty::from_code(p.code(), w32, 32).unwrap(), p);
        }
        assert!(MetaProperty::from_code(8, [0, 0], 32).is_err());
        assert!(MetaProperty::from_code(8, [17, 0], 32).is_err());
        assert!(MetaProperty::from_code(9, [17, 0], 32).is_err());
        assert!(MetaProperty::from_code(10, [0, 0], 32).is_err());
        assert!(MetaProperty::from_code(0, [9, 0], 32).is_err());
        assert!(MetaProperty::from_code(5, [0, 0], 32).is_err());
        assert!(MetaProperty::from_code(5, [256, 0], 64).is_err());
    }
}
