//! Text in the PNG pictures, laid out with ab_glyph.
//!
//! plotters (0.3.7) places each glyph of a bitmap's text at the caret without its left side
//! bearing and rounds each glyph's baseline on its own: digits with a wide bearing stand apart
//! from the next ("1 2.0 KiB"), tick labels run together, and the letters of a rotated label
//! step up and down. [`Glyphs`] wraps the bitmap backend and draws text itself: every glyph at
//! the caret plus its bearing, on one baseline for the whole line, kerned, rotated as a whole.
//! Everything else goes to the wrapped backend unchanged.

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use plotters::prelude::DrawingBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontTransform,
};

/// A bitmap backend whose text is drawn with `font`.
pub struct Glyphs<'f, B> {
    inner: B,
    font: FontRef<'f>,
}

impl<'f, B: DrawingBackend> Glyphs<'f, B> {
    /// Wraps `inner`; `font` is a TrueType file (if it does not parse, `inner` comes back).
    pub fn new(inner: B, font: &'f [u8]) -> Result<Glyphs<'f, B>, B> {
        match FontRef::try_from_slice(font) {
            Ok(font) => Ok(Glyphs { inner, font }),
            Err(_) => Err(inner),
        }
    }

    /// The line's advance width and its height (ascent to descent) at `size` pixels, and the
    /// ascent.
    fn measure(&self, text: &str, size: f32) -> (f32, f32, f32) {
        let f = self.font.as_scaled(PxScale::from(size));
        let mut w = 0.0;
        let mut prev = None;
        for c in text.chars() {
            let g = f.glyph_id(c);
            if let Some(p) = prev {
                w += f.kern(p, g);
            }
            w += f.h_advance(g);
            prev = Some(g);
        }
        (w, f.ascent() - f.descent(), f.ascent())
    }
}

impl<B: DrawingBackend> DrawingBackend for Glyphs<'_, B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let (w, h, _) = self.measure(text, style.size() as f32);
        Ok((w.ceil() as u32, h.ceil() as u32))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let size = style.size() as f32;
        let (w, h, ascent) = self.measure(text, size);
        // The anchor's offset from the line box's top left corner, before rotation.
        let ax = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => w / 2.0,
            HPos::Right => w,
        };
        let ay = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => h / 2.0,
            VPos::Bottom => h,
        };
        let trans = style.transform();
        let (width, height) = self.inner.get_size();
        let f = self.font.as_scaled(PxScale::from(size));
        let mut caret = 0.0f32;
        let mut prev = None;
        for c in text.chars() {
            let id = f.glyph_id(c);
            if let Some(p) = prev {
                caret += f.kern(p, id);
            }
            prev = Some(id);
            // The glyph on the common baseline, in the line box's coordinates; the baseline on
            // a pixel boundary, so that the feet of every glyph end on the same row.
            let glyph =
                id.with_scale_and_position(f.scale(), point(caret - ax, (ascent - ay).round()));
            caret += f.h_advance(id);
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            let mut pixels = Vec::new();
            outline.draw(|x, y, cover| pixels.push((x, y, cover)));
            for (x, y, cover) in pixels {
                if cover <= 0.0 {
                    continue;
                }
                let (dx, dy) = (b.min.x as i32 + x as i32, b.min.y as i32 + y as i32);
                let (dx, dy) = match &trans {
                    FontTransform::None => (dx, dy),
                    t => t.transform(dx, dy),
                };
                let (px, py) = (pos.0 + dx, pos.1 + dy);
                if px < 0 || py < 0 || px >= width as i32 || py >= height as i32 {
                    continue;
                }
                self.inner.draw_pixel(
                    (px, py),
                    BackendColor {
                        alpha: color.alpha * f64::from(cover.min(1.0)),
                        rgb: color.rgb,
                    },
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::{BitMapBackend, IntoFont, TextStyle};

    /// Draws `text` (`size` pixels) at (120, 120) on a 240 × 240 canvas; the dark pixels.
    fn ink(text: &str, size: u32, transform: FontTransform) -> Vec<Vec<bool>> {
        super::super::register_font();
        let (w, h) = (240u32, 240u32);
        let mut rgb = vec![255u8; (w * h * 3) as usize];
        {
            let bitmap = BitMapBackend::with_buffer(&mut rgb, (w, h));
            let mut g = Glyphs::new(bitmap, super::super::FONT).ok().unwrap();
            let style = TextStyle::from(("sans-serif", size).into_font()).transform(transform);
            g.draw_text(text, &style, (120, 120)).unwrap();
            g.present().unwrap();
        }
        (0..h as usize)
            .map(|y| {
                (0..w as usize)
                    .map(|x| rgb[(y * w as usize + x) * 3] < 180)
                    .collect()
            })
            .collect()
    }

    /// Per glyph (a run of columns with ink), the lowest row with ink.
    fn bottoms(ink: &[Vec<bool>]) -> Vec<usize> {
        let w = ink[0].len();
        let col = |x: usize| (0..ink.len()).rev().find(|&y| ink[y][x]);
        let mut out = Vec::new();
        let mut run: Option<usize> = None;
        for x in 0..w {
            match (col(x), run) {
                (Some(y), Some(b)) => run = Some(b.max(y)),
                (Some(y), None) => run = Some(y),
                (None, Some(b)) => {
                    out.push(b);
                    run = None;
                }
                (None, None) => {}
            }
        }
        out.extend(run);
        out
    }

    fn transpose(ink: &[Vec<bool>]) -> Vec<Vec<bool>> {
        (0..ink[0].len())
            .map(|x| (0..ink.len()).map(|y| ink[y][x]).collect())
            .collect()
    }

    #[test]
    fn glyphs_sit_on_one_baseline_straight_or_rotated() {
        // Letters and a full stop with flat feet: every one ends on the baseline's row, at the
        // sizes of the pictures' labels (plotters put the stop a pixel high at odd sizes).
        let text = "h n . x z k l";
        let letters = 7;
        for size in 11..=20 {
            let flat = bottoms(&ink(text, size, FontTransform::None));
            assert_eq!(flat.len(), letters, "{size}: {flat:?}");
            assert!(flat.iter().all(|b| *b == flat[0]), "{size}: {flat:?}");
            // Rotated as a y axis' label (read bottom to top): screen rows separate its
            // glyphs, and their feet are one column.
            let feet = bottoms(&transpose(&ink(text, size, FontTransform::Rotate270)));
            assert_eq!(feet.len(), letters, "{size}: {feet:?}");
            assert!(feet.iter().all(|b| *b == feet[0]), "{size}: {feet:?}");
        }
    }

    #[test]
    fn glyphs_keep_their_bearing() {
        // plotters drew each glyph against the caret, without its left side bearing: the stop
        // of "0.5" touched the 0, and a 1 stood apart from what followed ("1 2.0 KiB").
        for size in [16, 20] {
            let a = ink("0.", size, FontTransform::None);
            let cols: Vec<bool> = (0..240).map(|x| a.iter().any(|row| row[x])).collect();
            let runs = cols.windows(2).filter(|w| !w[0] && w[1]).count();
            assert_eq!(runs, 2, "{size}: the stop stands apart from the 0");
        }
    }
}
