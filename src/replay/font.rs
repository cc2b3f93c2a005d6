//! The font the charts' text is drawn with (plotters' `ab_glyph` backend draws no text without
//! one).

use std::sync::OnceLock;

/// Registers the font once; the error says why there is none.
pub(crate) fn ensure() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        // Placeholder until the bundled font of the statistics' plots is merged.
        let bytes =
            std::fs::read("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf")
                .map_err(|e| format!("no font: {e}"))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, bytes)
            .map_err(|_| "the font is not a font".to_string())
    })
    .clone()
}
