//! Pass 5: tag values, checked per scope as seen from each section (global ∪ section), and
//! the reserved tags 1..3.

use super::*;

impl<'a> Resolver<'a> {
    pub(super) fn check_tags(&mut self) {
        let tags: HashMap<DefId, u64> = self.tags.iter().copied().collect();
        let tag_of = |d: &DefId| tags.get(d).map(|&t| (t, *d));
        let global: Vec<(u64, DefId)> = self.scopes[0].defs.iter().filter_map(tag_of).collect();
        let mut errs = Vec::new();
        for sc in 0..self.scopes.len() {
            let mut seen: Vec<(u64, DefId)> = if sc == 0 { Vec::new() } else { global.clone() };
            for (tag, d) in self.scopes[sc].defs.iter().filter_map(tag_of) {
                let def = &self.defs[d];
                let span = def
                    .tag_value
                    .as_ref()
                    .map_or(def.ast.name.span, |p| p.def.value.span());
                if !def.prelude && (1..=3).contains(&tag) {
                    errs.push(DtdError::ReservedName {
                        msg: format!(
                            "tag {tag} of record `{}` is reserved for a built-in record",
                            def.ast.name.name
                        ),
                        src: self.src(),
                        span: sspan(span),
                        include: None,
                        help: BUILTIN_HELP.into(),
                    });
                } else if let Some(&(_, other)) = seen.iter().find(|(t, _)| *t == tag) {
                    let o = &self.defs[other];
                    // A fragment's record is shown at the `include` that took it in (its own
                    // text is not the user's).
                    let (first, origin) = match self.fragment_of(other) {
                        Some((f, include)) => (
                            Some(sspan(include)),
                            format!(" of the built-in fragment `{f}`"),
                        ),
                        None => (
                            o.tag_value.as_ref().map(|p| sspan(p.def.value.span())),
                            String::new(),
                        ),
                    };
                    errs.push(DtdError::DuplicateTag {
                        tag,
                        record: def.ast.name.name.clone(),
                        other: o.ast.name.name.clone(),
                        origin,
                        src: self.src(),
                        span: sspan(span),
                        first,
                    });
                }
                seen.push((tag, d));
            }
        }
        self.errors.extend(errs);
    }
}
