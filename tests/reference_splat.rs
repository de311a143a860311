//! The f64 splat twin: forward against gsplat's renders, backward against
//! central finite differences, the alpha clamp, and robustness.

mod common;

use physfit::reference::gsplat_case::load_gsplat_case;
use physfit::reference::splat::{render, SplatParams64};

#[test]
fn forward_matches_gsplat_references() {
    for name in ["tiny_case", "basic_case"] {
        let case = load_gsplat_case(common::shared_data(&format!(
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
            "{name}: max |diff| (r, g, b, a) = {:.3e} {:.3e} {:.3e} {:.3e}, mean = {:.3e} {:.3e} {:.3e} {:.3e}",
            max[0], max[1], max[2], max[3], mean[0], mean[1], mean[2], mean[3]
        );
        for ch in 0..4 {
            assert!(
                max[ch] <= 5e-4,
                "{name} channel {ch}: max diff {:.3e}",
                max[ch]
            );
            assert!(
                mean[ch] <= 1e-5,
                "{name} channel {ch}: mean diff {:.3e}",
                mean[ch]
            );
        }
    }
}

use glam::{DVec3, Mat3, Vec3};
use physfit::reference::splat::{
    project_all, project_splat, render_backward, Camera64, ProjectedSplat, SplatGrads64,
};
use physfit::scene::Camera;

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
