//! The resolved form of a DTD: per-scope tables from tag value to record layout.
//!
//! A [`Schema`] is what every other part of metatf works from. The decoder and the writer compile
//! it further into flat per-record programs; `mtf dtd show` prints it. Nothing here refers back
//! to DTD text except the spans kept for diagnostics.

// Design: record types are stored once in `Schema::records` and referred to by index
// (`RecordId`). Scopes hold only indices, so a global record visible from every section is not
// copied. Slots are the flattened scalar fields of a record (docs/format.md §4.4); the `layout`
// tree records how they nest, which only display code needs.

use std::collections::HashMap;

use super::ids::{RecordId, SlotId, Span};

/// The resolved DTD.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The name the DTD was loaded under (file name, for messages).
    pub name: String,
    /// Width in bytes of every `tag` field (1..=8).
    pub tag_width: u8,
    /// Every taggable record type, of every scope, built-ins included.
    pub records: Vec<RecordType>,
    /// Scope 0 is the global scope; the others are the DTD's sections in declaration order.
    pub scopes: Vec<Scope>,
    /// Map from section id (1..=255) to index in `scopes`; entry 0 is always `Some(0)`.
    pub scope_of_section: Vec<Option<u16>>,
    /// The analysis declarations (extension `analysis/1`, docs/format.md §14); empty when the
    /// DTD declares none.
    pub analysis: super::analysis::Analysis,
}

/// One scope: the global region or one section.
#[derive(Debug, Clone)]
pub struct Scope {
    /// Section id; 0 for the global scope.
    pub id: u8,
    /// Section name; `""` for the global scope.
    pub name: String,
    /// Every taggable record type usable in this scope, in the order docs/format.md §15.3
    /// defines (a checkpoint's slot states follow it): the built-ins, the included fragments'
    /// records, the global ones as written, then the section's own as written.
    pub records: Vec<RecordId>,
    /// Tag value → record type, for the records of `records`.
    pub by_tag: HashMap<u64, RecordId>,
    /// Where the section was declared (empty for the global scope).
    pub span: Span,
}

/// Which built-in record a record type is, if any (docs/format.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `comment`, tag 1.
    Comment,
    /// `section`, tag 2.
    Section,
    /// `metadata`, tag 3.
    Metadata,
}

/// A taggable record type.
#[derive(Debug, Clone)]
pub struct RecordType {
    /// Record name, as written in the DTD.
    pub name: String,
    /// Tag value.
    pub tag: u64,
    /// Section id of the defining scope (0 = global).
    pub scope: u8,
    /// Set for the four prelude records.
    pub builtin: Option<Builtin>,
    /// Flattened scalar fields; slot 0 is `tag`.
    pub slots: Vec<Slot>,
    /// How the slots nest (nested records, repeats), in field order.
    pub layout: Vec<Node>,
    /// Where the record was defined (empty for the built-ins, which come from the prelude and
    /// not from the DTD text).
    pub span: Span,
}

/// One element of a record layout tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A scalar field.
    Field(SlotId),
    /// A nested record instance, displayed as `name.inner`.
    Group {
        /// Field name of the nested record (e.g. `vfield`).
        name: String,
        /// Its fields.
        children: Vec<Node>,
    },
    /// `count * item`: the count slot is decoded first (it also appears as a `Field` just before
    /// this node), then `item` repeats.
    Repeat {
        /// Display name of the repeated group.
        name: String,
        /// The count field.
        count: SlotId,
        /// One occurrence.
        item: Vec<Node>,
    },
}

/// A scalar field of a record type.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// Full display path within the record (`address_2`, `vfield.data`, `frames.pc`).
    pub name: String,
    /// The field's type name (the identifier that selected its defaults, e.g. `address`).
    pub type_name: String,
    /// Integer or byte string, with the declared width (see [`SlotKind::Int`] for fields that
    /// are zero-width by interpretation).
    pub kind: SlotKind,
    /// Declared interpretation (the state every scope starts from).
    pub interp: Interp,
    /// Fixed value the field must have (`value` property).
    pub fixed: Option<u64>,
    /// Display hint.
    pub display: Display,
    /// The live set this field's values go into (`liveset` property, extension `live/1`);
    /// 0 for none.
    pub liveset: u8,
    /// Whether this slot lies inside a repeated item.
    pub in_repeat: bool,
    /// Non-reserved, non-display properties, kept for documentation.
    pub extra: Vec<(String, String)>,
}

/// Storage kind of a slot.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotKind {
    /// An integer of the given declared width (0..=8 bytes).
    ///
    /// For a field whose declared interpretation is zero-width (`default`, `stride`,
    /// `sectionStride`), `width` is its declared **last non-zero width** (docs/format.md §4.3
    /// and §6.3): the field starts with width 0 and `lastwidth = width`, so a metadata record
    /// switching it to `none` restores `width` bytes. It is 0 when no width was declared. Use
    /// [`Slot::initial_width`] for the bytes the field takes when a scope starts.
    Int {
        /// Declared width in bytes (the last non-zero width for a zero-width interpretation).
        width: u8,
    },
    /// A byte string whose length is computed per record.
    Bytes {
        /// Length in bytes.
        width: Expr,
    },
}

/// A width expression over earlier fields of the same record (docs/format.md §3.4).
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Const(u64),
    /// The interpreted value of an earlier slot (its most recent occurrence).
    Value(SlotId),
    /// Sum.
    Add(Box<Expr>, Box<Expr>),
    /// Difference (an error if negative).
    Sub(Box<Expr>, Box<Expr>),
    /// Product.
    Mul(Box<Expr>, Box<Expr>),
}

/// A field interpretation with its arguments (docs/format.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interp {
    /// The stored value itself.
    None,
    /// Always this value; width 0.
    Default(u64),
    /// Base plus the signed stored value.
    BaseOffset(u64),
    /// Previous value plus the signed stored value; the initial previous value.
    Delta(u64),
    /// Previous value plus a fixed stride; width 0.
    Stride {
        /// Initial previous value.
        initial: u64,
        /// Signed stride.
        stride: i64,
    },
    /// A byte offset into the content of a section.
    SectionOffset(u8),
    /// Successive elements of a section; width 0.
    SectionStride {
        /// Section id.
        section: u8,
        /// Signed step of the element cursor.
        stride: i64,
    },
    /// Extension `live/1` (docs/format.md §13): the stored value is the position, counted
    /// from the newest, of the value in live set N (1..=16), which is taken out of the set.
    Live(u8),
}

/// The kind of one interpretation argument (docs/format.md §3.2 and §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterpArg {
    /// A 64-bit value (`default v`, `baseOffset b`, `delta v`, the `v` of `stride v s`); a DTD
    /// may write it with a leading `-` (two's complement).
    Value,
    /// A signed step (the `s` of `stride` and `sectionStride`), stored as two's complement.
    Stride,
    /// A section: its id (1..=255), or in a DTD also its name.
    Section,
    /// A live set number, 1..=16 (extension `live/1`, docs/format.md §13).
    Set,
}

/// One interpretation keyword: its arguments and properties. See [`INTERPRETATIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterpSpec {
    /// The keyword used in DTDs, dumps and text traces (`sectionStride`).
    pub keyword: &'static str,
    /// Its arguments, in order.
    pub args: &'static [InterpArg],
    /// Whether the interpretation forces width 0 (no stored bytes).
    pub zero_width: bool,
    /// The metadata `property` code that selects it (docs/format.md §5.4).
    pub meta_code: u8,
}

/// Every interpretation keyword, in the order of [`Interp`]'s variants: the one table the DTD
/// parser, the resolver and messages use (docs/format.md §3.2, §5.4, §7).
pub const INTERPRETATIONS: [InterpSpec; 8] = {
    use InterpArg::*;
    [
        InterpSpec {
            keyword: "none",
            args: &[],
            zero_width: false,
            meta_code: 1,
        },
        InterpSpec {
            keyword: "default",
            args: &[Value],
            zero_width: true,
            meta_code: 4,
        },
        InterpSpec {
            keyword: "baseOffset",
            args: &[Value],
            zero_width: false,
            meta_code: 2,
        },
        InterpSpec {
            keyword: "delta",
            args: &[Value],
            zero_width: false,
            meta_code: 3,
        },
        InterpSpec {
            keyword: "stride",
            args: &[Value, Stride],
            zero_width: true,
            meta_code: 6,
        },
        InterpSpec {
            keyword: "sectionOffset",
            args: &[Section],
            zero_width: false,
            meta_code: 5,
        },
        InterpSpec {
            keyword: "sectionStride",
            args: &[Section, Stride],
            zero_width: true,
            meta_code: 7,
        },
        InterpSpec {
            keyword: "live",
            args: &[Set],
            zero_width: false,
            meta_code: 8,
        },
    ]
};

impl InterpSpec {
    /// The entry for a keyword (case-sensitive), if it is one.
    pub fn by_keyword(keyword: &str) -> Option<&'static InterpSpec> {
        INTERPRETATIONS.iter().find(|s| s.keyword == keyword)
    }

    /// The entry for a metadata property code (1..=7), if it is one.
    pub fn by_meta_code(code: u8) -> Option<&'static InterpSpec> {
        INTERPRETATIONS.iter().find(|s| s.meta_code == code)
    }

    /// The keyword with placeholders for its arguments (`stride V S`), for help texts.
    pub fn synopsis(&self) -> String {
        let mut s = self.keyword.to_string();
        for a in self.args {
            s.push_str(match a {
                InterpArg::Value => " V",
                InterpArg::Stride => " S",
                InterpArg::Section | InterpArg::Set => " N",
            });
        }
        s
    }

    /// Every synopsis, comma-separated (`none, default V, …`), for help texts.
    pub fn all_synopses() -> String {
        let v: Vec<String> = INTERPRETATIONS.iter().map(InterpSpec::synopsis).collect();
        v.join(", ")
    }
}

impl Interp {
    /// This interpretation's entry in [`INTERPRETATIONS`].
    pub fn spec(self) -> &'static InterpSpec {
        let i = match self {
            Interp::None => 0,
            Interp::Default(_) => 1,
            Interp::BaseOffset(_) => 2,
            Interp::Delta(_) => 3,
            Interp::Stride { .. } => 4,
            Interp::SectionOffset(_) => 5,
            Interp::SectionStride { .. } => 6,
            Interp::Live(_) => 7,
        };
        &INTERPRETATIONS[i]
    }

    /// Whether this interpretation forces width 0.
    pub fn is_zero_width(self) -> bool {
        self.spec().zero_width
    }

    /// The keyword used in DTDs and dumps.
    pub fn keyword(self) -> &'static str {
        self.spec().keyword
    }

    /// The arguments as 64-bit words, in the order of [`InterpSpec::args`] (strides as two's
    /// complement, sections as their id); the length is `self.spec().args.len()`.
    pub fn args(self) -> Vec<u64> {
        match self {
            Interp::None => vec![],
            Interp::Default(v) | Interp::BaseOffset(v) | Interp::Delta(v) => vec![v],
            Interp::Stride { initial, stride } => vec![initial, stride as u64],
            Interp::SectionOffset(n) => vec![u64::from(n)],
            Interp::SectionStride { section, stride } => vec![u64::from(section), stride as u64],
            Interp::Live(n) => vec![u64::from(n)],
        }
    }

    /// Build an interpretation from its keyword and arguments (as [`Interp::args`] gives them).
    /// `None` if the keyword is unknown, the number of arguments is wrong, or a section id is
    /// not 1..=255.
    pub fn from_parts(keyword: &str, args: &[u64]) -> Option<Interp> {
        let spec = InterpSpec::by_keyword(keyword)?;
        if args.len() != spec.args.len() {
            return None;
        }
        let section = |v: u64| u8::try_from(v).ok().filter(|&n| n != 0);
        Some(match (spec.keyword, args) {
            ("none", []) => Interp::None,
            ("default", &[v]) => Interp::Default(v),
            ("baseOffset", &[v]) => Interp::BaseOffset(v),
            ("delta", &[v]) => Interp::Delta(v),
            ("stride", &[initial, s]) => Interp::Stride {
                initial,
                stride: s as i64,
            },
            ("sectionOffset", &[n]) => Interp::SectionOffset(section(n)?),
            ("sectionStride", &[n, s]) => Interp::SectionStride {
                section: section(n)?,
                stride: s as i64,
            },
            ("live", &[n]) => Interp::Live(
                u8::try_from(n)
                    .ok()
                    .filter(|n| (1..=crate::limits::MAX_LIVE_SETS).contains(n))?,
            ),
            _ => unreachable!("INTERPRETATIONS and from_parts list the same keywords"),
        })
    }
}

impl std::fmt::Display for Interp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.keyword())?;
        for (kind, v) in self.spec().args.iter().zip(self.args()) {
            match kind {
                InterpArg::Stride => write!(f, " {}", v as i64)?,
                _ => write!(f, " {v}")?,
            }
        }
        Ok(())
    }
}

/// How `mtf dump` shows a value (the `display` property).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Display {
    /// Unsigned decimal (integers) or hex digits (byte strings).
    #[default]
    Decimal,
    /// `0x…`.
    Hex,
    /// Signed decimal; also sign-extends `none` stored values.
    Signed,
    /// Quoted UTF-8 text (byte strings).
    Text,
    /// Hex digits (byte strings).
    Bytes,
}

impl Schema {
    /// Whether the DTD uses extension `live/1` (docs/format.md §13): a `live` interpretation
    /// or a `liveset` property on some field.
    pub fn uses_live(&self) -> bool {
        self.records.iter().any(|r| {
            r.slots
                .iter()
                .any(|s| s.liveset != 0 || matches!(s.interp, Interp::Live(_)))
        })
    }

    /// The scope for a section id (0 = global), if the DTD declares it.
    pub fn scope_for(&self, section: u8) -> Option<&Scope> {
        self.scope_of_section
            .get(section as usize)
            .copied()
            .flatten()
            .map(|i| &self.scopes[i as usize])
    }

    /// A record type by id.
    pub fn record(&self, id: RecordId) -> &RecordType {
        &self.records[id as usize]
    }

    /// Find a record type by name as seen from a scope (section id, 0 = global).
    pub fn record_by_name(&self, section: u8, name: &str) -> Option<RecordId> {
        let scope = self.scope_for(section)?;
        scope
            .records
            .iter()
            .copied()
            .find(|&r| self.records[r as usize].name == name)
    }

    /// The built-in record of a kind (always present in a resolved schema).
    pub fn builtin(&self, which: Builtin) -> RecordId {
        self.records
            .iter()
            .position(|r| r.builtin == Some(which))
            .expect("the prelude defines every built-in") as RecordId
    }
}

impl Slot {
    /// The width of an integer slot when a scope starts: 0 for a zero-width interpretation,
    /// else the declared width; 0 for a byte string (whose width is computed per record).
    pub fn initial_width(&self) -> u8 {
        match self.kind {
            SlotKind::Int { width } if !self.interp.is_zero_width() => width,
            _ => 0,
        }
    }
}

impl RecordType {
    /// Slot index by display name.
    pub fn slot_by_name(&self, name: &str) -> Option<SlotId> {
        self.slot_where(|s| s.name == name)
    }

    /// The first slot for which `f` holds.
    pub fn slot_where(&self, f: impl Fn(&Slot) -> bool) -> Option<SlotId> {
        self.slots.iter().position(f).map(|i| i as SlotId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpretation_table_round_trips() {
        let all = [
            Interp::None,
            Interp::Default(7),
            Interp::BaseOffset(1 << 40),
            Interp::Delta(3),
            Interp::Stride {
                initial: 1,
                stride: -4,
            },
            Interp::SectionOffset(9),
            Interp::SectionStride {
                section: 255,
                stride: -1,
            },
            Interp::Live(16),
        ];
        for (i, interp) in all.into_iter().enumerate() {
            assert_eq!(interp.spec(), &INTERPRETATIONS[i]);
            assert_eq!(interp.args().len(), interp.spec().args.len());
            assert_eq!(
                Interp::from_parts(interp.keyword(), &interp.args()),
                Some(interp)
            );
            assert_eq!(
                InterpSpec::by_meta_code(interp.spec().meta_code),
                Some(interp.spec())
            );
        }
        assert_eq!(all[4].to_string(), "stride 1 -4");
        assert_eq!(all[6].to_string(), "sectionStride 255 -1");
        assert_eq!(Interp::from_parts("default", &[]), None);
        assert_eq!(Interp::from_parts("sectionOffset", &[0]), None);
        assert_eq!(Interp::from_parts("sectionOffset", &[256]), None);
        assert_eq!(Interp::from_parts("Default", &[1]), None);
        assert_eq!(
            InterpSpec::all_synopses(),
            "none, default V, baseOffset V, delta V, stride V S, sectionOffset N, sectionStride N S, live N"
        );
        assert_eq!(Interp::from_parts("live", &[0]), None);
        assert_eq!(Interp::from_parts("live", &[17]), None);
    }
}
