//! A first guess of the colour correction in closed form: per channel, the
//! least-squares line through the quantile pairs of the render's and the
//! recording's colours (a Q–Q line): `reference quantile ≈ gain · render
//! quantile + offset`.
//!
//! The correction `c' = clamp(a·c + b)` is linear in (a, b) away from the
//! clamp, so its best value is one regression away, where a gradient method
//! spends evaluations walking two coordinates that the pose's pixels also
//! pull on (gain and offset correlate at −0.97 on the demo). A regression
//! pixel by pixel would need the pose right first: misaligned pixels pair
//! unrelated colours and pull the gain towards 0 (regression dilution). The
//! quantiles pair the colours by rank instead, which does not depend on
//! where the object is in the image, only on what the image shows, and the
//! silhouette's guess ([`super::silhouette`]) has framed it as the
//! recording does. Quantile pairs where the recording may have clipped
//! (within 0.01 of 0 or 1) say nothing about the line and are
//! left out. The caller keeps the guess only when it lowers the loss
//! ([`super::view_align`]); L-BFGS then refines it with the pose.

use crate::scene::color_correction::ColorCorrection;
use crate::io::Frame;
use crate::scene::masks::Mask;

/// A value this close to 0 or 1 may have been clipped.
const CLIP_MARGIN: f32 = 0.01;

/// Quantiles compared per channel (evenly spaced, the extremes left out).
const QUANTILES: usize = 64;

/// Fewer counted pixels than this, fewer usable quantile pairs than a
/// quarter of [`QUANTILES`], or a render channel whose quantiles spread
/// less than [`MIN_SPREAD`], and that channel keeps the identity.
const MIN_PIXELS: usize = 32;

/// Standard deviation of the render's quantiles below which the gain is
/// not identifiable (a flat image fits any gain with some offset).
const MIN_SPREAD: f64 = 0.02;

fn quantiles(mut v: Vec<f32>) -> Vec<f64> {
    v.sort_by(f32::total_cmp);
    (0..QUANTILES)
        .map(|q| {
            let p = (q as f64 + 0.5) / QUANTILES as f64;
            f64::from(v[((p * v.len() as f64) as usize).min(v.len() - 1)])
        })
        .collect()
}

/// The Q–Q line's correction taking `render` (uncorrected) to `reference`,
/// both of one size, over the pixels `mask` counts; gains held to
/// [1/4, 4] and offsets to [−½, ½], as the chart bounds them.
pub fn color_guess(render: &Frame, reference: &Frame, mask: Option<&Mask>) -> ColorCorrection {
    let mut out = ColorCorrection::IDENTITY;
    let counted: Vec<usize> = (0..render.pixels.len().min(reference.pixels.len()))
        .filter(|&i| mask.is_none_or(|m| m.counts[i]))
        .collect();
    if counted.len() < MIN_PIXELS {
        return out;
    }
    for c in 0..3 {
        let r = quantiles(counted.iter().map(|&i| render.pixels[i][c]).collect());
        let f = quantiles(counted.iter().map(|&i| reference.pixels[i][c]).collect());
        let margin = f64::from(CLIP_MARGIN);
        let pairs: Vec<(f64, f64)> = r
            .into_iter()
            .zip(f)
            .filter(|&(_, f)| f > margin && f < 1.0 - margin)
            .collect();
        if pairs.len() < QUANTILES / 4 {
            continue;
        }
        let Some((gain, offset)) = line(&pairs) else {
            continue;
        };
        out.gain[c] = gain as f32;
        out.offset[c] = offset as f32;
    }
    out
}

/// The least-squares line `f ≈ gain · r + offset` through `pairs`, held to
/// the chart's bounds; `None` when `r` spreads less than [`MIN_SPREAD`].
fn line(pairs: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pairs.len() as f64;
    let mr = pairs.iter().map(|p| p.0).sum::<f64>() / n;
    let mf = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let var = pairs.iter().map(|p| (p.0 - mr).powi(2)).sum::<f64>() / n;
    if var.is_nan() || var < MIN_SPREAD * MIN_SPREAD {
        return None;
    }
    let cov = pairs.iter().map(|p| (p.0 - mr) * (p.1 - mf)).sum::<f64>() / n;
    let gain = (cov / var).clamp(0.25, 4.0);
    Some((gain, (mf - gain * mr).clamp(-0.5, 0.5)))
}

/// Once the pose is aligned: the least-squares line pixel by pixel, over
/// the pixels both images hold unclipped (and the mask counts). It
/// minimises the squared error, which PSNR measures, exactly, where the
/// solver's L1 + D-SSIM stops on its tolerance a little short in a
/// direction the loss barely sees (the caller keeps it only when it
/// lowers the loss too).
pub fn color_regression(render: &Frame, reference: &Frame, mask: Option<&Mask>) -> ColorCorrection {
    let mut out = ColorCorrection::IDENTITY;
    let unclipped = |v: f32| v > CLIP_MARGIN && v < 1.0 - CLIP_MARGIN;
    for c in 0..3 {
        let pairs: Vec<(f64, f64)> = render
            .pixels
            .iter()
            .zip(&reference.pixels)
            .enumerate()
            .filter(|(i, (r, f))| {
                mask.is_none_or(|m| m.counts[*i]) && unclipped(r[c]) && unclipped(f[c])
            })
            .map(|(_, (r, f))| (f64::from(r[c]), f64::from(f[c])))
            .collect();
        if pairs.len() < MIN_PIXELS {
            continue;
        }
        if let Some((gain, offset)) = line(&pairs) {
            out.gain[c] = gain as f32;
            out.offset[c] = offset as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(pixels: Vec<[f32; 4]>) -> Frame {
        Frame {
            width: pixels.len() as u32,
            height: 1,
            pixels,
        }
    }

    /// 400 pixels, each channel a ramp over [0, 1] or part of it.
    fn ramps() -> Vec<[f32; 4]> {
        (0..400)
            .map(|i| {
                let t = i as f32 / 399.0;
                [t, 0.5 * t + 0.3, 1.0 - t, 1.0]
            })
            .collect()
    }

    /// `render` as a camera with `gain` and `offset` records it (clipped).
    fn recorded(render: &[[f32; 4]], gain: [f32; 3], offset: [f32; 3]) -> Vec<[f32; 4]> {
        render
            .iter()
            .map(|p| {
                let v: [f32; 3] =
                    std::array::from_fn(|c| (gain[c] * p[c] + offset[c]).clamp(0.0, 1.0));
                [v[0], v[1], v[2], 1.0]
            })
            .collect()
    }

    #[test]
    fn recovers_a_gain_and_offset_past_the_clipped_pixels() {
        let render = ramps();
        let gain = [0.85, 1.2, 0.7];
        let offset = [0.04, -0.1, 0.2];
        let reference = recorded(&render, gain, offset);
        let g = color_guess(&frame(render), &frame(reference), None);
        for c in 0..3 {
            assert!((g.gain[c] - gain[c]).abs() < 1e-4, "{g:?}");
            assert!((g.offset[c] - offset[c]).abs() < 1e-4, "{g:?}");
        }
    }

    /// The same picture shifted by a quarter of its width (a misaligned
    /// pose) still gives the same line: the quantiles do not see where.
    #[test]
    fn a_misaligned_render_gives_the_same_line() {
        let (w, h) = (64usize, 32usize);
        let picture = |x: usize, y: usize| {
            let (u, v) = (x as f32 / w as f32, y as f32 / h as f32);
            [0.2 + 0.6 * u * v, 0.9 - 0.5 * u, 0.3 + 0.4 * v, 1.0]
        };
        let render: Vec<[f32; 4]> = (0..w * h).map(|i| picture(i % w, i / w)).collect();
        let reference: Vec<[f32; 4]> = (0..w * h)
            .map(|i| {
                // Shifted by w/4, wrapping: the same colours elsewhere.
                let p = picture((i % w + w / 4) % w, i / w);
                [
                    0.85 * p[0] + 0.04,
                    0.85 * p[1] + 0.04,
                    0.85 * p[2] + 0.04,
                    1.0,
                ]
            })
            .collect();
        let frame2 = |pixels| Frame {
            width: w as u32,
            height: h as u32,
            pixels,
        };
        let g = color_guess(&frame2(render), &frame2(reference), None);
        for c in 0..3 {
            assert!((g.gain[c] - 0.85).abs() < 0.01, "{g:?}");
            assert!((g.offset[c] - 0.04).abs() < 0.01, "{g:?}");
        }
    }

    #[test]
    fn the_pixel_regression_recovers_an_aligned_line() {
        let render = ramps();
        let reference = recorded(&render, [0.85; 3], [0.04; 3]);
        let g = color_regression(&frame(render), &frame(reference), None);
        for c in 0..3 {
            assert!((g.gain[c] - 0.85).abs() < 1e-4, "{g:?}");
            assert!((g.offset[c] - 0.04).abs() < 1e-4, "{g:?}");
        }
    }

    #[test]
    fn a_flat_channel_or_a_masked_out_image_keeps_the_identity() {
        let render = vec![[0.5, 0.5, 0.5, 1.0]; 100];
        let reference = vec![[0.2, 0.3, 0.4, 1.0]; 100];
        assert_eq!(
            color_guess(&frame(render.clone()), &frame(reference.clone()), None),
            ColorCorrection::IDENTITY
        );
        let spread: Vec<[f32; 4]> = (0..100).map(|i| [i as f32 / 120.0 + 0.05; 4]).collect();
        let mask = Mask {
            width: 100,
            height: 1,
            counts: vec![false; 100],
        };
        assert_eq!(
            color_guess(&frame(spread), &frame(reference), Some(&mask)),
            ColorCorrection::IDENTITY
        );
    }
}
