//! Each interpretation's arithmetic in one place (docs/format.md §7): what a stored integer means
//! ([`decode`]), what must be stored for a value ([`encode`]), with which values fit a width
//! taken from `container/int.rs`, the only copy of the width arithmetic. The decoder (its general path and its
//! fast path) and the encoder both call these, so the two directions cannot drift apart; the
//! table-driven test below round-trips every interpretation through both.
//!
//! The state an interpretation keeps (previous value, cursor) lives in [`SlotState`]; which
//! widths an interpretation allows is `Interp::is_zero_width` (the keyword table of
//! `dtd/schema.rs`), applied by `ScopeState::apply`.

// Design: plain functions over one slot's state, not a trait per interpretation: `Interp` is a
// closed enum the DTD parser and the metadata codes already enumerate, and one `match` here keeps
// the decoder's inner loop a jump table. Live sets (extension live/1) need the scope's sets, so
// this module only says that the value comes from a set; the caller looks it up.

use crate::container::{fits_signed, fits_unsigned, sign_extend, truncate};
use crate::dtd::Interp;

use super::state::SlotState;

/// What a stored integer stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// An integer value.
    Int(u64),
    /// A byte offset into section `section` (`sectionOffset`).
    Offset { section: u8, offset: u64 },
    /// Element `index` of section `section` (`sectionStride`).
    Index { section: u8, index: i64 },
    /// A position in live set `set` (extension live/1): the caller takes it from the set.
    Live(u8),
}

impl Decoded {
    /// The number a later width expression or repeat count sees for this field.
    #[inline]
    pub(crate) fn number(self, raw: u64) -> u64 {
        match self {
            Decoded::Int(v) => v,
            Decoded::Offset { offset, .. } => offset,
            Decoded::Index { index, .. } => index as u64,
            Decoded::Live(_) => raw,
        }
    }
}

/// The meaning of `raw`, read with the slot's current width, under the slot's current
/// interpretation; advances the slot's previous value or cursor. `signed`: the field is displayed
/// signed, so a plain stored value is sign-extended.
#[inline(always)]
pub(crate) fn decode(st: &mut SlotState, raw: u64, signed: bool) -> Decoded {
    match st.interp {
        Interp::None if signed => Decoded::Int(sign_extend(raw, st.width) as u64),
        Interp::None => Decoded::Int(raw),
        Interp::Default(v) => Decoded::Int(v),
        Interp::BaseOffset(b) => Decoded::Int(b.wrapping_add(sign_extend(raw, st.width) as u64)),
        Interp::Delta(_) => {
            st.prev = st.prev.wrapping_add(sign_extend(raw, st.width) as u64);
            Decoded::Int(st.prev)
        }
        Interp::Stride { stride, .. } => {
            st.prev = st.prev.wrapping_add(stride as u64);
            Decoded::Int(st.prev)
        }
        Interp::SectionOffset(section) => Decoded::Offset {
            section,
            offset: raw,
        },
        Interp::SectionStride { section, stride } => {
            let index = st.cursor;
            st.cursor = st.cursor.wrapping_add(stride);
            Decoded::Index { section, index }
        }
        Interp::Live(set) => Decoded::Live(set),
    }
}

/// Why a value cannot be stored under an interpretation (the encoder words each as its error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `none`: the value does not fit the width.
    DoesNotFit,
    /// `default`: only the default can be written.
    NotDefault { default: u64 },
    /// `baseOffset` or `delta`: the difference from `reference` does not fit the width.
    DiffDoesNotFit {
        diff: i64,
        reference: u64,
        from: &'static str,
    },
    /// `stride`: only the next value of the stride can be written.
    NotStride { expected: u64 },
    /// A table or live-set interpretation: the caller encodes it (it needs the sections or sets).
    NotAnInteger,
}

/// What to store for the integer `v` under the slot's current interpretation and width (the
/// inverse of [`decode`]), advancing the slot's previous value as decoding it will. `None` for
/// `v` stands for a value the input left out: allowed where the interpretation stores nothing.
/// Returns the stored bits and the value they decode to.
#[inline]
pub(crate) fn encode(
    st: &mut SlotState,
    v: Option<u64>,
    signed: bool,
) -> Result<(u64, u64), Refused> {
    let w = st.width;
    match (st.interp, v) {
        (Interp::None, Some(v)) => {
            let ok = if signed {
                fits_signed(v as i64, w)
            } else {
                fits_unsigned(v, w)
            };
            if ok {
                Ok((truncate(v, w), v))
            } else {
                Err(Refused::DoesNotFit)
            }
        }
        (Interp::Default(d), None) => Ok((0, d)),
        (Interp::Default(d), Some(v)) if v == d => Ok((0, d)),
        (Interp::Default(default), Some(_)) => Err(Refused::NotDefault { default }),
        (Interp::BaseOffset(b), Some(v)) => Ok((signed_diff(v, b, w, "base")?, v)),
        (Interp::Delta(_), Some(v)) => {
            let raw = signed_diff(v, st.prev, w, "the previous value")?;
            st.prev = v;
            Ok((raw, v))
        }
        (Interp::Stride { stride, .. }, v) => {
            let expected = st.prev.wrapping_add(stride as u64);
            if v.is_some_and(|v| v != expected) {
                return Err(Refused::NotStride { expected });
            }
            st.prev = expected;
            Ok((0, expected))
        }
        _ => Err(Refused::NotAnInteger),
    }
}

/// The low `width` bytes of `value`'s difference from `reference`, if it fits signed.
fn signed_diff(value: u64, reference: u64, width: u8, from: &'static str) -> Result<u64, Refused> {
    let diff = value.wrapping_sub(reference) as i64;
    if fits_signed(diff, width) {
        Ok(truncate(diff as u64, width))
    } else {
        Err(Refused::DiffDoesNotFit {
            diff,
            reference,
            from,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(interp: Interp, width: u8) -> SlotState {
        let mut st = SlotState::initial(width, interp, 0);
        st.width = if interp.is_zero_width() { 0 } else { width };
        st
    }

    /// One row: interpretation, width, signed display, values written in order, and the refusal
    /// expected for the last value (`None` when all are accepted).
    type Row = (Interp, u8, bool, &'static [u64], Option<Refused>);

    /// Every integer interpretation, at widths that fit and that do not: what `encode` stores
    /// decodes back to the value, with the state advanced the same way on both sides; what it
    /// refuses is refused for the reason in the table.
    #[test]
    fn every_interpretation_round_trips_or_is_refused() {
        use Interp::*;
        let table: &[Row] = &[
            (None, 1, false, &[0, 255], Option::None),
            (None, 1, false, &[256], Some(Refused::DoesNotFit)),
            (None, 2, true, &[(-32768i64) as u64, 32767], Option::None),
            (None, 2, true, &[32768], Some(Refused::DoesNotFit)),
            (None, 8, false, &[u64::MAX], Option::None),
            (None, 0, false, &[0], Option::None),
            (None, 0, false, &[1], Some(Refused::DoesNotFit)),
            (Default(7), 0, false, &[7, 7], Option::None),
            (
                Default(7),
                0,
                false,
                &[8],
                Some(Refused::NotDefault { default: 7 }),
            ),
            (BaseOffset(1000), 1, false, &[1000, 1127, 872], Option::None),
            (
                BaseOffset(1000),
                1,
                false,
                &[1128],
                Some(Refused::DiffDoesNotFit {
                    diff: 128,
                    reference: 1000,
                    from: "base",
                }),
            ),
            (
                BaseOffset(u64::MAX),
                1,
                false,
                &[0, u64::MAX - 128],
                Option::None,
            ),
            (
                Delta(10),
                1,
                false,
                &[10, 137, 9, 0, u64::MAX],
                Option::None,
            ),
            (Delta(0), 2, true, &[(-5i64) as u64, 32762], Option::None),
            (
                Delta(0),
                1,
                false,
                &[100, 300],
                Some(Refused::DiffDoesNotFit {
                    diff: 200,
                    reference: 100,
                    from: "the previous value",
                }),
            ),
            (Delta(5), 8, false, &[u64::MAX, 3], Option::None),
            (
                Stride {
                    initial: 4,
                    stride: -2,
                },
                0,
                false,
                &[2, 0, u64::MAX - 1],
                Option::None,
            ),
            (
                Stride {
                    initial: 4,
                    stride: 3,
                },
                0,
                false,
                &[7, 9],
                Some(Refused::NotStride { expected: 10 }),
            ),
        ];
        for &(interp, width, signed, values, refusal) in table {
            let mut enc = slot(interp, width);
            let mut dec = slot(interp, width);
            for (i, &v) in values.iter().enumerate() {
                let last = i + 1 == values.len();
                match encode(&mut enc, Some(v), signed) {
                    Ok((raw, number)) => {
                        assert!(
                            !(last && refusal.is_some()),
                            "{interp:?} w{width}: {v} accepted, expected {refusal:?}"
                        );
                        assert_eq!(number, v, "{interp:?} w{width}");
                        assert_eq!(raw, truncate(raw, dec.width), "{interp:?}: raw fits");
                        let got = decode(&mut dec, raw, signed);
                        assert_eq!(got, Decoded::Int(v), "{interp:?} w{width}: {v} via {raw}");
                        assert_eq!(enc, dec, "{interp:?}: both sides keep the same state");
                    }
                    Err(e) => {
                        assert!(last, "{interp:?} w{width}: {v} refused early: {e:?}");
                        assert_eq!(Some(e), refusal, "{interp:?} w{width}: {v}");
                    }
                }
            }
        }
    }

    #[test]
    fn left_out_values_are_the_zero_width_ones() {
        let mut st = slot(Interp::Default(3), 0);
        assert_eq!(encode(&mut st, Option::None, false), Ok((0, 3)));
        let mut st = slot(
            Interp::Stride {
                initial: 1,
                stride: 1,
            },
            0,
        );
        assert_eq!(encode(&mut st, Option::None, false), Ok((0, 2)));
        assert_eq!(encode(&mut st, Option::None, false), Ok((0, 3)));
        let mut st = slot(Interp::None, 2);
        assert_eq!(
            encode(&mut st, Option::None, false),
            Err(Refused::NotAnInteger)
        );
    }

    #[test]
    fn table_interpretations_decode_to_references() {
        let mut st = slot(
            Interp::SectionStride {
                section: 2,
                stride: 3,
            },
            0,
        );
        assert_eq!(
            decode(&mut st, 0, false),
            Decoded::Index {
                section: 2,
                index: 0
            }
        );
        assert_eq!(
            decode(&mut st, 0, false),
            Decoded::Index {
                section: 2,
                index: 3
            }
        );
        let mut st = slot(Interp::SectionOffset(1), 4);
        assert_eq!(
            decode(&mut st, 77, false),
            Decoded::Offset {
                section: 1,
                offset: 77
            }
        );
        let mut st = slot(Interp::Live(2), 1);
        assert_eq!(decode(&mut st, 5, false), Decoded::Live(2));
        assert_eq!(Decoded::Live(2).number(5), 5);
    }
}
