//! `render --params --side-by-side`: each rendered frame beside the view's
//! reference frame of the same number, both captioned, so that a frame
//! seen alone (a GIF frame, a PNG of the sequence) says what it shows.
//!
//! - Captions: "reference, frame k" over the reference, "render" over the
//!   render, with the PSNR of the two 8-bit panels as shown ("render,
//!   41.23 dB"; with `--size`, against the reference resampled to the
//!   render's size) where both exist and the render shows the camera's
//!   colours (not with `--color-by`).
//! - Past the reference's last frame (a `--frames` longer than the video,
//!   a prediction) the reference panel is the background, captioned "no
//!   reference frame k": the run goes on, since rendering past the video is
//!   a reason to render, and the caption says why the panel is empty.
//! - A moving camera (`--orbit` other than 0) is refused: the reference
//!   was filmed from the view's fixed camera, so the two panels would show
//!   different viewpoints and their difference would mean nothing.

use anyhow::{bail, Result};
use image::{Rgb, RgbImage};

use physfit::io::Frame;
use physfit::report::{captioned, rgb8};

/// Refuses `--side-by-side` with a camera that moves (module doc).
pub fn refuse_moving_camera(orbit: Option<f32>) -> Result<()> {
    match orbit {
        Some(degrees) if degrees != 0.0 => bail!(
            "--side-by-side with --orbit {degrees}: the reference frames were filmed from the \
             view's fixed camera, and an orbiting camera sees the object from elsewhere, so the \
             two panels cannot be compared; fix: drop --orbit to compare with the reference, or \
             drop --side-by-side to orbit (two runs give both)"
        ),
        _ => Ok(()),
    }
}

/// PSNR in dB of two 8-bit RGB images of one size, over every channel
/// (peak 255; +∞ for identical images).
pub fn psnr_rgb8(a: &RgbImage, b: &RgbImage) -> f64 {
    let n = a.as_raw().len().max(1) as f64;
    let squared: f64 = a
        .as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
        .sum();
    10.0 * (255.0f64.powi(2) / (squared / n)).log10()
}

/// Frame `k` of a side-by-side sequence (module doc): the reference panel
/// (`reference` resized to the render's height, or the `background` where
/// there is no frame `k`; the view's frames are `reference_size` pixels, so
/// that every frame of a sequence has one size) left of `render`, under
/// their captions. `comparable`: the render shows the camera's colours, so
/// a PSNR means something.
pub fn side_by_side(
    reference: Option<&Frame>,
    reference_size: (u32, u32),
    render: &RgbImage,
    k: usize,
    background: [f32; 3],
    comparable: bool,
) -> Result<RgbImage> {
    let h = render.height();
    let (rw, rh) = reference_size;
    let panel_w = (f64::from(rw) * f64::from(h) / f64::from(rh.max(1))).round() as u32;
    let panel = match reference {
        Some(r) => {
            image::imageops::resize(&rgb8(r), panel_w, h, image::imageops::FilterType::Triangle)
        }
        None => RgbImage::from_pixel(
            panel_w,
            h,
            Rgb(background.map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8)),
        ),
    };
    let reference_caption = match reference {
        Some(_) => format!("reference, frame {k}"),
        None => format!("no reference frame {k}"),
    };
    // The frame number once, on the left: a caption fits a 128² panel.
    let render_caption = match reference {
        Some(_) if comparable && panel.dimensions() == render.dimensions() => {
            format!("render, {:.2} dB", psnr_rgb8(&panel, render))
        }
        _ => "render".to_string(),
    };
    Ok(captioned(
        "side-by-side frame",
        &[
            (reference_caption.as_str(), &panel),
            (render_caption.as_str(), render),
        ],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_orbit_is_refused_and_a_fixed_camera_kept() {
        assert!(refuse_moving_camera(None).is_ok());
        assert!(refuse_moving_camera(Some(0.0)).is_ok());
        let refused = refuse_moving_camera(Some(30.0)).unwrap_err().to_string();
        assert!(
            refused.contains("--orbit 30") && refused.contains("fix:"),
            "{refused}"
        );
    }

    #[test]
    fn psnr_of_a_known_difference() {
        let a = RgbImage::from_pixel(4, 4, Rgb([100, 100, 100]));
        let b = RgbImage::from_pixel(4, 4, Rgb([110, 100, 100]));
        // MSE = 100 / 3 over the channels.
        let want = 10.0 * (255.0f64 * 255.0 / (100.0 / 3.0)).log10();
        assert!((psnr_rgb8(&a, &b) - want).abs() < 1e-9);
        assert_eq!(psnr_rgb8(&a, &a), f64::INFINITY);
    }

    #[test]
    fn past_the_reference_the_panel_keeps_its_size_and_is_captioned() {
        let render = RgbImage::from_pixel(64, 48, Rgb([0, 0, 0]));
        let reference = Frame {
            width: 64,
            height: 48,
            pixels: vec![[0.0, 0.0, 0.0, 1.0]; 64 * 48],
        };
        let with = side_by_side(Some(&reference), (64, 48), &render, 3, [1.0; 3], true).unwrap();
        let without = side_by_side(None, (64, 48), &render, 30, [1.0; 3], true).unwrap();
        assert_eq!(with.dimensions(), without.dimensions(), "one GIF size");
        let caption_ink = |image: &RgbImage| {
            (0..64)
                .flat_map(|x| (0..physfit::report::CAPTION_HEIGHT).map(move |y| (x, y)))
                .filter(|&(x, y)| image.get_pixel(x, y).0[0] < 128)
                .count()
        };
        assert!(caption_ink(&without) > 20, "the empty panel is captioned");
    }
}
