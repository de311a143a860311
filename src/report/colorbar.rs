//! The colour bar of `stiffness.png`: the image with
//! a vertical bar of the colour map on its right, ticks with values and a
//! label such as "log10 E (Pa, world units)", drawn with plotters on the
//! embedded font.

use image::{GenericImage, RgbImage};
use plotters::element::Text;
use plotters::prelude::{ChartBuilder, IntoFont, LabelAreaPosition, RGBColor};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontTransform, BLACK};

use super::canvas::draw_rgb;
use super::caption::fitting_font_size;
use super::colormap::{check_range, map};
use super::font::FONT_FAMILY;
use super::ReportError;

/// Width in pixels that [`with_colorbar`] adds on the right of the image.
pub const COLORBAR_WIDTH: u32 = 104;
/// Left edge of the bar inside the added panel, in pixels.
pub const COLORBAR_BAR_LEFT: u32 = 12;
/// Width of the bar in pixels.
pub const COLORBAR_BAR_WIDTH: u32 = 20;
/// Rows left above and below the bar (room for the end ticks' labels).
pub const COLORBAR_MARGIN: u32 = 12;

/// Font size of the tick values and of the label, in pixels.
const TEXT_SIZE: f64 = 14.0;
/// The smallest font size the label is shrunk to, so that it fits the
/// picture's height.
const LABEL_MIN_SIZE: f64 = 8.0;
/// Distance of the label's centre line from the panel's right edge.
const LABEL_INSET: u32 = 12;

/// `image` with a colour bar panel [`COLORBAR_WIDTH`] pixels wide on its
/// right (white, the image's height): the bar runs from `low` at its bottom
/// row (the colour map's start, `map(0)`) to `high` at its top row
/// (`map(1)`), each row the map at its own height, with ticks at round
/// values and `label` written upwards beside them. `low == high` (one value
/// everywhere) shows a bar one unit high centred on it, as
/// [`super::normalised`] puts such a value at the map's middle.
/// [`ReportError::ColourRange`] when the range is not finite or reversed.
pub fn with_colorbar(
    image: &RgbImage,
    low: f64,
    high: f64,
    label: &str,
) -> Result<RgbImage, ReportError> {
    const PICTURE: &str = "stiffness colour bar";
    check_range(PICTURE, low, high)?;
    let (axis_low, axis_high) = if high > low {
        (low, high)
    } else {
        (low - 0.5, high + 0.5)
    };
    let height = image.height();
    let panel = draw_rgb(PICTURE, COLORBAR_WIDTH, height, |area| {
        let mut chart = ChartBuilder::on(area)
            .margin_top(COLORBAR_MARGIN)
            .margin_bottom(COLORBAR_MARGIN)
            .margin_left(COLORBAR_BAR_LEFT)
            .set_label_area_size(
                LabelAreaPosition::Right,
                COLORBAR_WIDTH - COLORBAR_BAR_LEFT - COLORBAR_BAR_WIDTH,
            )
            .build_cartesian_2d(0.0..1.0, axis_low..axis_high)?;
        let bar = chart.plotting_area().strip_coord_spec();
        let (bar_w, bar_h) = bar.dim_in_pixel();
        for row in 0..bar_h {
            // Top row t = 1, bottom row t = 0: the ends are the map's ends.
            let t = if bar_h > 1 {
                1.0 - row as f64 / (bar_h - 1) as f64
            } else {
                0.5
            };
            let [r, g, b] = map(t);
            for col in 0..bar_w {
                bar.draw_pixel((col as i32, row as i32), &RGBColor(r, g, b))?;
            }
        }
        chart
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_labels(6)
            .y_label_style((FONT_FAMILY, TEXT_SIZE).into_font().color(&BLACK))
            .draw()?;
        // The label reads upwards along the panel's right edge. Drawn here
        // rather than as plotters' `y_desc`, which places a right-hand
        // description past the edge of its label area, off the picture;
        // shrunk until it fits the picture's height (a 128² camera).
        let size = fitting_font_size(
            area,
            label,
            height.saturating_sub(2 * COLORBAR_MARGIN),
            TEXT_SIZE,
            LABEL_MIN_SIZE,
        )?;
        let style = (FONT_FAMILY, size)
            .into_font()
            .transform(FontTransform::Rotate270)
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Center));
        let centre = ((COLORBAR_WIDTH - LABEL_INSET) as i32, height as i32 / 2);
        area.draw(&Text::new(label, centre, &style))
    })?;
    let mut out =
        RgbImage::from_pixel(image.width() + COLORBAR_WIDTH, height, image::Rgb([255; 3]));
    out.copy_from(image, 0, 0)
        .expect("the image fits in its own size");
    out.copy_from(&panel, image.width(), 0)
        .expect("the panel fits beside the image");
    Ok(out)
}
