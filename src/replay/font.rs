//! The font the charts' text is drawn with (plotters' `ab_glyph` backend draws no text without
//! one): the bundled subset of Roboto that `mtf plot` uses too (`assets/fonts/README.md`), so
//! that a picture needs no system font and looks the same on every machine.

use std::sync::OnceLock;

static FONT: &[u8] = include_bytes!("../../assets/fonts/Roboto-Regular-subset.ttf");

/// Registers the font once; the error says why it could not be.
pub(crate) fn ensure() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT)
            .map_err(|_| "the bundled font is not a font".to_string())
    })
    .clone()
}
