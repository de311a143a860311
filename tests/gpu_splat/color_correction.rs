//! A view's colour correction on the GPU (src/loss/color_correction.rs):
//! the corrected image and the backward against the host formula
//! ([`ColorCorrection::apply`]), with clamped values and buffer reuse across
//! sizes; the loss's gradient through the correction, and `∂L/∂gain`,
//! `∂L/∂offset`, against central differences of the GPU loss; a reference
//! recorded through a known correction matched (to 8-bit rounding) only
//! when the render carries it; typed errors.

use glam::Vec3;
use physfit::gpu::{GpuBuffer, GpuContext};
use physfit::io::Frame;
use physfit::loss::{
    gain_offset_gradient, ColorCorrect, ImageLoss, LossError, LossTermsBuffer, LossWeights,
    ReferenceFrame, RenderedImage,
};
use physfit::scene::ColorCorrection;
use physfit::splat::{Rasterizer, SplatBuffers};

use crate::common;
use crate::common::slopes::richardson;
use crate::loss::case;
use crate::support::{camera_looking_z, random_gaussians, Rng};

/// A correction that brightens red, darkens green and lifts blue.
const CORRECTION: ColorCorrection = ColorCorrection {
    gain: [1.3, 0.7, 1.05],
    offset: [-0.1, 0.2, 0.04],
};

fn image<'a>(buffer: &'a GpuBuffer, width: u32, height: u32) -> RenderedImage<'a> {
    RenderedImage {
        buffer,
        width,
        height,
    }
}

fn read(ctx: &GpuContext, buffer: &GpuBuffer, pixels: u32) -> Vec<[f32; 4]> {
    let mut v: Vec<[f32; 4]> = ctx.read_buffer(buffer).unwrap();
    v.truncate(pixels as usize);
    v
}

/// Random pixels in [−0.2, 1.2] (so that the correction clamps some).
fn random_pixels(n: u32, seed: u64) -> Vec<[f32; 4]> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| std::array::from_fn(|_| rng.range(-0.2, 1.2)))
        .collect()
}

#[test]
fn apply_and_backward_match_the_host_formula_across_sizes() {
    let ctx = common::gpu();
    let mut color = ColorCorrect::new(&ctx).unwrap();
    // Large, small, larger: buffers grown, reused with stale data beyond.
    for (k, &(w, h)) in [(40u32, 30u32), (7, 3), (61, 45)].iter().enumerate() {
        let n = w * h;
        let pixels = random_pixels(n, 10 + k as u64);
        let grad = random_pixels(n, 20 + k as u64);
        let buf = ctx.storage_from_slice("test uncorrected", &pixels).unwrap();
        let grad_buf = ctx
            .storage_from_slice("test grad corrected", &grad)
            .unwrap();
        let out = color.apply(&ctx, image(&buf, w, h), CORRECTION).unwrap();
        assert_eq!((out.width, out.height), (w, h));
        let corrected = read(&ctx, out.buffer, n);
        let back = color
            .backward(&ctx, image(&buf, w, h), &grad_buf, CORRECTION)
            .unwrap();
        let back = read(&ctx, back, n);
        let (mut clamped, mut worst) = (0, 0.0f32);
        for i in 0..n as usize {
            let (p, g) = (pixels[i], grad[i]);
            let host = CORRECTION.apply([p[0], p[1], p[2]]);
            // Alpha and its gradient pass through, exactly.
            assert_eq!(corrected[i][3], p[3]);
            assert_eq!(back[i][3], g[3]);
            for c in 0..3 {
                worst = worst.max((corrected[i][c] - host[c]).abs());
                let z = CORRECTION.gain[c] * p[c] + CORRECTION.offset[c];
                // A fused multiply-add may decide the clamp differently
                // within an ulp of its edges: skip those.
                if z.abs() < 1e-5 || (z - 1.0).abs() < 1e-5 {
                    continue;
                }
                if z > 0.0 && z < 1.0 {
                    let want = CORRECTION.gain[c] * g[c];
                    assert!((back[i][c] - want).abs() <= 1e-6, "{i}/{c}");
                } else {
                    clamped += 1;
                    assert_eq!(back[i][c], 0.0, "{i}/{c}: clamped value");
                }
            }
        }
        eprintln!("{w}×{h}: max |GPU − host| {worst:.2e}, {clamped} clamped values");
        assert!(worst <= 1e-6, "{w}×{h}: {worst}");
        assert!(clamped > 0, "the case must clamp some values");
    }
}

/// A reference and an uncorrected render whose corrected values lie
/// ≥ 0.05 from the reference (no L1 kink within the steps) and ≥ 0.02 from
/// the clamp's edges 0 and 1 (some outside [0, 1], clamped).
fn smooth_case(w: u32, h: u32, seed: u64) -> (Vec<u32>, Vec<[f32; 4]>) {
    let (packed, target) = case(w, h, seed, Some(0.05));
    let render = target
        .iter()
        .map(|x| {
            let mut c = *x;
            for (ch, v) in c.iter_mut().take(3).enumerate() {
                // Away from the edges, in the direction away from the
                // reference (which lies in [20/255, 235/255]).
                let z = if v.abs() < 0.02 {
                    -0.03
                } else if (*v - 1.0).abs() < 0.02 {
                    1.03
                } else {
                    *v
                };
                *v = (z - CORRECTION.offset[ch]) / CORRECTION.gain[ch];
            }
            c
        })
        .collect();
    (packed, render)
}

/// The loss of `render` corrected by `correction`, and the buffers of its
/// gradient: `∂L/∂corrected` copied out, `∂L/∂render` read back.
struct Corrected {
    loss: f64,
    grad_corrected: GpuBuffer,
    grad_render: Vec<[f32; 4]>,
}

fn corrected_loss(
    ctx: &GpuContext,
    color: &mut ColorCorrect,
    loss: &mut ImageLoss,
    reference: &ReferenceFrame,
    render: &GpuBuffer,
    correction: ColorCorrection,
) -> Corrected {
    let (w, h) = (reference.width(), reference.height());
    let terms = LossTermsBuffer::new(ctx, "test loss terms", 1).unwrap();
    let out = color.apply(ctx, image(render, w, h), correction).unwrap();
    let grad = loss.evaluate(ctx, out, reference, &terms, 0).unwrap();
    let grad_corrected = ctx
        .storage_from_slice("test grad corrected", &read(ctx, grad, w * h))
        .unwrap();
    let back = color
        .backward(ctx, image(render, w, h), &grad_corrected, correction)
        .unwrap();
    Corrected {
        loss: f64::from(terms.read(ctx).unwrap()[0].loss),
        grad_render: read(ctx, back, w * h),
        grad_corrected,
    }
}

fn measure(
    ctx: &GpuContext,
    color: &mut ColorCorrect,
    loss: &mut ImageLoss,
    reference: &ReferenceFrame,
    render: &[[f32; 4]],
    correction: ColorCorrection,
) -> f64 {
    let (w, h) = (reference.width(), reference.height());
    let buf = ctx.storage_from_slice("test render", render).unwrap();
    let terms = LossTermsBuffer::new(ctx, "test loss terms", 1).unwrap();
    let out = color.apply(ctx, image(&buf, w, h), correction).unwrap();
    loss.measure(ctx, out, reference, &terms, 0).unwrap();
    f64::from(terms.read(ctx).unwrap()[0].loss)
}

fn check(what: &str, analytic: f64, fd: f64) -> f64 {
    let err = (fd - analytic).abs() / analytic.abs().max(1e-6);
    eprintln!("{what}: FD {fd:.6e}, gradient {analytic:.6e}, rel err {err:.2e}");
    err
}

#[test]
fn the_gradient_through_the_correction_matches_finite_differences() {
    let ctx = common::gpu();
    let mut color = ColorCorrect::new(&ctx).unwrap();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let (w, h) = (33u32, 21u32);
    let (packed, render) = smooth_case(w, h, 31);
    let reference = ReferenceFrame::from_packed(&ctx, "test reference", w, h, &packed).unwrap();
    let buf = ctx.storage_from_slice("test render", &render).unwrap();
    let base = corrected_loss(&ctx, &mut color, &mut loss, &reference, &buf, CORRECTION);
    let mut rng = Rng(7);
    // Central differences at 0.01 and 0.005, Richardson-combined: SSIM's
    // curvature leaves ~1e-5 in a plain central difference at 0.01, as much
    // as a small directional slope. Steps of 0.01 keep the corrected values
    // on their side of the L1 kink and of the clamp's edges (smooth_case).
    let step = 1e-2;
    let mut worst = 0.0f64;
    // ∂L/∂render along random directions (what the rasterizer receives).
    for dir in 0..4 {
        let d: Vec<[f32; 4]> = (0..w * h)
            .map(|_| std::array::from_fn(|_| rng.range(-1.0, 1.0)))
            .collect();
        let fd = richardson(
            |t| {
                let shifted: Vec<[f32; 4]> = render
                    .iter()
                    .zip(&d)
                    .map(|(x, d)| std::array::from_fn(|c| x[c] + t as f32 * d[c]))
                    .collect();
                measure(
                    &ctx, &mut color, &mut loss, &reference, &shifted, CORRECTION,
                )
            },
            step,
        );
        let analytic: f64 = base
            .grad_render
            .iter()
            .zip(&d)
            .map(|(g, d)| {
                (0..4)
                    .map(|c| f64::from(g[c]) * f64::from(d[c]))
                    .sum::<f64>()
            })
            .sum();
        worst = worst.max(check(&format!("direction {dir}"), analytic, fd));
    }
    // ∂L/∂gain and ∂L/∂offset per channel (what `physfit align` fits).
    let (d_gain, d_offset) =
        gain_offset_gradient(&ctx, image(&buf, w, h), &base.grad_corrected, CORRECTION).unwrap();
    for c in 0..3 {
        for (name, analytic) in [("gain", d_gain[c]), ("offset", d_offset[c])] {
            let fd = richardson(
                |t| {
                    let mut k = CORRECTION;
                    match name {
                        "gain" => k.gain[c] += t as f32,
                        _ => k.offset[c] += t as f32,
                    }
                    measure(&ctx, &mut color, &mut loss, &reference, &render, k)
                },
                step,
            );
            worst = worst.max(check(&format!("{name}[{c}]"), analytic, fd));
        }
    }
    assert!(base.loss > 0.0);
    assert!(worst <= 1e-2, "max rel err {worst:.3e}");
}

#[test]
fn a_reference_recorded_through_a_correction_is_matched_only_with_it() {
    let ctx = common::gpu();
    let (w, h) = (48u32, 36u32);
    let cam = camera_looking_z(w, h, Vec3::ZERO);
    let bg = [0.3, 0.5, 0.2];
    let g = random_gaussians(&mut Rng(12), 40, 0, 1.0);
    let mut raster = Rasterizer::new(&ctx).unwrap();
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let out = raster.render(&ctx, &splats, &cam, bg).unwrap();
    let rendered = Frame {
        width: w,
        height: h,
        pixels: raster.read_image(&ctx, &out).unwrap(),
    };
    // The "video": the render as a camera with CORRECTION records it, 8-bit.
    let recorded = CORRECTION.apply_to_frame(rendered.clone());
    let reference = ReferenceFrame::upload(&ctx, "test reference", &recorded).unwrap();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let mut color = ColorCorrect::new(&ctx).unwrap();
    let terms = LossTermsBuffer::new(&ctx, "test loss terms", 2).unwrap();
    let render = RenderedImage::of_render(&raster, &out).unwrap();
    loss.measure(&ctx, render, &reference, &terms, 0).unwrap();
    let corrected = color.apply(&ctx, render, CORRECTION).unwrap();
    loss.measure(&ctx, corrected, &reference, &terms, 1)
        .unwrap();
    // The GPU's corrected render is the host's, to f32 rounding.
    let gpu = read(&ctx, corrected.buffer, w * h);
    for (a, b) in gpu.iter().zip(&recorded.pixels) {
        for c in 0..4 {
            assert!((a[c] - b[c]).abs() <= 1e-6, "{a:?} vs {b:?}");
        }
    }
    let t = terms.read(&ctx).unwrap();
    let (without, with) = (t[0], t[1]);
    eprintln!(
        "without the correction: loss {:.3e}, PSNR {:.1} dB; with it: loss {:.3e}, PSNR {:.1} dB",
        without.loss,
        without.psnr(),
        with.loss,
        with.psnr()
    );
    // With it, only the reference's 8-bit rounding remains (≤ 0.5/255).
    assert!(with.l1 <= 0.5 / 255.0 + 1e-6, "{with:?}");
    assert!(with.psnr() > 50.0, "{with:?}");
    assert!(without.psnr() < 30.0, "{without:?}");
    assert!(without.loss > 20.0 * with.loss, "{without:?} vs {with:?}");
}

#[test]
fn bad_corrections_and_short_gradients_are_typed_errors() {
    let ctx = common::gpu();
    let mut color = ColorCorrect::new(&ctx).unwrap();
    let (w, h) = (9u32, 5u32);
    let buf = ctx
        .storage_from_slice("test render", &random_pixels(w * h, 3))
        .unwrap();
    for bad in [
        ColorCorrection {
            gain: [1.0, 0.0, 1.0],
            offset: [0.0; 3],
        },
        ColorCorrection {
            gain: [1.0, 1.0, -2.0],
            offset: [0.0; 3],
        },
        ColorCorrection {
            gain: [1.0; 3],
            offset: [f32::NAN, 0.0, 0.0],
        },
    ] {
        let err = color.apply(&ctx, image(&buf, w, h), bad).err().unwrap();
        assert!(
            matches!(err, LossError::InvalidColorCorrection { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("color_correction"), "{err}");
    }
    let short = ctx
        .storage_from_slice("test short gradient", &random_pixels(w * h - 1, 4))
        .unwrap();
    let err = color
        .backward(&ctx, image(&buf, w, h), &short, CORRECTION)
        .err()
        .unwrap();
    assert!(matches!(err, LossError::GradientBuffer { .. }), "{err}");
    assert!(err.to_string().contains("test short gradient"), "{err}");
    let err = gain_offset_gradient(&ctx, image(&buf, w, h), &short, CORRECTION).unwrap_err();
    assert!(matches!(err, LossError::GradientBuffer { .. }), "{err}");
    let err = color
        .apply(&ctx, image(&buf, w + 1, h), CORRECTION)
        .err()
        .unwrap();
    assert!(matches!(err, LossError::RenderBuffer { .. }), "{err}");
    let err = color
        .apply(&ctx, image(&buf, 0, h), CORRECTION)
        .err()
        .unwrap();
    assert!(matches!(err, LossError::EmptyImage { .. }), "{err}");
}
