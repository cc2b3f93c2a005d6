//! How a frame is written: heaptrack_print's text (function with C++ template arguments
//! shortened, else the address; the file's base name in parentheses), Java's `Owner.method`.

use super::Frame;

/// The text of a frame as heaptrack_print writes it in a folded stack (docs/stacks.md):
/// the function ([`pretty_function`]; `Owner.function` when the frame has an owner), else `0x`
/// and the address in lower-case hex, else `??`; then ` (BASENAME)` when the frame has a file.
/// An inlined frame always gets the parentheses: ` ()` when it has no file.
///
/// ```
/// use metatf::stacks::{frame_text, Frame};
/// let f = Frame {
///     function: Some("Box<long, 4>::Box()".into()),
///     file: Some("./templates.cpp".into()),
///     ..Frame::default()
/// };
/// assert_eq!(frame_text(&f), "Box<>::Box() (templates.cpp)");
/// let unresolved = Frame { address: Some(0x7F00FDCA57B9), ..Frame::default() };
/// assert_eq!(frame_text(&unresolved), "0x7f00fdca57b9");
/// ```
pub fn frame_text(frame: &Frame) -> String {
    let mut out = String::new();
    push_frame_text(&mut out, frame, Style::of(frame));
    out
}

/// How a frame's text is made up where heaptrack_print has two rules.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    /// Without a function, write the address (or `??`); else nothing.
    pub address: bool,
    /// Write ` ()` when there is no file.
    pub parens: bool,
}

impl Style {
    /// [`frame_text`]'s rule: the address when there is no function, the parentheses always
    /// for an inlined frame.
    pub fn of(frame: &Frame) -> Style {
        Style {
            address: true,
            parens: frame.inlined,
        }
    }

    /// heaptrack_print's rule for an instruction pointer's first frame (`first`) and for the
    /// frames of its `inlined` list: those have no address and always their parentheses.
    pub fn heaptrack(first: bool) -> Style {
        Style {
            address: first,
            parens: !first,
        }
    }
}

/// Appends a frame's text to `out` (see [`frame_text`] and [`Style`]).
pub(crate) fn push_frame_text(out: &mut String, frame: &Frame, style: Style) {
    match (&frame.function, &frame.owner) {
        (Some(f), Some(o)) => {
            push_clean(out, o);
            out.push('.');
            push_clean(out, &pretty_function(f));
        }
        (Some(f), None) => push_clean(out, &pretty_function(f)),
        (None, _) if !style.address => {}
        (None, _) => match frame.address {
            Some(a) => {
                use std::fmt::Write as _;
                let _ = write!(out, "0x{a:x}");
            }
            None => out.push_str("??"),
        },
    }
    match &frame.file {
        Some(file) => {
            out.push_str(" (");
            push_clean(out, basename(file));
            out.push(')');
        }
        None if style.parens => out.push_str(" ()"),
        None => {}
    }
}

/// The part of a path after its last `/` (the whole path when it has none), as heaptrack_print
/// shows a file.
pub fn basename(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, b)| b)
}

/// Pushes a name, with the line ends a folded line cannot hold written as `\n`, `\r`.
pub(crate) fn push_clean(out: &mut String, s: &str) {
    if !s.contains(['\n', '\r']) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

/// A C++ function name with its template arguments shortened to `<>`, exactly as heaptrack's
/// `prettyFunction` does (on by default in heaptrack_print and heaptrack_gui):
/// `std::vector<int, std::allocator<int> >::push_back(int const&)` →
/// `std::vector<>::push_back(int const&)`. The angle brackets of `operator<`, `operator<<`,
/// `operator<=`, `operator>`, `operator>>`, `operator>=` are kept.
///
/// ```
/// use metatf::stacks::pretty_function;
/// assert_eq!(pretty_function("int* make_one<int>(int)"), "int* make_one<>(int)");
/// assert_eq!(pretty_function("operator<<(Sink&, int)"), "operator<<(Sink&, int)");
/// assert_eq!(pretty_function("bool operator< <Foo>(Foo const&)"), "bool operator< <>(Foo const&)");
/// ```
// Design: heaptrack's rule, restated so that folded stacks are equal to heaptrack_print's:
// a `<` or `>` right after `operator` (or after `operator<` / `operator>` for `<<`, `>>`) is
// part of the operator's name; otherwise `<` raises the level (written when it reaches 1) and
// `>` lowers it, and a character is written only at level 0. The level may go below 0: a `>`
// that closes nothing (`operator->`, the `->` of a Rust `fn(&str) -> T` inside template
// arguments) makes heaptrack drop what follows until a `<` brings the level back to 0
// (`Ptr<int>::operator->() const` → `Ptr<>::operator-`). That garbles a few names, but it is
// what heaptrack_print and heaptrack_gui show for them, and the folded stacks are compared
// with heaptrack_print's text (docs/stacks.md).
pub fn pretty_function(function: &str) -> String {
    let mut out = String::with_capacity(function.len());
    let mut depth: i64 = 0;
    for c in function.chars() {
        if (c == '<' || c == '>') && out.len() >= 8 && is_operator_bracket(&out, c) {
            out.push(c);
            continue;
        }
        match c {
            '<' => {
                depth += 1;
                if depth == 1 {
                    out.push(c);
                }
            }
            '>' => depth -= 1,
            _ => {}
        }
        if depth != 0 {
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether `c` (`<` or `>`) after `before` is part of an operator's name: right after
/// `operator`, or after `operator<` / `operator>` for a second bracket of the same kind.
fn is_operator_bracket(before: &str, c: char) -> bool {
    let cmp = match (before.ends_with(c), c) {
        (true, '<') => "operator<",
        (true, _) => "operator>",
        (false, _) => "operator",
    };
    before.ends_with(cmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_shortened_and_operators_kept() {
        let cases = [
            ("Box<long, 4>::Box()", "Box<>::Box()"),
            ("double* make_one<double>(double)", "double* make_one<>(double)"),
            (
                "std::vector<std::pair<int, int>, std::allocator<std::pair<int, int> > >::_M_realloc_insert(int&&)",
                "std::vector<>::_M_realloc_insert(int&&)",
            ),
            ("operator<<(Sink&, int)", "operator<<(Sink&, int)"),
            ("operator>>(Src&, int&)", "operator>>(Src&, int&)"),
            ("operator<(A const&, A const&)", "operator<(A const&, A const&)"),
            ("operator>(A const&, A const&)", "operator>(A const&, A const&)"),
            ("operator<=(A const&, A const&)", "operator<=(A const&, A const&)"),
            ("operator>=(A const&, A const&)", "operator>=(A const&, A const&)"),
            // heaptrack garbles these (a `>` closing nothing): so here, to print what it prints.
            ("Ptr<int>::operator->() const", "Ptr<>::operator-"),
            ("Ptr<int>::operator->*(int)", "Ptr<>::operator-"),
            ("operator<=>(A const&, A const&)", "operator<="),
            (
                "new<clap::P, fn(&str) -> core::result::Result<T, E>>",
                "new<> core::result::Result<>",
            ),
            (
                "bool operator< <Foo>(Foo const&, Foo const&)",
                "bool operator< <>(Foo const&, Foo const&)",
            ),
            ("std::map<int, int>::operator[](int const&)", "std::map<>::operator[](int const&)"),
            ("main", "main"),
            ("a > b", "a "),
            ("", ""),
            ("f<unclosed", "f<"),
        ];
        for (input, want) in cases {
            assert_eq!(pretty_function(input), want, "{input}");
        }
    }

    fn f(function: Option<&str>, file: Option<&str>, inlined: bool) -> Frame {
        Frame {
            function: function.map(Into::into),
            file: file.map(Into::into),
            address: Some(0x7f0a_1d4a_57b9),
            inlined,
            ..Frame::default()
        }
    }

    #[test]
    fn a_frame_is_written_as_heaptrack_print_writes_it() {
        assert_eq!(
            frame_text(&f(Some("leaf_alloc"), Some("./nested.c"), false)),
            "leaf_alloc (nested.c)"
        );
        assert_eq!(frame_text(&f(Some("_start"), None, false)), "_start");
        assert_eq!(
            frame_text(&f(None, Some("./elf/rtld.c"), false)),
            "0x7f0a1d4a57b9 (rtld.c)"
        );
        assert_eq!(frame_text(&f(None, None, false)), "0x7f0a1d4a57b9");
        assert_eq!(frame_text(&Frame::default()), "??");
        // An inlined frame always has its parentheses.
        assert_eq!(frame_text(&f(Some("helper"), None, true)), "helper ()");
        assert_eq!(
            frame_text(&f(Some("call_init"), Some("dl-init.c"), true)),
            "call_init (dl-init.c)"
        );
        let java = Frame {
            function: Some("hashCode".into()),
            owner: Some("java.lang.String".into()),
            ..Frame::default()
        };
        assert_eq!(frame_text(&java), "java.lang.String.hashCode");
        assert_eq!(frame_text(&f(Some("bad\nname"), None, false)), "bad\\nname");
        assert_eq!(basename("no-slash.c"), "no-slash.c");
        assert_eq!(basename("a/b/"), "");
    }
}
