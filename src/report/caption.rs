//! Captions above pictures placed side by side (the `compare/` triptychs,
//! align's pictures, `render --params --side-by-side`): one white strip of
//! [`CAPTION_HEIGHT`] pixels, each panel's caption centred above it and
//! shrunk until it fits the panel's width, so that a caption is never cut
//! at a small camera size such as 128².

use image::{GenericImage, Rgb, RgbImage};
use plotters::element::Text;
use plotters::prelude::IntoFont;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{IntoTextStyle, BLACK};

use super::canvas::{draw_rgb, Canvas, DrawError};
use super::font::FONT_FAMILY;
use super::ReportError;

/// Height in pixels of the caption strip above the panels.
pub const CAPTION_HEIGHT: u32 = 24;

/// Font size of a caption that fits its panel, in pixels.
pub const CAPTION_SIZE: f64 = 15.0;

/// The smallest font size a caption is shrunk to: still legible; a caption
/// wider than its panel even at this size overruns it.
pub const CAPTION_MIN_SIZE: f64 = 9.0;

/// Pixels kept free on each side of a caption within its panel.
const CAPTION_MARGIN: u32 = 2;

/// The largest font size, from [`CAPTION_SIZE`] down to
/// [`CAPTION_MIN_SIZE`] by half pixels, at which `text` fits `width`
/// pixels (less the margins) on `area`.
fn fitting_size(area: &Canvas, text: &str, width: u32) -> Result<f64, DrawError> {
    let room = width.saturating_sub(2 * CAPTION_MARGIN);
    fitting_font_size(area, text, room, CAPTION_SIZE, CAPTION_MIN_SIZE)
}

/// The largest font size, from `largest` down to `smallest` by half
/// pixels, at which `text` is at most `room` pixels long on `area`
/// (`smallest` when even that is longer): a caption above a panel, a colour
/// bar's label along its height.
pub(crate) fn fitting_font_size(
    area: &Canvas,
    text: &str,
    room: u32,
    largest: f64,
    smallest: f64,
) -> Result<f64, DrawError> {
    let mut size = largest;
    while size > smallest {
        let style = (FONT_FAMILY, size).into_font().into_text_style(area);
        let (w, _) = area.estimate_text_size(text, &style)?;
        if w <= room {
            break;
        }
        size -= 0.5;
    }
    Ok(size.max(smallest))
}

/// `panels` side by side, left to right, each under its caption in a white
/// strip [`CAPTION_HEIGHT`] pixels high: `Σ width × (height +
/// CAPTION_HEIGHT)`. Panels may differ in width (a render with a colour
/// bar beside its reference); every panel must have the first one's
/// height, else [`ReportError::Size`].
pub fn captioned(
    picture: &'static str,
    panels: &[(&str, &RgbImage)],
) -> Result<RgbImage, ReportError> {
    let Some((_, first)) = panels.first() else {
        return Ok(RgbImage::new(0, 0));
    };
    let h = first.height();
    for (_, panel) in panels {
        if panel.height() != h {
            return Err(ReportError::Size {
                picture,
                what: "a panel",
                expected_w: panel.width(),
                expected_h: h,
                found_w: panel.width(),
                found_h: panel.height(),
                found: panel.len() / 3,
            });
        }
    }
    let lefts: Vec<u32> = panels
        .iter()
        .scan(0, |x, (_, panel)| {
            let left = *x;
            *x += panel.width();
            Some(left)
        })
        .collect();
    let width: u32 = panels.iter().map(|(_, p)| p.width()).sum();
    let strip = draw_rgb(picture, width, CAPTION_HEIGHT, |area| {
        for ((caption, panel), left) in panels.iter().zip(&lefts) {
            let size = fitting_size(area, caption, panel.width())?;
            let style = (FONT_FAMILY, size)
                .into_font()
                .color(&BLACK)
                .into_text_style(area)
                .pos(Pos::new(HPos::Center, VPos::Center));
            let centre = (left + panel.width() / 2) as i32;
            area.draw(&Text::new(
                *caption,
                (centre, CAPTION_HEIGHT as i32 / 2),
                &style,
            ))?;
        }
        Ok(())
    })?;
    let mut out = RgbImage::from_pixel(width, h + CAPTION_HEIGHT, Rgb([255; 3]));
    out.copy_from(&strip, 0, 0)
        .expect("the strip is the row's width");
    for ((_, panel), left) in panels.iter().zip(&lefts) {
        out.copy_from(*panel, *left, CAPTION_HEIGHT)
            .expect("each panel fits in its slot");
    }
    Ok(out)
}
