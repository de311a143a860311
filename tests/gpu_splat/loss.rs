//! The GPU image loss (src/loss/) against its f64 twin
//! (src/reference/loss.rs) and finite differences of itself: terms, SSIM,
//! `∂L/∂pixel` per component; identical images; sizes that are not
//! multiples of the workgroup or narrower than the window; workspace reuse
//! and determinism; typed errors; and the gradient image fed to the
//! rasterizer's backward (docs/design.md § Loss, parameters, fit; § Verification 3).

use glam::Vec3;
use physfit::gpu::{GpuBuffer, GpuContext};
use physfit::io::Frame;
use physfit::loss::{
    unpack_rgba8, ImageLoss, LossError, LossTerms, LossTermsBuffer, LossWeights, ReferenceFrame,
    RenderedImage,
};
use physfit::reference::loss::{
    image_loss, image_loss_gradient, ImageLoss64, LossWeights64, Rgb64,
};
use physfit::splat::{Rasterizer, SplatBuffers};

use crate::common;
use crate::support::{camera_looking_z, random_gaussians, random_u32s, Rng};

/// A random packed reference and a render that differs from its decoded
/// values by `margin..margin + 0.2` in every channel (away from the L1 kink
/// for finite differences), or equals them when `margin` is `None`.
pub(crate) fn case(
    width: u32,
    height: u32,
    seed: u64,
    margin: Option<f32>,
) -> (Vec<u32>, Vec<[f32; 4]>) {
    let n = (width * height) as usize;
    // Bytes in 20..235, so the render stays within [0, 1] around them.
    let packed: Vec<u32> = random_u32s(n, seed)
        .iter()
        .map(|&r| {
            let b = |s: u32| 20 + ((r >> s) & 0xff) * 215 / 255;
            b(0) | (b(8) << 8) | (b(16) << 16) | (b(24) << 24)
        })
        .collect();
    let mut rng = Rng(seed ^ 0x5eed);
    let render = packed
        .iter()
        .map(|&p| {
            let y = unpack_rgba8(p);
            let mut x = y;
            if let Some(m) = margin {
                for v in x.iter_mut().take(3) {
                    let d = m + 0.2 * rng.next();
                    *v += if rng.next() < 0.5 { -d } else { d };
                }
            }
            x[3] = rng.next(); // alpha: ignored by the loss
            x
        })
        .collect();
    (packed, render)
}

pub(crate) struct GpuResult {
    pub(crate) terms: LossTerms,
    pub(crate) grad: Vec<[f32; 4]>,
}

fn upload_render(ctx: &GpuContext, render: &[[f32; 4]]) -> GpuBuffer {
    ctx.storage_from_slice("test loss render", render).unwrap()
}

fn gpu_loss(
    ctx: &GpuContext,
    loss: &mut ImageLoss,
    (width, height): (u32, u32),
    packed: &[u32],
    render: &[[f32; 4]],
) -> GpuResult {
    let reference =
        ReferenceFrame::from_packed(ctx, "test reference", width, height, packed).unwrap();
    gpu_loss_against(ctx, loss, &reference, render)
}

/// The GPU loss and gradient of `render` against an uploaded reference
/// (with its mask, if it has one).
pub(crate) fn gpu_loss_against(
    ctx: &GpuContext,
    loss: &mut ImageLoss,
    reference: &ReferenceFrame,
    render: &[[f32; 4]],
) -> GpuResult {
    let (width, height) = (reference.width(), reference.height());
    let image = upload_render(ctx, render);
    let terms = LossTermsBuffer::new(ctx, "test loss terms", 1).unwrap();
    let image = RenderedImage {
        buffer: &image,
        width,
        height,
    };
    let grad_buf = loss.evaluate(ctx, image, reference, &terms, 0).unwrap();
    let mut grad: Vec<[f32; 4]> = ctx.read_buffer(grad_buf).unwrap();
    grad.truncate((width * height) as usize);
    GpuResult {
        terms: terms.read(ctx).unwrap()[0],
        grad,
    }
}

pub(crate) fn twin_images(w: u32, h: u32, packed: &[u32], render: &[[f32; 4]]) -> (Rgb64, Rgb64) {
    let reference: Vec<[f32; 4]> = packed.iter().map(|&p| unpack_rgba8(p)).collect();
    (
        Rgb64::from_rgba(w as usize, h as usize, render),
        Rgb64::from_rgba(w as usize, h as usize, &reference),
    )
}

pub(crate) fn rel(a: f64, b: f64, floor: f64) -> f64 {
    (a - b).abs() / b.abs().max(floor)
}

#[test]
fn gpu_loss_and_gradient_match_the_f64_twin() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    // Sizes: a block not a multiple of 256 pixels, images narrower or
    // shorter than the 11-px window, one pixel, and one spanning several
    // workgroups of rows.
    let sizes = [(37u32, 23u32), (3, 40), (45, 2), (1, 1), (64, 17)];
    let mut worst_terms = 0.0f64;
    let mut worst_grad = 0.0f64;
    for (k, &(w, h)) in sizes.iter().enumerate() {
        let (packed, render) = case(w, h, 100 + k as u64, Some(0.0));
        let gpu = gpu_loss(&ctx, &mut loss, (w, h), &packed, &render);
        let (x, y) = twin_images(w, h, &packed, &render);
        let twin = image_loss(&x, &y, LossWeights64::default());
        let twin_grad = image_loss_gradient(&x, &y, LossWeights64::default());
        let (e_terms, e_grad) = twin_errors(&format!("{w}×{h}"), &gpu, &twin, &twin_grad);
        worst_terms = worst_terms.max(e_terms);
        worst_grad = worst_grad.max(e_grad);
    }
    assert!(worst_terms <= 1e-5, "terms: max rel err {worst_terms:.3e}");
    assert!(worst_grad <= 1e-4, "gradient: max rel err {worst_grad:.3e}");
}

/// The largest relative errors of the GPU's terms and gradient against the
/// twin's (terms: floor 1e-6, they are O(0.01–1) here; gradient: per
/// component, floor 1e-3 × the largest twin component); the alpha gradient
/// must be 0.
pub(crate) fn twin_errors(
    label: &str,
    gpu: &GpuResult,
    twin: &ImageLoss64,
    twin_grad: &[[f64; 3]],
) -> (f64, f64) {
    let t = gpu.terms;
    let errs = [
        rel(t.loss as f64, twin.loss, 1e-6),
        rel(t.l1 as f64, twin.l1, 1e-6),
        rel(t.dssim as f64, 1.0 - twin.ssim, 1e-6),
        rel(t.ssim(), twin.ssim, 1e-6),
        rel(t.mse as f64, twin.mse, 1e-6),
        rel(t.psnr(), twin.psnr(), 1e-6),
    ];
    let e_terms = errs.iter().copied().fold(0.0, f64::max);
    let scale = twin_grad
        .iter()
        .flatten()
        .fold(0.0f64, |m, g| m.max(g.abs()));
    let mut e_grad = 0.0f64;
    for (g, tg) in gpu.grad.iter().zip(twin_grad) {
        for c in 0..3 {
            e_grad = e_grad.max(rel(g[c] as f64, tg[c], 1e-3 * scale));
        }
        assert_eq!(g[3], 0.0, "alpha gradient");
    }
    eprintln!(
        "{label}: loss {:.6} (twin {:.6}), SSIM {:.6}, PSNR {:.2} dB; max rel err terms {e_terms:.2e}, gradient {e_grad:.2e} (floor {:.1e})",
        t.loss,
        twin.loss,
        t.ssim(),
        t.psnr(),
        1e-3 * scale
    );
    (e_terms, e_grad)
}

#[test]
fn gpu_ssim_equals_a_direct_f64_evaluation() {
    // The SSIM term alone, on images far from equal (SSIM well below 1).
    let ctx = common::gpu();
    let weights = LossWeights { l1: 0.0, ssim: 1.0 };
    let mut loss = ImageLoss::new(&ctx, weights).unwrap();
    let (w, h) = (29, 31);
    let (packed, render) = case(w, h, 7, Some(0.1));
    let gpu = gpu_loss(&ctx, &mut loss, (w, h), &packed, &render);
    let (x, y) = twin_images(w, h, &packed, &render);
    let twin = image_loss(&x, &y, LossWeights64 { l1: 0.0, ssim: 1.0 });
    let err = (gpu.terms.ssim() - twin.ssim).abs();
    eprintln!(
        "SSIM {:.7} vs f64 {:.7}: |diff| {err:.2e}",
        gpu.terms.ssim(),
        twin.ssim
    );
    assert!(err <= 1e-6, "{err:e}");
    assert!((gpu.terms.loss as f64 - (1.0 - twin.ssim)).abs() <= 1e-6);
}

#[test]
fn identical_images_give_exactly_zero_loss_and_gradient() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    for (w, h) in [(37u32, 23u32), (300, 7), (1, 1)] {
        let (packed, render) = case(w, h, 3, None);
        let gpu = gpu_loss(&ctx, &mut loss, (w, h), &packed, &render);
        let t = gpu.terms;
        assert_eq!(
            (t.loss, t.l1, t.dssim, t.mse),
            (0.0, 0.0, 0.0, 0.0),
            "{w}×{h}"
        );
        assert_eq!(t.ssim(), 1.0);
        assert_eq!(t.psnr(), f64::INFINITY, "PSNR of identical images");
        let nonzero = gpu.grad.iter().flatten().filter(|&&g| g != 0.0).count();
        assert_eq!(nonzero, 0, "{w}×{h}: {nonzero} nonzero gradient components");
    }
}

#[test]
fn gpu_gradient_matches_finite_differences_of_the_gpu_loss() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let (w, h) = (33u32, 21u32);
    // Render ≥ 0.05 away from the reference, steps ≤ 0.01: no |·| kink crossed.
    let (packed, render) = case(w, h, 11, Some(0.05));
    let reference = ReferenceFrame::from_packed(&ctx, "test reference", w, h, &packed).unwrap();
    let worst = finite_difference_error(&ctx, &mut loss, &reference, &render);
    assert!(worst <= 1e-2, "max rel err {worst:.3e}");
}

/// The largest relative error between central differences of the GPU loss
/// (step 0.01 along 4 random directions) and the GPU gradient along them.
pub(crate) fn finite_difference_error(
    ctx: &GpuContext,
    loss: &mut ImageLoss,
    reference: &ReferenceFrame,
    render: &[[f32; 4]],
) -> f64 {
    let (w, h) = (reference.width(), reference.height());
    let base = gpu_loss_against(ctx, loss, reference, render);
    let terms = LossTermsBuffer::new(ctx, "test loss terms", 2).unwrap();
    let mut rng = Rng(99);
    let step = 1e-2f32;
    let mut worst = 0.0f64;
    for dir in 0..4 {
        let d: Vec<[f32; 4]> = (0..w * h)
            .map(|_| {
                [
                    rng.range(-1.0, 1.0),
                    rng.range(-1.0, 1.0),
                    rng.range(-1.0, 1.0),
                    rng.range(-1.0, 1.0),
                ]
            })
            .collect();
        let shifted = |sign: f32| -> Vec<[f32; 4]> {
            render
                .iter()
                .zip(&d)
                .map(|(x, d)| std::array::from_fn(|c| x[c] + sign * step * d[c]))
                .collect()
        };
        for (slot, sign) in [(0u32, 1.0f32), (1, -1.0)] {
            let img = upload_render(ctx, &shifted(sign));
            loss.measure(
                ctx,
                RenderedImage {
                    buffer: &img,
                    width: w,
                    height: h,
                },
                reference,
                &terms,
                slot,
            )
            .unwrap();
        }
        let t = terms.read(ctx).unwrap();
        let fd = (t[0].loss as f64 - t[1].loss as f64) / (2.0 * step as f64);
        let analytic: f64 = base
            .grad
            .iter()
            .zip(&d)
            .map(|(g, d)| (0..4).map(|c| g[c] as f64 * d[c] as f64).sum::<f64>())
            .sum();
        let err = (fd - analytic).abs() / analytic.abs().max(1e-6);
        eprintln!("direction {dir}: FD {fd:.6e}, gradient·d {analytic:.6e}, rel err {err:.2e}");
        worst = worst.max(err);
    }
    worst
}

#[test]
fn workspace_reuse_across_sizes_is_deterministic() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let big = (70u32, 40u32);
    let small = (13u32, 9u32);
    let (pb, rb) = case(big.0, big.1, 21, Some(0.0));
    let (ps, rs) = case(small.0, small.1, 22, Some(0.0));
    let first_big = gpu_loss(&ctx, &mut loss, big, &pb, &rb);
    let first_small = gpu_loss(&ctx, &mut loss, small, &ps, &rs);
    let again_big = gpu_loss(&ctx, &mut loss, big, &pb, &rb);
    let again_small = gpu_loss(&ctx, &mut loss, small, &ps, &rs);
    let mut fresh = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let fresh_small = gpu_loss(&ctx, &mut fresh, small, &ps, &rs);
    // No atomics anywhere: the same inputs give the same bits.
    assert_eq!(first_big.terms, again_big.terms);
    assert_eq!(first_big.grad, again_big.grad);
    assert_eq!(first_small.terms, again_small.terms);
    assert_eq!(first_small.grad, again_small.grad);
    assert_eq!(first_small.terms, fresh_small.terms);
    assert_eq!(first_small.grad, fresh_small.grad);
}

#[test]
fn terms_go_to_their_slots_and_measure_agrees_with_evaluate() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let (w, h) = (20u32, 12u32);
    let (packed, render) = case(w, h, 5, Some(0.0));
    let reference = ReferenceFrame::from_packed(&ctx, "test reference", w, h, &packed).unwrap();
    let img = upload_render(&ctx, &render);
    let same = upload_render(
        &ctx,
        &packed.iter().map(|&p| unpack_rgba8(p)).collect::<Vec<_>>(),
    );
    let terms = LossTermsBuffer::new(&ctx, "test loss terms", 3).unwrap();
    let image = |buffer| RenderedImage {
        buffer,
        width: w,
        height: h,
    };
    loss.evaluate(&ctx, image(&img), &reference, &terms, 2)
        .unwrap();
    loss.measure(&ctx, image(&img), &reference, &terms, 0)
        .unwrap();
    loss.measure(&ctx, image(&same), &reference, &terms, 1)
        .unwrap();
    let t = terms.read(&ctx).unwrap();
    assert_eq!(t.len(), 3);
    assert_eq!(t[0], t[2]);
    assert!(t[0].loss > 0.0);
    assert_eq!(t[1], LossTerms::default());
    let err = loss
        .measure(&ctx, image(&img), &reference, &terms, 3)
        .unwrap_err();
    assert!(
        matches!(
            err,
            LossError::SlotOutOfRange {
                slot: 3,
                slots: 3,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn bad_inputs_are_typed_errors_naming_both_sizes() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let (packed, render) = case(37, 23, 1, Some(0.0));
    let reference = ReferenceFrame::from_packed(&ctx, "test reference", 37, 23, &packed).unwrap();
    let img = upload_render(&ctx, &render);
    let terms = LossTermsBuffer::new(&ctx, "test loss terms", 1).unwrap();
    let err = loss
        .evaluate(
            &ctx,
            RenderedImage {
                buffer: &img,
                width: 36,
                height: 23,
            },
            &reference,
            &terms,
            0,
        )
        .map(|_| ())
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LossError::SizeMismatch { .. }), "{msg}");
    assert!(msg.contains("36×23") && msg.contains("37×23"), "{msg}");

    // A render buffer smaller than its stated size.
    let short = upload_render(&ctx, &render[..100]);
    let err = loss
        .measure(
            &ctx,
            RenderedImage {
                buffer: &short,
                width: 37,
                height: 23,
            },
            &reference,
            &terms,
            0,
        )
        .unwrap_err();
    assert!(matches!(err, LossError::RenderBuffer { .. }), "{err}");

    // Frames: pixel count and empty size.
    let frame = Frame {
        width: 4,
        height: 3,
        pixels: vec![[0.5; 4]; 11],
    };
    let err = ReferenceFrame::upload(&ctx, "bad frame", &frame)
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(err, LossError::FramePixels { found: 11, .. }),
        "{err}"
    );
    let err = ReferenceFrame::from_packed(&ctx, "empty", 0, 3, &[])
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(err, LossError::EmptyImage { .. }), "{err}");

    let err = ImageLoss::new(
        &ctx,
        LossWeights {
            l1: f32::NAN,
            ssim: 0.9,
        },
    )
    .map(|_| ())
    .unwrap_err();
    assert!(matches!(err, LossError::InvalidWeights { .. }), "{err}");
}

#[test]
fn frames_upload_as_8_bit_and_decode_to_value_over_255() {
    let ctx = common::gpu();
    let (w, h) = (6u32, 5u32);
    let pixels: Vec<[f32; 4]> = common::gradient_image(w, h);
    let frame = Frame {
        width: w,
        height: h,
        pixels: pixels.clone(),
    };
    let refs = ReferenceFrame::upload_all(&ctx, "test frames", &[frame.clone(), frame]).unwrap();
    assert_eq!(refs.len(), 2);
    assert_eq!((refs[1].width(), refs[1].height()), (w, h));
    assert_eq!(refs[1].buffer().label(), "test frames 1");
    let back: Vec<u32> = ctx.read_buffer(refs[0].buffer()).unwrap();
    for (p, q) in pixels.iter().zip(&back) {
        let decoded = unpack_rgba8(*q);
        for c in 0..4 {
            assert!((decoded[c] - p[c]).abs() <= 0.5 / 255.0 + 1e-7);
            assert_eq!(decoded[c], ((p[c] * 255.0).round()) / 255.0);
        }
    }
}

#[test]
fn the_gradient_image_drives_the_rasterizer_backward() {
    // Render → loss → Rasterizer::backward with the loss's own buffer, and
    // the chain's gradient to one splat's SH DC colour against central
    // differences of the GPU loss of re-rendered images (colour enters
    // linearly, so the render stays smooth in it).
    let ctx = common::gpu();
    let (w, h) = (40u32, 30u32);
    let cam = camera_looking_z(w, h, Vec3::ZERO);
    let bg = [0.2, 0.3, 0.4];
    let mut g = random_gaussians(&mut Rng(5), 25, 0, 1.0);
    for sh in &mut g.sh {
        *sh = [
            sh[0].abs() * 0.5 + 0.1,
            sh[1].abs() * 0.5 + 0.1,
            sh[2].abs() * 0.5 + 0.1,
        ];
    }
    let mut raster = Rasterizer::new(&ctx).unwrap();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let terms = LossTermsBuffer::new(&ctx, "test loss terms", 1).unwrap();

    // Reference: the same scene with shifted colours.
    let mut target = g.clone();
    for sh in &mut target.sh {
        sh[0] += 0.15;
        sh[2] -= 0.1;
    }
    let target_splats = SplatBuffers::upload(&ctx, &target).unwrap();
    let out = raster.render(&ctx, &target_splats, &cam, bg).unwrap();
    let ref_pixels = raster.read_image(&ctx, &out).unwrap();
    let reference = ReferenceFrame::upload(
        &ctx,
        "test reference",
        &Frame {
            width: w,
            height: h,
            pixels: ref_pixels,
        },
    )
    .unwrap();

    // The chain gradient, then the component with the largest magnitude.
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let out = raster.render(&ctx, &splats, &cam, bg).unwrap();
    let grad_image = loss
        .evaluate(
            &ctx,
            RenderedImage::of_render(&raster, &out).unwrap(),
            &reference,
            &terms,
            0,
        )
        .unwrap();
    let grads = raster
        .backward(&ctx, &splats, &out, grad_image)
        .unwrap()
        .gradients
        .read(&ctx)
        .unwrap();
    let (best, c) = (0..g.len() * 3)
        .map(|k| (k / 3, k % 3))
        .max_by(|a, b| {
            grads.sh[a.0][a.1]
                .abs()
                .partial_cmp(&grads.sh[b.0][b.1].abs())
                .unwrap()
        })
        .unwrap();
    let mut loss_of = |g: &physfit::scene::Gaussians| -> f64 {
        let splats = SplatBuffers::upload(&ctx, g).unwrap();
        let out = raster.render(&ctx, &splats, &cam, bg).unwrap();
        loss.measure(
            &ctx,
            RenderedImage::of_render(&raster, &out).unwrap(),
            &reference,
            &terms,
            0,
        )
        .unwrap();
        terms.read(&ctx).unwrap()[0].loss as f64
    };
    let analytic = grads.sh[best][c] as f64;
    // A step small next to the colour offsets (few pixels cross an L1
    // kink) but large for f32 loss values.
    let step = 2e-3f32;
    let mut plus = g.clone();
    plus.sh[best][c] += step;
    let mut minus = g.clone();
    minus.sh[best][c] -= step;
    let fd = (loss_of(&plus) - loss_of(&minus)) / (2.0 * step as f64);
    let err = (fd - analytic).abs() / analytic.abs();
    eprintln!(
        "dL/dSH(splat {best}, channel {c}): chain {analytic:.6e}, FD {fd:.6e}, rel err {err:.2e}"
    );
    assert!(err <= 1e-2, "{err:e}");
}
