//! `mtf check`'s semantic pass: the declarations of a trace's DTD verified while it decodes.
