//! What every picture of the crate shares (feature `plot`): its format, the error of drawing
//! it, the bundled font and the PNG encoding. `analysis::plot` (`mtf plot`, `mtf report`) and
//! `replay::plot` (`mtf replay -o`) draw their charts with plotters on top of it.
//!
//! Text is drawn with a bundled subset of Roboto (Apache-2.0, `assets/fonts/README.md`):
//! nothing is read from the system, so a PNG looks the same on every machine, offline. SVG text
//! names the generic `sans-serif` family and is rendered by the viewer.

use std::sync::OnceLock;

use plotters::drawing::DrawingAreaErrorKind;

/// Roboto Regular reduced to ASCII and a few symbols (see `assets/fonts/README.md`).
pub static FONT: &[u8] = include_bytes!("../assets/fonts/Roboto-Regular-subset.ttf");

/// A picture's format, from a file name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PictureFormat {
    /// Scalable vector graphics.
    Svg,
    /// A PNG bitmap.
    Png,
}

impl PictureFormat {
    /// The format of `path` (`.svg` or `.png`, in any case).
    pub fn of(path: &std::path::Path) -> Option<PictureFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "svg" => Some(PictureFormat::Svg),
            "png" => Some(PictureFormat::Png),
            _ => None,
        }
    }
}

/// Why a picture could not be drawn.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PlotError {
    /// The drawing library failed (or the bundled font could not be used).
    #[error("cannot draw the plot: {0}")]
    #[diagnostic(code(mtf::plot::draw))]
    Draw(String),
    /// PNG encoding failed.
    #[error("cannot encode the PNG: {0}")]
    #[diagnostic(code(mtf::plot::png))]
    Png(String),
}

/// A drawing area's failure as a [`PlotError`].
pub fn draw_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// Registers the bundled font as `sans-serif` for plotters' text (once per process); the error
/// says why it could not be. The font is valid (a unit test draws with it): a caller may go on
/// without it, its text then left out.
pub fn register_font() -> Result<(), PlotError> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT)
            .map_err(|_| "the bundled font is not a font".to_string())
    })
    .clone()
    .map_err(PlotError::Draw)
}

/// The bytes of a PNG file of `width` × `height` RGB pixels (`rgb`, 3 bytes a pixel, row by
/// row).
pub fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, PlotError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc
            .write_header()
            .map_err(|e| PlotError::Png(e.to_string()))?;
        writer
            .write_image_data(rgb)
            .map_err(|e| PlotError::Png(e.to_string()))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_extension_in_any_case() {
        use std::path::Path;
        assert_eq!(
            PictureFormat::of(Path::new("a.SVG")),
            Some(PictureFormat::Svg)
        );
        assert_eq!(
            PictureFormat::of(Path::new("x/b.png")),
            Some(PictureFormat::Png)
        );
        assert_eq!(PictureFormat::of(Path::new("c.jpg")), None);
        assert_eq!(PictureFormat::of(Path::new("svg")), None);
    }

    #[test]
    fn the_bundled_font_registers_and_a_png_encodes() {
        register_font().unwrap();
        let png = encode_png(&[255; 2 * 3 * 3], 2, 3).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(matches!(encode_png(&[0; 5], 2, 3), Err(PlotError::Png(_))));
    }
}
