//! A white RGB canvas that plotters draws on, handed back as an `image`
//! buffer: the one place where the pictures meet plotters' bitmap backend.

use image::RgbImage;
use plotters::backend::BitMapBackend;
use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, DrawingAreaErrorKind, DrawingBackend, IntoDrawingArea};
use plotters::style::WHITE;

use super::{font, ReportError};

/// The drawing area of a canvas, in pixel coordinates from the top left.
pub(crate) type Canvas<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// What plotters returns when drawing on a [`Canvas`] fails.
pub(crate) type DrawError =
    DrawingAreaErrorKind<<BitMapBackend<'static> as DrawingBackend>::ErrorType>;

/// Draws with `draw` on a white `width × height` canvas (the embedded font
/// registered first) and returns the pixels; `picture` names it in errors.
pub(crate) fn draw_rgb(
    picture: &'static str,
    width: u32,
    height: u32,
    draw: impl FnOnce(&Canvas) -> Result<(), DrawError>,
) -> Result<RgbImage, ReportError> {
    font::register()?;
    let failed = |e: DrawError| ReportError::Draw {
        picture,
        message: e.to_string(),
    };
    let mut buffer = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        draw(&root).map_err(failed)?;
        root.present().map_err(failed)?;
    }
    Ok(RgbImage::from_raw(width, height, buffer)
        .expect("the buffer holds width × height RGB pixels"))
}
