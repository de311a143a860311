//! The f64 splat twin: forward against gsplat's renders, backward against
//! central finite differences, the alpha clamp, and robustness.

use crate::common;

use glam::{DVec3, Mat3, Vec3};
use physfit::reference::gsplat_case::load_gsplat_case;
use physfit::reference::splat::{
    project_all, project_splat, render, render_backward, Camera64, ProjectedSplat, SplatGrads64,
    SplatParams64,
};
use physfit::scene::Camera;

/// Bounds on |twin − gsplat| per channel (R, G, B, A), over both cases:
/// just above what was measured (max 6.2e-7, 5.9e-7, 7.7e-7, 1.25e-6; mean
/// 3.9e-8, 3.8e-8, 3.5e-8, 8.3e-8). The twin is f64 and deterministic, so
/// the difference is gsplat's own f32 rounding (a few ulps of values ≤ ~1)
/// and does not change from run to run or machine to machine: the bounds
/// need no headroom for noise, and a regression of the twin of a few 1e-7
/// fails them.
const TWIN_MAX: [f64; 4] = [1e-6, 1e-6, 1e-6, 1.5e-6];
const TWIN_MEAN: [f64; 4] = [5e-8, 5e-8, 5e-8, 1e-7];

#[test]
fn forward_matches_gsplat_references() {
    for name in ["tiny_case", "basic_case"] {
        let case = load_gsplat_case(common::fixture(&format!(
            "gsplat_reference/{name}.safetensors"
        )))
        .unwrap();
        let params = SplatParams64::from(&case.gaussians);
        let bg = case.background.map(f64::from);
        let image = render(&params, &case.camera, bg);
        let mut max = [0.0f64; 4];
        let mut sum = [0.0f64; 4];
        for (p, reference) in case.image.iter().enumerate() {
            let ours = [
                image.rgb[p][0],
                image.rgb[p][1],
                image.rgb[p][2],
                image.alpha[p],
            ];
            for ch in 0..4 {
                let d = (ours[ch] - reference[ch] as f64).abs();
                max[ch] = max[ch].max(d);
                sum[ch] += d;
            }
        }
        let mean = sum.map(|s| s / case.image.len() as f64);
        println!(
            "twin vs gsplat {name}: max |diff| (r, g, b, a) = {:.3e} {:.3e} {:.3e} {:.3e}, mean = {:.3e} {:.3e} {:.3e} {:.3e}",
            max[0], max[1], max[2], max[3], mean[0], mean[1], mean[2], mean[3]
        );
        for ch in 0..4 {
            assert!(
                max[ch] <= TWIN_MAX[ch],
                "{name} channel {ch}: max diff {:.3e} > {:.1e}",
                max[ch],
                TWIN_MAX[ch]
            );
            assert!(
                mean[ch] <= TWIN_MEAN[ch],
                "{name} channel {ch}: mean diff {:.3e} > {:.1e}",
                mean[ch],
                TWIN_MEAN[ch]
            );
        }
    }
}

/// SplitMix64: a fixed, dependency-free random stream for test data.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }
}

/// A tilted 32×24 camera, principal point off-centre by a fraction of a pixel.
fn small_camera() -> Camera {
    let rotation = Mat3::from_rotation_y(0.2) * Mat3::from_rotation_x(-0.1);
    let centre = Vec3::new(0.3, -0.2, -5.0);
    Camera {
        width: 32,
        height: 24,
        fx: 32.0,
        fy: 30.0,
        cx: 16.0,
        cy: 12.0,
        rotation,
        translation: -(rotation * centre),
        near: 0.01,
    }
}

/// World point of a camera-space point.
fn world_from_camera(cam: &Camera, p: DVec3) -> [f64; 3] {
    let c = Camera64::from(cam);
    (c.rotation.transpose() * (p - c.translation)).to_array()
}

/// One random splat at camera-space `p`, random rotation, SH degree 3.
fn push_splat(
    params: &mut SplatParams64,
    rng: &mut Rng,
    cam: &Camera,
    p: DVec3,
    log_scale: (f64, f64),
    logit: (f64, f64),
) {
    params.means.push(world_from_camera(cam, p));
    params
        .quats
        .push(std::array::from_fn(|_| rng.uniform(-1.0, 1.0)));
    params.log_scales.push(std::array::from_fn(|_| {
        rng.uniform(log_scale.0, log_scale.1)
    }));
    params.opacity_logits.push(rng.uniform(logit.0, logit.1));
    for k in 0..16 {
        let spread = if k == 0 { 0.8 } else { 0.15 };
        params
            .sh
            .push(std::array::from_fn(|_| rng.uniform(-spread, spread)));
    }
}

fn empty_params(sh_degree: u32) -> SplatParams64 {
    SplatParams64 {
        sh_degree,
        ..Default::default()
    }
}

/// The smooth case for finite differences: five large, moderately opaque
/// splats whose 1/255 contours enclose the whole image (so no pixel is near
/// the cutoff), one of them beyond the field-of-view clamp of the Jacobian.
fn smooth_case() -> (SplatParams64, Camera) {
    let cam = small_camera();
    let mut rng = Rng(7);
    let mut params = empty_params(3);
    for p in [
        DVec3::new(0.1, -0.05, 5.0),
        DVec3::new(-0.3, 0.2, 5.5),
        DVec3::new(0.25, 0.15, 4.6),
        DVec3::new(-0.1, -0.2, 6.2),
    ] {
        push_splat(&mut params, &mut rng, &cam, p, (0.9, 1.3), (-1.0, 0.3));
    }
    // x/z = 0.8 > lim_x = 1.3 · 16/32 = 0.65: the clamped Jacobian branch.
    push_splat(
        &mut params,
        &mut rng,
        &cam,
        DVec3::new(4.24, 0.1, 5.3),
        (1.4, 1.5),
        (0.0, 0.3),
    );
    (params, cam)
}

/// Asserts that `params` is smooth for finite differences: every splat's
/// 1/255 contour encloses the image (σ is convex, so its maximum over the
/// image is at a corner), no alpha clamp, no transmittance stop, no colour
/// at its ≥ 0 clamp, and every Jacobian clamp away from its kink.
fn assert_smooth(params: &SplatParams64, cam: &Camera) -> Vec<ProjectedSplat> {
    let c = Camera64::from(cam);
    let splats = project_all(params, &c);
    assert_eq!(splats.len(), params.len(), "a splat was culled");
    let (w, h) = (c.width as f64, c.height as f64);
    let (lim_x, lim_y) = c.fov_limits();
    let mut t_min = 1.0;
    for s in &splats {
        let worst = [
            (0.5, 0.5),
            (w - 0.5, 0.5),
            (0.5, h - 0.5),
            (w - 0.5, h - 0.5),
        ]
        .iter()
        .map(|&(x, y)| s.mahalanobis_half(x, y))
        .fold(0.0, f64::max);
        assert!(
            worst < (255.0 * s.opacity).ln() - 0.2,
            "splat {} is cut by 1/255",
            s.index
        );
        assert!(
            s.opacity < 0.95,
            "splat {} may hit the alpha clamp",
            s.index
        );
        assert!(
            s.colour.iter().all(|&v| v > 0.02),
            "splat {} colour clamped",
            s.index
        );
        let u = (s.mean2d[0] - c.cx) / c.fx;
        let v = (s.mean2d[1] - c.cy) / c.fy;
        assert!((u.abs() - lim_x).abs() > 0.02 && (v.abs() - lim_y).abs() > 0.02);
        t_min *= 1.0 - s.opacity;
    }
    assert!(t_min > 1e-3, "transmittance could reach the stop");
    for pair in splats.windows(2) {
        assert!(
            pair[1].depth - pair[0].depth > 0.05,
            "depth order must not flip"
        );
    }
    splats
}

/// Fixed random per-pixel loss weights `L = Σ w_rgb·rgb + w_a·alpha`.
struct Loss {
    w_rgb: Vec<[f64; 3]>,
    w_alpha: Vec<f64>,
}

impl Loss {
    fn random(n: usize, seed: u64) -> Loss {
        let mut rng = Rng(seed);
        Loss {
            w_rgb: (0..n)
                .map(|_| std::array::from_fn(|_| rng.uniform(-1.0, 1.0)))
                .collect(),
            w_alpha: (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect(),
        }
    }

    fn eval(&self, params: &SplatParams64, cam: &Camera, bg: [f64; 3]) -> f64 {
        let image = render(params, cam, bg);
        let mut l = 0.0;
        for p in 0..image.alpha.len() {
            for ch in 0..3 {
                l += self.w_rgb[p][ch] * image.rgb[p][ch];
            }
            l += self.w_alpha[p] * image.alpha[p];
        }
        l
    }

    fn grad(&self, params: &SplatParams64, cam: &Camera, bg: [f64; 3]) -> SplatGrads64 {
        render_backward(params, cam, bg, &self.w_rgb, &self.w_alpha)
    }
}

/// Every scalar parameter, by kind: (kind, getter/setter over `params`).
fn parameter_slots(params: &SplatParams64) -> Vec<(&'static str, usize, usize)> {
    let mut slots = Vec::new();
    for i in 0..params.len() {
        (0..3).for_each(|c| slots.push(("means", i, c)));
        (0..4).for_each(|c| slots.push(("quats", i, c)));
        (0..3).for_each(|c| slots.push(("log_scales", i, c)));
        slots.push(("opacity_logits", i, 0));
    }
    for i in 0..params.sh.len() {
        (0..3).for_each(|c| slots.push(("sh", i, c)));
    }
    slots
}

fn slot_mut<'a>(p: &'a mut SplatParams64, kind: &str, i: usize, c: usize) -> &'a mut f64 {
    match kind {
        "means" => &mut p.means[i][c],
        "quats" => &mut p.quats[i][c],
        "log_scales" => &mut p.log_scales[i][c],
        "opacity_logits" => &mut p.opacity_logits[i],
        "sh" => &mut p.sh[i][c],
        _ => unreachable!("unknown parameter kind {kind}"),
    }
}

fn grad_of(g: &SplatGrads64, kind: &str, i: usize, c: usize) -> f64 {
    match kind {
        "means" => g.means[i][c],
        "quats" => g.quats[i][c],
        "log_scales" => g.log_scales[i][c],
        "opacity_logits" => g.opacity_logits[i],
        "sh" => g.sh[i][c],
        _ => unreachable!("unknown parameter kind {kind}"),
    }
}

/// Fourth-order central difference of `f` at 0 (truncation O(h⁴), so the
/// step can be large enough that rounding noise stays near 1e-11).
fn central_difference(mut f: impl FnMut(f64) -> f64) -> f64 {
    const H: f64 = 1e-4;
    (8.0 * (f(H) - f(-H)) - (f(2.0 * H) - f(-2.0 * H))) / (12.0 * H)
}

/// Central differences of `loss` for every parameter and the background;
/// returns the worst relative error per kind over components above 1e-3 of
/// the kind's largest, after asserting the rest agree absolutely.
fn check_against_finite_differences(
    params: &SplatParams64,
    cam: &Camera,
    bg: [f64; 3],
    loss: &Loss,
    tolerance: f64,
) -> Vec<(&'static str, f64, usize)> {
    let analytic = loss.grad(params, cam, bg);
    let mut by_kind: Vec<(&'static str, Vec<(f64, f64)>)> = Vec::new();
    for (kind, i, c) in parameter_slots(params) {
        let mut p = params.clone();
        let x0 = *slot_mut(&mut p, kind, i, c);
        let fd = central_difference(|dx| {
            *slot_mut(&mut p, kind, i, c) = x0 + dx;
            loss.eval(&p, cam, bg)
        });
        let pair = (grad_of(&analytic, kind, i, c), fd);
        match by_kind.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, v)) => v.push(pair),
            None => by_kind.push((kind, vec![pair])),
        }
    }
    let mut bg_pairs = Vec::new();
    for ch in 0..3 {
        let fd = central_difference(|dx| {
            let mut b = bg;
            b[ch] += dx;
            loss.eval(params, cam, b)
        });
        bg_pairs.push((analytic.background[ch], fd));
    }
    by_kind.push(("background", bg_pairs));

    let mut report = Vec::new();
    for (kind, pairs) in by_kind {
        let scale = pairs.iter().map(|p| p.1.abs()).fold(0.0, f64::max);
        if std::env::var("FD_DUMP").is_ok() {
            println!("{kind}: {pairs:?}");
        }
        assert!(scale > 0.0, "{kind}: all finite differences are zero");
        let mut worst: f64 = 0.0;
        let mut counted = 0;
        for (n, &(a, fd)) in pairs.iter().enumerate() {
            if fd.abs() > 1e-3 * scale {
                worst = worst.max((a - fd).abs() / fd.abs());
                counted += 1;
            } else {
                assert!(
                    (a - fd).abs() <= tolerance * scale,
                    "{kind}[{n}]: analytic {a:e}, finite difference {fd:e}"
                );
            }
        }
        println!("{kind}: worst relative error {worst:.2e} over {counted} components (largest |dL| {scale:.2e})");
        assert!(
            worst <= tolerance,
            "{kind}: relative error {worst:e} > {tolerance:e}"
        );
        report.push((kind, worst, counted));
    }
    report
}

#[test]
fn backward_matches_finite_differences_on_a_smooth_case() {
    let (params, cam) = smooth_case();
    let splats = assert_smooth(&params, &cam);
    let clamped = splats
        .iter()
        .filter(|s| ((s.mean2d[0] - 16.0) / 32.0).abs() > 0.65)
        .count();
    assert_eq!(clamped, 1, "the case must exercise the Jacobian clamp");
    let loss = Loss::random(32 * 24, 11);
    check_against_finite_differences(&params, &cam, [0.2, 0.3, 0.1], &loss, 1e-6);
}

/// One nearly opaque (0.995) splat, wide enough that its 1/255 contour
/// encloses the image, whose centre pixels hit the 0.99 alpha clamp.
fn clamp_case() -> (SplatParams64, Camera) {
    let cam = small_camera();
    let mut rng = Rng(3);
    let mut params = empty_params(3);
    push_splat(
        &mut params,
        &mut rng,
        &cam,
        DVec3::new(0.013, -0.021, 5.0),
        (0.40, 0.50),
        (0.0, 0.0),
    );
    params.opacity_logits[0] = (0.995f64 / 0.005).ln();
    (params, cam)
}

/// Per pixel, `opacity · exp(−σ)` of the single splat (before the clamp).
fn raw_alphas(params: &SplatParams64, cam: &Camera) -> Vec<f64> {
    let c = Camera64::from(cam);
    let s = project_splat(params, 0, &c).expect("the splat is visible");
    (0..c.width * c.height)
        .map(|p| {
            let (x, y) = ((p % c.width) as f64 + 0.5, (p / c.width) as f64 + 0.5);
            s.opacity * (-s.mahalanobis_half(x, y)).exp()
        })
        .collect()
}

#[test]
fn alpha_clamp_stops_the_gradient_through_the_gaussian() {
    let (params, cam) = clamp_case();
    let bg = [0.2, 0.3, 0.1];
    let raw = raw_alphas(&params, &cam);
    let clamped: Vec<usize> = (0..raw.len()).filter(|&p| raw[p] > 0.99).collect();
    assert!(!clamped.is_empty(), "the case must hit the clamp");
    let kink = raw.iter().map(|a| (a - 0.99).abs()).fold(1.0, f64::min);
    let lowest = raw.iter().copied().fold(1.0, f64::min);
    println!(
        "{} pixels at the 0.99 clamp; closest |raw alpha − 0.99| {kink:.2e}, lowest raw alpha {lowest:.3e}",
        clamped.len()
    );
    assert!(
        raw.iter()
            .all(|&a| (a - 0.99).abs() > 2e-4 && a > 2.0 / 255.0),
        "pixels must stay away from the clamp's kink and the 1/255 cutoff"
    );
    // (A step of 2e-4 in any parameter moves the raw alpha of the pixels next
    // to the kink by under 2e-5, so the 2e-4 margin keeps them on their side.)

    // Everywhere: the analytic gradient equals finite differences, which see
    // a constant alpha at the clamped pixels.
    let loss = Loss::random(raw.len(), 5);
    check_against_finite_differences(&params, &cam, bg, &loss, 1e-6);

    // Only the clamped pixels: alpha there is 0.99 whatever the Gaussian does,
    // so opacity, rotation and scale get exactly zero, colour does not; the
    // mean only through the SH view direction (zero with SH degree 0).
    let mut only_clamped = Loss::random(raw.len(), 9);
    for (p, &a) in raw.iter().enumerate() {
        if a <= 0.99 {
            only_clamped.w_rgb[p] = [0.0; 3];
            only_clamped.w_alpha[p] = 0.0;
        }
    }
    let g = only_clamped.grad(&params, &cam, bg);
    assert_eq!(g.opacity_logits[0], 0.0);
    assert_eq!(g.quats[0], [0.0; 4]);
    assert_eq!(g.log_scales[0], [0.0; 3]);
    assert!(
        g.sh[0].iter().any(|&v| v.abs() > 1e-3),
        "colour still matters there"
    );
    let mut p = params.clone();
    let fd = central_difference(|dx| {
        p.opacity_logits[0] = params.opacity_logits[0] + dx;
        only_clamped.eval(&p, &cam, bg)
    });
    assert!(
        fd.abs() < 1e-9,
        "finite difference through the clamp: {fd:e}"
    );
    let mut dc_only = params.clone();
    dc_only.sh_degree = 0;
    dc_only.sh.truncate(1);
    let g = only_clamped.grad(&dc_only, &cam, bg);
    assert_eq!(g.means[0], [0.0; 3]);
    assert_eq!(g.opacity_logits[0], 0.0);
}

#[test]
fn blending_stops_before_transmittance_reaches_1e_4() {
    // Six splats straight ahead of pixel (16, 12), alpha exactly 0.85 there:
    // T = 0.15^k, and the fifth would take it to 7.6e-5 ≤ 1e-4, so only four
    // blend. Stored out of depth order to exercise the sort.
    let cam = Camera {
        width: 32,
        height: 24,
        fx: 32.0,
        fy: 32.0,
        cx: 16.5,
        cy: 12.5,
        rotation: Mat3::IDENTITY,
        translation: Vec3::ZERO,
        near: 0.01,
    };
    let depths = [4.0, 2.0, 6.0, 3.0, 7.0, 5.0];
    let colour = |z: f64| [0.1 * z, 1.0 - 0.1 * z, 0.05 * z * z];
    const C0: f64 = 0.282_094_791_773_878_14;
    let mut params = empty_params(0);
    for &z in &depths {
        params.means.push([0.0, 0.0, z]);
        params.quats.push([1.0, 0.0, 0.0, 0.0]);
        params.log_scales.push([(0.1 * z).ln(); 3]);
        params.opacity_logits.push((0.85f64 / 0.15).ln());
        params.sh.push(colour(z).map(|c| (c - 0.5) / C0));
    }
    let bg = [0.3, 0.6, 0.9];
    let image = render(&params, &cam, bg);
    let pixel = 12 * 32 + 16;
    let mut expected = [0.0; 3];
    let mut t = 1.0;
    for z in [2.0, 3.0, 4.0, 5.0] {
        for (e, c) in expected.iter_mut().zip(colour(z)) {
            *e += c * 0.85 * t;
        }
        t *= 0.15;
    }
    for ch in 0..3 {
        expected[ch] += t * bg[ch];
        assert!(
            (image.rgb[pixel][ch] - expected[ch]).abs() < 1e-12,
            "channel {ch}"
        );
    }
    assert!((image.alpha[pixel] - (1.0 - 0.15f64.powi(4))).abs() < 1e-12);
}

#[test]
fn culled_and_non_finite_splats_leave_no_trace() {
    let cam = small_camera();
    let c = Camera64::from(&cam);
    let mut rng = Rng(21);
    let mut params = empty_params(1);
    let mut add = |params: &mut SplatParams64, p: DVec3| {
        push_splat(params, &mut rng, &cam, p, (-0.5, 0.0), (0.0, 1.0));
        params.sh.truncate(params.sh.len() - 12); // degree 1: 4 coefficients
    };
    // Kept: an ordinary splat, one straddling the near plane (mean just in
    // front of it, footprint far behind the camera), one absurdly large.
    add(&mut params, DVec3::new(0.1, 0.2, 5.0));
    add(&mut params, DVec3::new(0.001, 0.0, 0.02));
    add(&mut params, DVec3::new(0.0, 0.1, 4.0));
    params.log_scales[2] = [300.0, 1.0, -300.0];
    let kept = params.clone();
    // Culled: behind the camera, in front of the camera but behind the near
    // plane, at the camera centre, and non-finite parameters of every kind.
    add(&mut params, DVec3::new(0.0, 0.0, -2.0));
    add(&mut params, DVec3::new(0.0, 0.0, 0.005));
    add(&mut params, DVec3::ZERO);
    for poison in 0..6 {
        add(&mut params, DVec3::new(0.1, -0.1, 5.0));
        let last = params.len() - 1;
        match poison {
            0 => params.means[last][1] = f64::NAN,
            1 => params.quats[last] = [0.0; 4],
            2 => params.log_scales[last][0] = f64::INFINITY,
            3 => params.opacity_logits[last] = f64::NAN,
            4 => params.sh[4 * last + 2][1] = f64::NEG_INFINITY,
            _ => params.quats[last][3] = f64::NAN,
        }
    }
    for i in kept.len()..params.len() {
        assert!(
            project_splat(&params, i, &c).is_none(),
            "splat {i} must be culled"
        );
    }
    let bg = [0.2, 0.3, 0.1];
    let image = render(&params, &cam, bg);
    assert!(image
        .rgb
        .iter()
        .flatten()
        .chain(&image.alpha)
        .all(|v| v.is_finite()));
    assert_eq!(
        image,
        render(&kept, &cam, bg),
        "culled splats changed the image"
    );
    assert!(
        image.alpha.iter().all(|&a| a > 0.1),
        "the near splat covers the image"
    );

    let loss = Loss::random(image.alpha.len(), 4);
    let g = loss.grad(&params, &cam, bg);
    let all = g
        .means
        .iter()
        .flatten()
        .chain(g.quats.iter().flatten())
        .chain(g.log_scales.iter().flatten())
        .chain(&g.opacity_logits)
        .chain(g.sh.iter().flatten())
        .chain(&g.background);
    assert!(all.clone().all(|v| v.is_finite()), "non-finite gradient");
    for i in kept.len()..params.len() {
        assert_eq!(g.means[i], [0.0; 3], "culled splat {i} got a gradient");
        assert_eq!(g.opacity_logits[i], 0.0, "culled splat {i} got a gradient");
    }
}
