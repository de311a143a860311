//! The `compare/<view>/frame_NNNN.png` triptychs of the fit's outputs:
//! reference | fitted | absolute difference, side by side, a caption above
//! each panel, so a person sees at once where a fit misses.

use image::{Rgb, RgbImage};

use super::caption::captioned;
use super::ReportError;
use crate::io::png::quantised;
use crate::io::Frame;


/// The factor the difference panel multiplies `|reference − fitted|` by
/// before clamping: differences of a few percent, a typical residual of a
/// good fit, would be nearly black at ×1. Its caption says so.
pub const DIFFERENCE_GAIN: f32 = 4.0;

/// The colour channels of `frame` as 8-bit RGB: `round(255·clamp(v))`, no
/// transfer curve (docs/design.md § Units and frames), as every PNG of the
/// project is written; alpha is dropped (renders are already composited
/// over the background, decoded frames carry 1).
pub fn rgb8(frame: &Frame) -> RgbImage {
    let mut image = RgbImage::new(frame.width, frame.height);
    for (out, p) in image.pixels_mut().zip(&frame.pixels) {
        *out = Rgb([0, 1, 2].map(|c| quantised(p[c], 255.0) as u8));
    }
    image
}

/// [`ReportError::Size`] unless `frame` holds `width × height` pixels.
fn check_size(
    frame: &Frame,
    what: &'static str,
    width: u32,
    height: u32,
) -> Result<(), ReportError> {
    let found = frame.pixels.len();
    if (frame.width, frame.height) == (width, height) && found == width as usize * height as usize {
        Ok(())
    } else {
        Err(ReportError::Size {
            picture: "compare triptych",
            what,
            expected_w: width,
            expected_h: height,
            found_w: frame.width,
            found_h: frame.height,
            found,
        })
    }
}

/// The triptych of one frame of one view: `reference` | `fitted` |
/// `|reference − fitted|·`[`DIFFERENCE_GAIN`] (per channel, on the
/// values clamped to [0, 1]), each panel the frames' size, under a white
/// strip [`CAPTION_HEIGHT`](super::caption::CAPTION_HEIGHT) pixels high with the captions "reference",
/// "fitted" and "|difference| × 4" centred above them: the image is
/// `3·width × (height + CAPTION_HEIGHT)`. Inputs are frames as loaded or
/// rendered (RGBA in [0, 1], alpha ignored); both must have the same size,
/// else [`ReportError::Size`].
pub fn triptych(reference: &Frame, fitted: &Frame) -> Result<RgbImage, ReportError> {
    triptych_captioned(reference, fitted, ["reference".into(), "fitted".into()])
}

/// [`triptych`] of frame `frame` of a sequence, with the frame number in
/// the reference's caption and, when known, the PSNR of the fitted render
/// against the reference (as the fit measures it, over the view's mask)
/// in the fitted one's: "reference, frame 4" | "fitted, 41.56 dB", so that
/// a triptych seen alone says what it shows.
pub fn frame_triptych(
    reference: &Frame,
    fitted: &Frame,
    frame: usize,
    psnr: Option<f64>,
) -> Result<RgbImage, ReportError> {
    let fitted_caption = match psnr {
        Some(db) => format!("fitted, {db:.2} dB"),
        None => "fitted".into(),
    };
    triptych_captioned(
        reference,
        fitted,
        [format!("reference, frame {frame}"), fitted_caption],
    )
}

/// The triptych with `captions` over its first two panels.
fn triptych_captioned(
    reference: &Frame,
    fitted: &Frame,
    captions: [String; 2],
) -> Result<RgbImage, ReportError> {
    let (w, h) = (reference.width, reference.height);
    check_size(reference, "the reference frame", w, h)?;
    check_size(fitted, "the fitted render", w, h)?;
    let difference = difference(reference, fitted);
    let gain = format!("|difference| × {DIFFERENCE_GAIN}");
    captioned_row(&[
        (captions[0].as_str(), reference),
        (captions[1].as_str(), fitted),
        (gain.as_str(), &difference),
    ])
}

/// `|a − b|·`[`DIFFERENCE_GAIN`] per channel, on the values clamped to
/// [0, 1] (both frames the same size).
pub fn difference(a: &Frame, b: &Frame) -> Frame {
    let unit = |v: f32| v.clamp(0.0, 1.0);
    Frame {
        width: a.width,
        height: a.height,
        pixels: a
            .pixels
            .iter()
            .zip(&b.pixels)
            .map(|(x, y)| [0, 1, 2, 3].map(|c| (unit(x[c]) - unit(y[c])).abs() * DIFFERENCE_GAIN))
            .collect(),
    }
}

/// Frames of one size side by side, each under its caption in a white
/// strip [`CAPTION_HEIGHT`](super::caption::CAPTION_HEIGHT) pixels high ([`captioned`]): `n·width ×
/// (height + CAPTION_HEIGHT)`. Errors: [`ReportError::Size`] when a frame's
/// size differs from the first's.
pub fn captioned_row(panels: &[(&str, &Frame)]) -> Result<RgbImage, ReportError> {
    let Some((_, first)) = panels.first() else {
        return Ok(RgbImage::new(0, 0));
    };
    let (w, h) = (first.width, first.height);
    for (_, frame) in panels {
        check_size(frame, "a panel", w, h)?;
    }
    let images: Vec<RgbImage> = panels.iter().map(|(_, frame)| rgb8(frame)).collect();
    let row: Vec<(&str, &RgbImage)> = panels
        .iter()
        .zip(&images)
        .map(|((caption, _), image)| (*caption, image))
        .collect();
    captioned("captioned row", &row)
}
