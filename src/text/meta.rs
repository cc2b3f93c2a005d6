//! The metadata change a line names (`metadata alloc.size width 1`) → a [`MetaProperty`].

use crate::dtd::{Interp, Schema};
use crate::layout::MetaProperty;

use super::error::TextErrorKind;
use super::line::{Arg, SectionRef};

/// The section id a line names (by id or name), if the DTD declares it.
pub(crate) fn section_id(schema: &Schema, s: &SectionRef) -> Option<u8> {
    match s {
        SectionRef::Id(n) => u8::try_from(*n)
            .ok()
            .filter(|&n| n != 0 && schema.scope_for(n).is_some()),
        SectionRef::Name(w) => schema
            .scopes
            .iter()
            .find(|s| s.id != 0 && s.name == *w)
            .map(|s| s.id),
    }
}

/// The property a metadata line names, with its arguments checked.
pub(crate) fn meta_property(
    schema: &Schema,
    property: &str,
    args: &[Arg],
) -> Result<MetaProperty, TextErrorKind> {
    let bad = |index: usize, what: &'static str| TextErrorKind::Argument {
        property: property.to_string(),
        index: index + 1,
        what,
    };
    let int = |i: usize| -> Result<u64, TextErrorKind> {
        match args.get(i) {
            Some(Arg::Int(v)) => Ok(*v),
            _ => Err(bad(i, "an integer")),
        }
    };
    let sec = |i: usize| -> Result<u8, TextErrorKind> {
        let r = match args.get(i) {
            Some(Arg::Int(n)) => SectionRef::Id(*n),
            Some(Arg::Word(w)) => SectionRef::Name(w.clone()),
            _ => return Err(bad(i, "a declared section (id or name)")),
        };
        section_id(schema, &r).ok_or_else(|| bad(i, "a declared section (id or name)"))
    };
    let want = |n: usize| -> Result<(), TextErrorKind> {
        if args.len() != n {
            Err(TextErrorKind::ArgumentCount {
                property: property.to_string(),
                want: n,
                given: args.len(),
            })
        } else {
            Ok(())
        }
    };
    let interp = match property {
        "width" => {
            want(1)?;
            let w = int(0)?;
            if w > 8 {
                return Err(bad(0, "a width 0..8"));
            }
            return Ok(MetaProperty::Width(w as u8));
        }
        "none" => {
            want(0)?;
            Interp::None
        }
        "baseOffset" => {
            want(1)?;
            Interp::BaseOffset(int(0)?)
        }
        "delta" => {
            want(1)?;
            Interp::Delta(int(0)?)
        }
        "default" => {
            want(1)?;
            Interp::Default(int(0)?)
        }
        "sectionOffset" => {
            want(1)?;
            Interp::SectionOffset(sec(0)?)
        }
        "stride" => {
            want(2)?;
            Interp::Stride {
                initial: int(0)?,
                stride: int(1)? as i64,
            }
        }
        "sectionStride" => {
            want(2)?;
            Interp::SectionStride {
                section: sec(0)?,
                stride: int(1)? as i64,
            }
        }
        "live" => {
            want(1)?;
            let n = int(0)?;
            if !(1..=crate::limits::MAX_LIVE_SETS as u64).contains(&n) {
                return Err(bad(0, "a live set 1..16"));
            }
            Interp::Live(n as u8)
        }
        "liveset" => {
            want(1)?;
            let n = int(0)?;
            if n > crate::limits::MAX_LIVE_SETS as u64 {
                return Err(bad(0, "a live set 0..16"));
            }
            return Ok(MetaProperty::LiveSet(n as u8));
        }
        p => {
            return Err(TextErrorKind::UnknownProperty {
                property: p.to_string(),
            })
        }
    };
    Ok(MetaProperty::Interp(interp))
}
