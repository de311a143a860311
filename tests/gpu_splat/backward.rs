//! GPU backward rasterizer: gradients vs the f64 twin's hand-written reverse
//! mode (all five parameter kinds, both f32 atomic modes), and vs central
//! finite differences of the GPU's own loss on a smooth case (docs/design.md §
//! Verification 3).

use crate::common;

use crate::support::*;
use glam::{Mat3, Vec3};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::reference::splat::{project_all, Camera64, SplatParams64};
use physfit::scene::{Camera, Gaussians};
use physfit::splat::{upload_grad_image, HostGradients, Rasterizer, SplatBuffers, SplatError};

/// Flattens one parameter kind of GPU and twin gradients to (gpu, twin) pairs.
fn kinds(
    gpu: &HostGradients,
    twin: &physfit::reference::splat::SplatGrads64,
) -> Vec<(&'static str, Vec<f32>, Vec<f64>)> {
    vec![
        (
            "means",
            gpu.means.iter().flatten().copied().collect(),
            twin.means.iter().flatten().copied().collect(),
        ),
        (
            "quats",
            gpu.rotations.iter().flatten().copied().collect(),
            twin.quats.iter().flatten().copied().collect(),
        ),
        (
            "log_scales",
            gpu.log_scales.iter().flatten().copied().collect(),
            twin.log_scales.iter().flatten().copied().collect(),
        ),
        (
            "opacity_logits",
            gpu.opacity_logits.clone(),
            twin.opacity_logits.clone(),
        ),
        (
            "sh",
            gpu.sh.iter().flatten().copied().collect(),
            twin.sh.iter().flatten().copied().collect(),
        ),
    ]
}

fn random_grad_image(rng: &mut Rng, pixels: usize) -> Vec<[f32; 4]> {
    (0..pixels)
        .map(|_| {
            [
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
            ]
        })
        .collect()
}

fn compare_with_twin(ctx: &GpuContext, label: &str) {
    let mut rng = Rng(0x5eed);
    let mut g = random_gaussians(&mut rng, 200, 3, 1.2);
    // Every 8th splat nearly opaque (sigmoid(6) = 0.9975): the 0.99 alpha
    // clamp is active near their centres and stacks of them reach the 1e-4
    // transmittance stop, so both rules are exercised against the twin.
    for (i, o) in g.opacity_logits.iter_mut().enumerate() {
        if i % 8 == 0 {
            *o = 6.0;
        }
    }
    // Rotated camera, fx ≠ fy, principal point off centre, partial tiles.
    let rotation = Mat3::from_rotation_y(0.1) * Mat3::from_rotation_z(0.3);
    let cam = Camera {
        width: 64,
        height: 48,
        fx: 54.0,
        fy: 50.0,
        cx: 30.5,
        cy: 25.0,
        rotation,
        translation: -(rotation * Vec3::new(0.05, -0.02, 0.0)),
        near: 0.05,
    };
    let bg = [0.1, 0.2, 0.3];
    // Check that the scene does exercise the clamp and the stop.
    let projected = project_all(&SplatParams64::from(&g), &Camera64::from(&cam));
    let (mut clamped, mut stopped) = (0, 0);
    for py in 0..48 {
        for px in 0..64 {
            let (x, y) = (px as f64 + 0.5, py as f64 + 0.5);
            let mut t = 1.0;
            for s in &projected {
                let a = s.opacity * (-s.mahalanobis_half(x, y)).exp();
                clamped += (a >= 0.99) as usize;
                if a >= 1.0 / 255.0 {
                    t *= 1.0 - a.min(0.99);
                }
            }
            stopped += (t <= 1e-4) as usize;
        }
    }
    assert!(
        clamped > 0 && stopped > 0,
        "clamped {clamped}, stopped {stopped}"
    );
    let grad = random_grad_image(&mut rng, 64 * 48);
    let (_, gpu) = gpu_render_backward(ctx, &g, &cam, bg, &grad);
    let d_rgb: Vec<[f64; 3]> = grad
        .iter()
        .map(|p| [p[0] as f64, p[1] as f64, p[2] as f64])
        .collect();
    let d_alpha: Vec<f64> = grad.iter().map(|p| p[3] as f64).collect();
    let twin = physfit::reference::splat::render_backward(
        &SplatParams64::from(&g),
        &cam,
        bg.map(f64::from),
        &d_rgb,
        &d_alpha,
    );
    for (kind, a, b) in kinds(&gpu, &twin) {
        assert_eq!(a.len(), b.len(), "{kind}");
        assert!(
            a.iter().all(|v| v.is_finite()),
            "{kind}: non-finite GPU gradient"
        );
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let max_diff = a
            .iter()
            .zip(&b)
            .fold(0.0f64, |m, (x, y)| m.max((*x as f64 - y).abs()));
        let norm_diff = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (*x as f64 - y).powi(2))
            .sum::<f64>()
            .sqrt();
        let norm = b.iter().map(|y| y * y).sum::<f64>().sqrt();
        println!(
            "[{label}] {kind}: max |GPU − twin| = {max_diff:.2e} (largest |twin| {scale:.2e}, ratio {:.2e}); ‖diff‖/‖twin‖ = {:.2e}",
            max_diff / scale,
            norm_diff / norm
        );
        assert!(scale > 0.0, "{kind}: twin gradient is all zero");
        assert!(
            max_diff <= 2e-4 * scale,
            "{kind}: max diff {max_diff} vs scale {scale}"
        );
        assert!(
            norm_diff <= 5e-5 * norm,
            "{kind}: relative norm {}",
            norm_diff / norm
        );
    }
}

#[test]
fn backward_matches_twin_native_atomics() {
    let ctx = common::gpu();
    assert!(ctx.caps.float_atomics || !ctx.adapter_info.name.contains("llvmpipe"));
    compare_with_twin(&ctx, &format!("{:?}", ctx.shader_options.atomics));
}

#[test]
fn backward_matches_twin_compare_and_swap_atomics() {
    let ctx = common::gpu_with(GpuOptions {
        force_cas_atomics: true,
    });
    assert_eq!(
        ctx.shader_options.atomics,
        physfit::gpu::AtomicMode::CompareSwap
    );
    compare_with_twin(&ctx, "CompareSwap");
}

fn set(g: &mut Gaussians, kind: &str, i: usize, c: usize, v: f32) -> f32 {
    let slot = match kind {
        "means" => &mut g.means[i][c],
        "quats" => &mut g.rotations[i][c],
        "log_scales" => &mut g.log_scales[i][c],
        "opacity_logits" => &mut g.opacity_logits[i],
        _ => &mut g.sh[i * 16 + c / 3][c % 3],
    };
    std::mem::replace(slot, v)
}

#[test]
fn backward_matches_finite_differences_native_atomics() {
    finite_difference_check(&common::gpu());
}

#[test]
fn backward_matches_finite_differences_compare_and_swap_atomics() {
    finite_difference_check(&common::gpu_with(GpuOptions {
        force_cas_atomics: true,
    }));
}

fn finite_difference_check(ctx: &GpuContext) {
    let (g, cam) = smooth_case();
    let bg = [0.2, 0.1, 0.05];
    let mut rng = Rng(3);
    let weights = random_grad_image(&mut rng, 32 * 24);
    let mut raster = Rasterizer::new(ctx).unwrap();
    let mut loss = |g: &Gaussians| -> f64 {
        let splats = SplatBuffers::upload(ctx, g).unwrap();
        let out = raster.render(ctx, &splats, &cam, bg).unwrap();
        let img = raster.read_image(ctx, &out).unwrap();
        img.iter()
            .zip(&weights)
            .map(|(p, w)| (0..4).map(|c| p[c] as f64 * w[c] as f64).sum::<f64>())
            .sum()
    };
    let grads = {
        let mut r = Rasterizer::new(ctx).unwrap();
        let splats = SplatBuffers::upload(ctx, &g).unwrap();
        let out = r.render(ctx, &splats, &cam, bg).unwrap();
        let grad_buf = upload_grad_image(ctx, &weights).unwrap();
        r.backward(ctx, &splats, &out, &grad_buf)
            .unwrap()
            .gradients
            .read(ctx)
            .unwrap()
    };
    let h = 1e-2f32;
    let mut worst: Vec<(&str, f64, usize)> = Vec::new();
    for (kind, comps) in [
        ("means", 3),
        ("quats", 4),
        ("log_scales", 3),
        ("opacity_logits", 1),
        ("sh", 48),
    ] {
        let mut rows = Vec::new();
        for i in 0..5 {
            for c in 0..comps {
                // SH: a subset of coefficients (one per degree, all channels).
                if kind == "sh" && ![0, 1, 2, 3, 5, 6, 7, 17, 18, 19, 45, 46, 47].contains(&c) {
                    continue;
                }
                let mut gp = g.clone();
                let x = set(&mut gp, kind, i, c, 0.0);
                set(&mut gp, kind, i, c, x + h);
                let plus = loss(&gp);
                set(&mut gp, kind, i, c, x - h);
                let minus = loss(&gp);
                let fd = (plus - minus) / (2.0 * h as f64);
                let analytic = match kind {
                    "means" => grads.means[i][c],
                    "quats" => grads.rotations[i][c],
                    "log_scales" => grads.log_scales[i][c],
                    "opacity_logits" => grads.opacity_logits[i],
                    _ => grads.sh[i * 16 + c / 3][c % 3],
                } as f64;
                rows.push((fd, analytic));
            }
        }
        let scale = rows.iter().fold(0.0f64, |m, r| m.max(r.0.abs()));
        let mut max_rel = 0.0f64;
        let mut checked = 0;
        for (fd, an) in &rows {
            // Well above the f32 noise of the loss (~1e-5 / 2h ≈ 1e-3).
            if fd.abs() >= 0.02 * scale && fd.abs() > 1e-2 {
                max_rel = max_rel.max((an - fd).abs() / fd.abs());
                checked += 1;
            }
        }
        println!("[{:?}] {kind}: {checked}/{} components checked, max relative error vs central FD (h = {h}) {max_rel:.2e}", ctx.shader_options.atomics, rows.len());
        worst.push((kind, max_rel, checked));
    }
    for (kind, rel, checked) in worst {
        assert!(checked > 0, "{kind}: nothing checked");
        assert!(rel <= 1e-2, "{kind}: relative error {rel}");
    }
}

#[test]
fn backward_with_non_finite_splats_is_finite_and_zero_for_them() {
    let ctx = common::gpu();
    let mut rng = Rng(21);
    let mut g = random_gaussians(&mut rng, 40, 1, 1.0);
    g.means[3] = [f32::NAN, 0.0, 3.0];
    g.rotations[4] = [0.0; 4];
    g.log_scales[5] = [f32::INFINITY, 0.0, 0.0];
    g.opacity_logits[6] = f32::NAN;
    g.sh[7 * 4 + 2] = [f32::NEG_INFINITY, 0.0, 0.0];
    g.means[8] = [0.0, 0.0, -2.0]; // behind the camera
    let cam = camera_looking_z(48, 40, Vec3::ZERO);
    let grad = random_grad_image(&mut rng, 48 * 40);
    let (img, grads) = gpu_render_backward(&ctx, &g, &cam, [0.0; 3], &grad);
    assert!(img.iter().flatten().all(|v| v.is_finite()));
    let all: Vec<f32> = grads
        .means
        .iter()
        .flatten()
        .chain(grads.rotations.iter().flatten())
        .chain(grads.log_scales.iter().flatten())
        .chain(&grads.opacity_logits)
        .chain(grads.sh.iter().flatten())
        .copied()
        .collect();
    assert!(all.iter().all(|v| v.is_finite()), "non-finite gradient");
    for i in 3..=8 {
        assert_eq!(grads.means[i], [0.0; 3], "splat {i}");
        assert_eq!(grads.rotations[i], [0.0; 4], "splat {i}");
        assert_eq!(grads.opacity_logits[i], 0.0, "splat {i}");
    }
    assert!(grads.means.iter().flatten().any(|v| *v != 0.0));
}

/// Largest |a − b| over one gradient kind, relative to the largest |b| of
/// that kind (a per-kind floor: a component far below the kind's scale is a
/// sum that cancelled, whose own relative error says nothing).
fn max_scaled_difference(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, v| m.max(f64::from(v.abs())));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max(f64::from((x - y).abs())));
    if scale == 0.0 {
        diff
    } else {
        diff / scale
    }
}

fn flat(g: &HostGradients) -> [(&'static str, Vec<f32>); 5] {
    [
        ("means", g.means.iter().flatten().copied().collect()),
        ("quats", g.rotations.iter().flatten().copied().collect()),
        (
            "log_scales",
            g.log_scales.iter().flatten().copied().collect(),
        ),
        ("opacity_logits", g.opacity_logits.clone()),
        ("sh", g.sh.iter().flatten().copied().collect()),
    ]
}

#[test]
fn one_rasterizer_back_propagates_alternating_frames_like_fresh_ones() {
    // As the forward test of the same name (tests/gpu_splat/forward.rs), through
    // the backward: the reused 2D-gradient accumulator must be cleared each
    // time and the reused parameter gradients fully rewritten. Images must be
    // equal bit for bit; gradients only to 1e-6 of each kind's largest
    // component, because blend_adjoint sums every splat's per-tile
    // contributions with f32 atomics, whose order (and so the last bits of
    // the sum) changes from run to run with the driver's threads (lavapipe
    // runs workgroups on several; a GPU's atomics are unordered too). 1e-6
    // is ~8 f32 ulps of the largest component: far below any real error (a
    // stale accumulator doubles a gradient) and above the measured
    // reordering noise, printed below.
    let ctx = common::gpu();
    let mut shared = Rasterizer::new(&ctx).unwrap();
    let mut rng = Rng(41);
    let mut worst = 0.0f64;
    for frame in alternating_frames() {
        let pixels = (frame.camera.width * frame.camera.height) as usize;
        let grad = random_grad_image(&mut rng, pixels);
        let grad_buf = upload_grad_image(&ctx, &grad).unwrap();
        let splats = SplatBuffers::upload(&ctx, &frame.gaussians).unwrap();
        let out = shared
            .render(&ctx, &splats, &frame.camera, frame.background)
            .unwrap();
        let image = shared.read_image(&ctx, &out).unwrap();
        let got = shared
            .backward(&ctx, &splats, &out, &grad_buf)
            .unwrap()
            .gradients
            .read(&ctx)
            .unwrap();
        let (want_image, want) = gpu_render_backward(
            &ctx,
            &frame.gaussians,
            &frame.camera,
            frame.background,
            &grad,
        );
        assert!(image == want_image, "{}: images differ", frame.name);
        assert_eq!(got.means.len(), frame.gaussians.len(), "{}", frame.name);
        assert_eq!(got.sh.len(), frame.gaussians.sh.len(), "{}", frame.name);
        for ((kind, a), (_, b)) in flat(&got).iter().zip(flat(&want).iter()) {
            let d = max_scaled_difference(a, b);
            println!(
                "{}: {kind}: max |shared − fresh| / max |fresh| = {d:.2e}",
                frame.name
            );
            // Float atomics sum the per-tile contributions in a
            // run-dependent order: measured at most 8.9e-8 on lavapipe;
            // 1e-5 leaves room for real GPUs, while a buffer left uncleared
            // or stale differs by O(1).
            assert!(d <= 1e-5, "{}: {kind} differs by {d:.2e}", frame.name);
            worst = worst.max(d);
        }
    }
    println!("worst scaled difference {worst:.2e}");
}

#[test]
fn repeated_frames_allocate_no_frame_buffers() {
    // Render + backward of one frame, repeated: after the first, each frame
    // allocates only the small uniform buffers of the sort and scan
    // primitives and the 4-byte staging buffer of the intersection-count
    // readback; live and peak GPU bytes stay put.
    let ctx = common::gpu();
    let mut rng = Rng(43);
    let g = random_gaussians(&mut rng, 300, 3, 1.5);
    let cam = camera_looking_z(128, 96, Vec3::ZERO);
    let grad = upload_grad_image(&ctx, &random_grad_image(&mut rng, 128 * 96)).unwrap();
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let mut r = Rasterizer::new(&ctx).unwrap();
    // Two frames first: the first one's render runs before the gradient
    // buffers exist, so the peak of its transient buffers is lower.
    let mut gradient_bytes = 0;
    for _ in 0..2 {
        let out = r.render(&ctx, &splats, &cam, [0.0; 3]).unwrap();
        let back = r.backward(&ctx, &splats, &out, &grad).unwrap();
        gradient_bytes = back.gradients.sh.size();
    }
    ctx.wait().unwrap();
    let live = ctx.memory.current();
    let peak = ctx.memory.peak();
    let mut per_frame = Vec::new();
    for _ in 0..5 {
        let (count, bytes) = (ctx.memory.allocations(), ctx.memory.allocated_bytes());
        let out = r.render(&ctx, &splats, &cam, [0.0; 3]).unwrap();
        r.backward(&ctx, &splats, &out, &grad).unwrap();
        ctx.wait().unwrap();
        per_frame.push((
            ctx.memory.allocations() - count,
            ctx.memory.allocated_bytes() - bytes,
        ));
        assert_eq!(ctx.memory.current(), live, "live GPU bytes grew");
    }
    println!(
        "per frame after the first two: (buffers, bytes) allocated {per_frame:?}; \
         live {live} bytes, SH gradient buffer {gradient_bytes} bytes"
    );
    assert_eq!(ctx.memory.peak(), peak, "peak GPU bytes grew");
    for &(count, bytes) in &per_frame {
        assert_eq!(count, per_frame[0].0, "allocations per frame changed");
        assert!(bytes <= 4096, "{bytes} bytes allocated in one frame");
    }
}

#[test]
fn a_stale_or_foreign_render_output_is_refused() {
    let ctx = common::gpu();
    let frames = alternating_frames();
    let (a, b) = (&frames[0], &frames[1]);
    let splats_a = SplatBuffers::upload(&ctx, &a.gaussians).unwrap();
    let splats_b = SplatBuffers::upload(&ctx, &b.gaussians).unwrap();
    let pixels = |f: &Frame| (f.camera.width * f.camera.height) as usize;
    let grad_a = upload_grad_image(&ctx, &vec![[1.0; 4]; pixels(a)]).unwrap();
    let grad_b = upload_grad_image(&ctx, &vec![[1.0; 4]; pixels(b)]).unwrap();
    let mut r = Rasterizer::new(&ctx).unwrap();
    let out_a = r.render(&ctx, &splats_a, &a.camera, a.background).unwrap();
    let out_b = r.render(&ctx, &splats_b, &b.camera, b.background).unwrap();

    let stale = |e: SplatError| {
        let msg = e.to_string();
        assert!(
            matches!(
                e,
                SplatError::StaleRender {
                    rendered: 1,
                    latest: 2
                }
            ),
            "expected a stale-frame error, got {msg}"
        );
        assert!(msg.contains("before rendering the next one"), "{msg}");
    };
    stale(r.backward(&ctx, &splats_a, &out_a, &grad_a).err().unwrap());
    stale(r.image(&out_a).err().unwrap());
    stale(r.read_image(&ctx, &out_a).err().unwrap());
    // The latest frame is fine, and may be back-propagated more than once.
    r.backward(&ctx, &splats_b, &out_b, &grad_b).unwrap();
    r.backward(&ctx, &splats_b, &out_b, &grad_b).unwrap();

    // Another rasterizer holds none of its buffers.
    let mut other = Rasterizer::new(&ctx).unwrap();
    let err = other
        .backward(&ctx, &splats_b, &out_b, &grad_b)
        .err()
        .unwrap();
    assert!(matches!(err, SplatError::ForeignRender), "{err}");
    assert!(matches!(
        other.image(&out_b),
        Err(SplatError::ForeignRender)
    ));

    // A render refused before it touches the workspace (bad camera) leaves
    // the latest frame valid; one that fails after (a tile grid over the
    // device's binding limit) retires it.
    let mut bad = b.camera.clone();
    bad.fx = f32::NAN;
    assert!(r.render(&ctx, &splats_b, &bad, b.background).is_err());
    r.image(&out_b).unwrap();
    let mut huge = b.camera.clone();
    (huge.width, huge.height) = (200_000, 200_000);
    let err = r
        .render(&ctx, &splats_b, &huge, b.background)
        .err()
        .unwrap();
    assert!(matches!(err, SplatError::Gpu(_)), "{err}");
    let err = r.image(&out_b).err().unwrap();
    assert!(
        matches!(
            err,
            SplatError::StaleRender {
                rendered: 2,
                latest: 3
            }
        ),
        "{err}"
    );
}
