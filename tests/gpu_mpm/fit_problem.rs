//! The fit problem end to end on the GPU (src/fit; DESIGN.md § Verification
//! 3, issue 12 "the GPU gradient against finite differences of the GPU
//! loss"): a tiny scene (288 splats, 32 K-Means drivers, some anchored,
//! two 32×32 views, 3 frames) whose reference frames are its own forward at
//! "true" parameters, written as 8-bit PNGs; then the loss and gradient at
//! other parameters, against central differences of the GPU loss, for
//! `log10 E` and `v0`, both flows.
//!
//! Two scenes ([`Kind`]). The dense one (288 splats of opacity 0.88 filling
//! the block) is the chain_vs_twin.rs scene: its largest components agree
//! with FD to ≤ 1e-2, but its loss has ~1 slope jump per 1.4e-5 along a
//! random `v0` direction (alphas crossing the 1/255 cutoff, depth-order
//! swaps of overlapping splats), which FD at the steps f32 resolves
//! straddles: its random directions are checked at a documented, looser
//! [`RANDOM_TOLERANCE`] (a non-smooth case, not a bound on the gradient,
//! which chain_vs_twin.rs shows exact). The smooth one (64 sparse,
//! translucent, anisotropic splats, 32 drivers, some anchored, moving less
//! than half a cell) carries the issue's random-direction check at 1e-2
//! in both flows, its slopes estimated robustly to the loss's isolated jumps
//! ([`jump_robust_slope`]; measured figures at [`SMOOTH_VELOCITY_STEP`] and
//! [`Kind::Smooth`]).

use crate::common;
use crate::support::pseudo_random;

use physfit::fit::{
    FitError, FitProblem, FitProblemOptions, GradientFlow, Parameters, Selection, VelocityField,
    YoungsField,
};
use physfit::gpu::GpuContext;
use physfit::scene::frames::write_png;
use physfit::scene::ply::PlyData;
use physfit::scene::{Gaussians, Scene};

const TRUE_LOG10_E: f64 = 3.8;
const TRUE_V: [f64; 3] = [0.4, 0.0, 0.25];
pub(crate) const FRAMES: usize = 3;

/// A 6×6×8 block of coloured splats over [0, 0.5]³ (world units).
fn block() -> Gaussians {
    let mut g = Gaussians::default();
    let jitter = pseudo_random(3 * 288, 41);
    for i in 0..6 {
        for j in 0..6 {
            for k in 0..8 {
                let s = 3 * g.means.len();
                g.means.push([
                    i as f32 * 0.1 + 0.02 * jitter[s],
                    j as f32 * 0.1 + 0.02 * jitter[s + 1],
                    k as f32 * 0.5 / 7.0 + 0.02 * jitter[s + 2],
                ]);
                g.rotations.push([1.0, 0.0, 0.0, 0.0]);
                g.log_scales.push([-3.0; 3]);
                g.opacity_logits.push(2.0);
                let c = |m: usize| ((m % 5) as f32) * 0.35 - 0.7;
                g.sh.push([c(i + 2 * j + 3 * k), c(3 * i + k), c(2 * i + 3 * j + k + 1)]);
            }
        }
    }
    g
}

/// The smooth scene's splats (module doc; after tests/cpu/reference_chain.rs):
/// 4×4×4 sparse splats on a jittered lattice over [0.04, 0.46]³ (world),
/// random rotations, anisotropic scales (axis ratios up to ~2), opacities
/// 0.2–0.45, colours 0.5 ± 0.3 (away from the ≥ 0 clamp).
fn sparse_block() -> Gaussians {
    let mut g = Gaussians::default();
    let r = pseudo_random(12 * 64, 77);
    let ls = -2.4;
    for i in 0..4 {
        for j in 0..4 {
            for k in 0..4 {
                let s = 12 * g.means.len();
                let q = &r[s..s + 12];
                g.means.push([
                    0.04 + i as f32 * 0.14 + 0.02 * q[0],
                    0.04 + j as f32 * 0.14 + 0.02 * q[1],
                    0.04 + k as f32 * 0.14 + 0.02 * q[2],
                ]);
                let norm = (q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]).sqrt();
                g.rotations
                    .push([q[3] / norm, q[4] / norm, q[5] / norm, q[6] / norm]);
                g.log_scales.push([
                    ls + 0.15 * q[7],
                    ls - 0.7 + 0.15 * q[8],
                    ls - 0.3 + 0.15 * q[9],
                ]);
                let o = 0.5 + 0.125 * q[10];
                g.opacity_logits.push((o / (1.0 - o)).ln());
                g.sh.push([1.05 * q[11], 1.05 * q[(s / 12) % 11], -1.05 * q[10]]);
            }
        }
    }
    g
}

/// Which test scene (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// 288 opaque splats (0.88) filling the block: non-smooth at FD steps.
    Dense,
    /// 64 sparse, translucent, anisotropic splats: smooth at FD steps.
    ///
    /// How it was chosen (measured; FD relative errors of the random
    /// directions, Full/Truncated × log10 E/v0). The loss along a line is
    /// piecewise smooth: jumps where an alpha crosses 1/255 (their size
    /// does not scale with opacity, the smooth slope does), jumps where two
    /// overlapping splats swap depth order (∝ α₁α₂), f32 noise of ~1e-7
    /// (a scan at steps of 1e-4: ±1e-7 along log10 E, jumps of ~1e-6 along
    /// v0), and kinks of the MPM B-splines. Opacity 0.2–0.45 as in the f64
    /// twin scene (which has no f32 noise) gave 1–15% (the 1/255 jumps
    /// dominate a slope that small); 0.75–0.85 gave 0.1–7%, v0 FD always
    /// 4–8% above the gradient (depth swaps); 0.375–0.625 with 32 drivers
    /// is the optimum found: 2e-3 / 5e-3 / 1.3e-3 / 1.9e-2. Further: start
    /// v0 at 0.4 of the truth, not 0.8 (a larger smooth slope against the
    /// same jumps: errors 2–5× lower); directions with a 2× rather than 8×
    /// random gradient over the drivers (fewer depth swaps; a uniform
    /// translation, slope 0, was worse: 12% / 43% on v0); FD as a 16-point
    /// least-squares fit of the odd part over ±4e-3, not Richardson at 4e-3
    /// and 2e-3 (whose 4 points amplify the noise), and now as
    /// [`jump_robust_slope`], which drops the intervals holding a jump
    /// (figures at [`SMOOTH_VELOCITY_STEP`]). The L1 weight (0 or 0.1) and splat size
    /// (log scale −2.0 … −2.7) changed little; 16 drivers were worse than 32.
    Smooth,
}

fn scene_toml_of(kind: Kind, with_frames: bool) -> String {
    let (res, fx, count) = match kind {
        Kind::Dense => (32, 100.0, 32),
        Kind::Smooth => (32, 100.0, 32),
    };
    let frames = |v: &str| {
        if with_frames {
            format!("frames = \"{v}/*.png\"\n")
        } else {
            String::new()
        }
    };
    format!(
        r#"
[gaussians]
path = "splats.ply"

[[views]]
name = "front"
{}[views.camera]
width = {res}
height = {res}
fx = {fx:.1}
position = [1.6, -2.0, 1.2]
look_at = [0.25, 0.25, 0.25]
up = [0.0, 0.0, 1.0]

[[views]]
name = "side"
{}[views.camera]
width = {res}
height = {res}
fx = {fx:.1}
position = [2.6, 1.6, -0.4]
look_at = [0.25, 0.25, 0.25]
up = [0.0, 0.0, 1.0]

[reference]
fps = 30.0
background = [0.0, 0.0, 0.0]

[simulation]
box = {{ min = [-0.5, -0.5, -0.5], max = [1.0, 1.0, 1.0] }}
grid_res = 16
gravity = [0.0, 0.0, 0.0]

[material]
youngs_modulus = 1.0e4
log10_youngs_range = [3.0, 4.5]

[regions]
anchored = [{{ min = [-1.0, -1.0, -1.0], max = [1.0, 1.0, 0.1] }}]

[drivers]
count = {count}
k = 8
seed = 0
"#,
        frames("front"),
        frames("side")
    )
}

pub(crate) fn true_params(p: &FitProblem) -> Parameters {
    let n = p.drivers().len();
    Parameters {
        log10_youngs: vec![TRUE_LOG10_E; n],
        velocity: (0..n).flat_map(|_| TRUE_V).collect(),
    }
}

/// The scene with its reference frames: rendered from its own forward at
/// the true parameters (a frameless copy of the scene) and written as PNGs.
pub(crate) fn fixture(ctx: &GpuContext) -> (tempfile::TempDir, Scene) {
    fixture_of(ctx, Kind::Dense)
}

/// [`fixture`] of either scene.
pub(crate) fn fixture_of(ctx: &GpuContext, kind: Kind) -> (tempfile::TempDir, Scene) {
    let dir = tempfile::tempdir().unwrap();
    let ply = dir.path().join("splats.ply");
    let splats = match kind {
        Kind::Dense => block(),
        Kind::Smooth => sparse_block(),
    };
    PlyData::from_gaussians(&splats, &ply)
        .write(&ply, &[])
        .unwrap();
    let path = dir.path().join("scene.toml");
    std::fs::write(&path, scene_toml_of(kind, false)).unwrap();
    let plain = Scene::load(&path).unwrap();
    let mut maker = FitProblem::new(ctx, &plain, &options(&plain)).unwrap();
    let truth = true_params(&maker);
    for (v, name) in ["front", "side"].iter().enumerate() {
        let frames = maker.render_frames(ctx, &truth, v, FRAMES).unwrap();
        let out = dir.path().join(name);
        std::fs::create_dir_all(&out).unwrap();
        for (k, f) in frames.iter().enumerate() {
            write_png(
                &out.join(format!("{k:03}.png")),
                f.width,
                f.height,
                &f.pixels,
            )
            .unwrap();
        }
    }
    std::fs::write(&path, scene_toml_of(kind, true)).unwrap();
    let scene = Scene::load(&path).unwrap();
    (dir, scene)
}

pub(crate) fn options(scene: &Scene) -> FitProblemOptions {
    let mut o = FitProblemOptions::per_driver(&scene.fit.stiffness);
    o.tv_weight = 0.01;
    o
}

pub(crate) fn all() -> Selection {
    Selection {
        frames: (1..=FRAMES).collect(),
        views: vec![0, 1],
    }
}

/// A point away from the truth: E per driver scattered around a softer
/// value, velocities per driver scattered around a slower one.
pub(crate) fn start(p: &FitProblem) -> Parameters {
    start_of(p, Kind::Dense)
}

/// [`start`] of either scene; the smooth scene's velocities start further
/// from the truth (0.4 of it rather than 0.8), so the smooth part of the
/// loss's slope is larger against its f32 noise and its jumps.
fn start_of(p: &FitProblem, kind: Kind) -> Parameters {
    let n = p.drivers().len();
    let scale = match kind {
        Kind::Dense => 0.8,
        Kind::Smooth => 0.4,
    };
    let r = pseudo_random(4 * n, 5);
    Parameters {
        log10_youngs: (0..n).map(|d| 3.6 + 0.15 * r[d] as f64).collect(),
        velocity: (0..3 * n)
            .map(|i| scale * TRUE_V[i % 3] + 0.08 * r[n + i] as f64)
            .collect(),
    }
}

/// As tests/gpu_mpm/adjoint.rs: central differences at `h` and `h/2`
/// combined by Richardson extrapolation (error O(h⁴)), so steps can be
/// large enough that f32 jitter of the loss does not dominate.
pub(crate) fn richardson(mut f: impl FnMut(f64) -> f64, h: f64) -> f64 {
    let mut central = |h: f64| (f(h) - f(-h)) / (2.0 * h);
    let a = central(h);
    let b = central(h / 2.0);
    (4.0 * b - a) / 3.0
}

/// The slope at 0 of `f` from a least-squares fit of its odd part,
/// `(f(t) − f(−t))/2 ≈ b·t + d·t³`, at `t = h·i/k`, `i = 1..=k`: `b`.
pub(crate) fn fitted_slope(mut f: impl FnMut(f64) -> f64, h: f64, k: usize) -> f64 {
    let (mut s11, mut s13, mut s33, mut y1, mut y3) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for i in 1..=k {
        let t = h * i as f64 / k as f64;
        let g = 0.5 * (f(t) - f(-t));
        let t3 = t * t * t;
        s11 += t * t;
        s13 += t * t3;
        s33 += t3 * t3;
        y1 += g * t;
        y3 += g * t3;
    }
    (y1 * s33 - y3 * s13) / (s11 * s33 - s13 * s13)
}

/// The slope at 0 of a function that is smooth but for isolated jumps
/// (the image loss along a line: alphas crossing the 1/255 cutoff and
/// depth-order swaps make steps of ~1e-7 in it, while its smooth part's
/// slope is what the gradient is). `f` at `k + 1` equally spaced points over
/// `[−h, h]`; the slopes of the `k` intervals fitted, by least squares, with
/// a quadratic in the interval's midpoint (the smooth part's slope, up to a
/// quartic loss); intervals whose slope lies more than 4 robust standard
/// deviations (1.4826 × the median absolute residual) from the fit hold a
/// jump and are dropped, and the fit repeated until none is; its value at
/// 0. A jump left in a plain central difference over `[−h, h]` moves it by
/// `jump / 2h`; here it only removes one interval of `k`.
fn jump_robust_slope(mut f: impl FnMut(f64) -> f64, h: f64, k: usize) -> f64 {
    let t: Vec<f64> = (0..=k)
        .map(|i| -h + 2.0 * h * i as f64 / k as f64)
        .collect();
    let values: Vec<f64> = t.iter().map(|&t| f(t)).collect();
    let samples: Vec<(f64, f64)> = (0..k)
        .map(|j| {
            (
                0.5 * (t[j] + t[j + 1]),
                (values[j + 1] - values[j]) / (t[j + 1] - t[j]),
            )
        })
        .collect();
    let mut keep = vec![true; k];
    for _ in 0..k {
        let c = quadratic_fit(&samples, &keep);
        let at = |m: f64| c[0] + c[1] * m + c[2] * m * m;
        let residuals: Vec<f64> = samples.iter().map(|&(m, s)| (s - at(m)).abs()).collect();
        let mut kept: Vec<f64> = (0..k).filter(|&j| keep[j]).map(|j| residuals[j]).collect();
        kept.sort_by(f64::total_cmp);
        let limit = 4.0 * 1.4826 * kept[kept.len() / 2];
        let next: Vec<bool> = (0..k).map(|j| keep[j] && residuals[j] <= limit).collect();
        if next == keep {
            return c[0];
        }
        keep = next;
    }
    unreachable!("each pass drops an interval or returns")
}

/// Least-squares `s ≈ c0 + c1·m + c2·m²` over the kept samples `(m, s)`
/// (normal equations, centred at 0; a few dozen well-spread points).
fn quadratic_fit(samples: &[(f64, f64)], keep: &[bool]) -> [f64; 3] {
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for (&(m, s), _) in samples.iter().zip(keep).filter(|(_, &k)| k) {
        let p = [1.0, m, m * m];
        for r in 0..3 {
            b[r] += p[r] * s;
            for c in 0..3 {
                a[r][c] += p[r] * p[c];
            }
        }
    }
    // Cramer's rule on the 3×3 system.
    let det = |m: &[[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(&a);
    std::array::from_fn(|i| {
        let mut m = a;
        for r in 0..3 {
            m[r][i] = b[r];
        }
        det(&m) / d
    })
}

/// Tolerance of the DENSE scene's random-direction checks (a documented
/// non-smooth case; the smooth scene checks 1e-2). NOT the issue's 1e-2: along
/// a direction that moves every driver, the FD of the GPU loss scatters by
/// several percent with the step (measured, steps 5e-4 … 1e-2: Full
/// log10 E 0.7–17%, v0 4–36%; Truncated log10 E 0.03–7%, v0 3–170% at the
/// largest step), which points at a loss that is not smooth along such
/// directions (blend-order swaps of overlapping splats at nearly equal
/// depth, the 1/255 alpha cutoff) rather than at the adjoint, whose
/// largest components agree to ≤ 1e-2. The v0 FD lies 4–10% above the
/// gradient in magnitude at every step tried; that is not a bias:
/// tests/gpu_mpm/chain_vs_twin.rs shows the f64 twin's own differences
/// along these directions scattering the same way at these steps and
/// converging on the GPU gradient (≤ 2.4e-5) only at h ≤ 1e-5, which f32
/// cannot resolve.
const RANDOM_TOLERANCE: f64 = 0.1;

/// How a check turns loss values along a line into a slope.
#[derive(Clone, Copy, Debug)]
enum SlopeEstimate {
    /// [`richardson`].
    Richardson,
    /// [`fitted_slope`] of this many points.
    Fitted(usize),
    /// [`jump_robust_slope`] over this many intervals.
    JumpRobust(usize),
}

/// How one scene's random-direction checks run (see [`Kind`]).
struct Random {
    /// Scale of the directions' random gradient over the drivers.
    slope: f64,
    /// Finite-difference step of the random `log10 E` direction.
    youngs_step: f64,
    /// How the `log10 E` checks estimate the slope.
    youngs_estimate: SlopeEstimate,
    /// Finite-difference step of the random `v0` direction.
    velocity_step: f64,
    /// How the `v0` checks estimate the slope.
    velocity_estimate: SlopeEstimate,
    youngs_tolerance: f64,
    velocity_tolerance: f64,
}

impl Random {
    fn of(kind: Kind) -> Self {
        match kind {
            Kind::Dense => Self {
                slope: 8.0,
                youngs_step: 1e-3,
                youngs_estimate: SlopeEstimate::Richardson,
                velocity_step: 1e-3,
                velocity_estimate: SlopeEstimate::Richardson,
                youngs_tolerance: RANDOM_TOLERANCE,
                velocity_tolerance: RANDOM_TOLERANCE,
            },
            Kind::Smooth => Self {
                slope: 2.0,
                youngs_step: 4e-3,
                youngs_estimate: SlopeEstimate::Fitted(16),
                velocity_step: SMOOTH_VELOCITY_STEP,
                velocity_estimate: SlopeEstimate::JumpRobust(SMOOTH_VELOCITY_INTERVALS),
                youngs_tolerance: 1e-2,
                velocity_tolerance: 1e-2,
            },
        }
    }
}

impl SlopeEstimate {
    fn slope_of(self, f: impl FnMut(f64) -> f64, h: f64) -> f64 {
        match self {
            SlopeEstimate::Richardson => richardson(f, h),
            SlopeEstimate::Fitted(k) => fitted_slope(f, h, k),
            SlopeEstimate::JumpRobust(k) => jump_robust_slope(f, h, k),
        }
    }
}

/// Finite-difference half-width of the smooth scene's random `v0`
/// direction, and the intervals [`jump_robust_slope`] splits `[−h, h]`
/// into there and for the largest `v0` component (`log10 E` keeps the
/// 16-point odd fit at 4e-3, where it measured ≤ 5.5e-3: along E the f32
/// noise, not jumps, limits it, and the jump-robust fit's wider window at
/// 8e-3 gave 7–9e-3 there). Why jump-robust (issue 12 asked 1e-2; the
/// truncated-flow `v0` passed only at 3e-2 with a 16-point fit of the odd
/// part): along its random `v0` direction the loss is smooth (the slope of
/// the f64 twin's loss, scanned at 400 points over ±4e-3, varies linearly
/// by ±2.5% about the gradient) but for isolated jumps of ~1e-7 (the same
/// with the L1 weight at 0: alphas crossing 1/255, depth swaps), each of
/// which moves a central difference over `[−h, h]` by `jump / 2h` ≈ 0.5%
/// of this flow's small slope (v0 moves frame 1 only: the v0 gradient of
/// frames 1..3 equals frame 1's to 8e-8). Measured on that direction, of
/// the gradient: the twin's own 16-point odd fit −1.9% (h 4e-3), −2.2%
/// (8e-3), −0.4% (1.6e-2), −1.0% (3.2e-2), −1.6% (6.4e-2), the GPU's the
/// same to 1e-3 (the GPU gradient equals the twin's to 1e-5 and per
/// component to 9e-5): the FD, not the gradient, was off. Jump-robust with
/// 64 intervals, twin: ≤ 1e-4 at h 4e-3, 8e-3, 1.6e-2 (32 intervals: up to
/// 1.5e-2, too few to outvote the jumps); GPU: 9.8e-4, 3.2e-3, 1.1e-3;
/// largest v0 component (twin ≤ 4e-5) GPU 6.1e-3, 1.4e-3, 5.9e-4. In the
/// tests here (h 8e-3, largest component at [`LARGEST_VELOCITY_STEP`]):
/// truncated v0 3.2e-3 and 7.4e-4, full v0 4.4e-3 and 4.7e-4.
const SMOOTH_VELOCITY_STEP: f64 = 8e-3;
const SMOOTH_VELOCITY_INTERVALS: usize = 64;

/// Finite-difference step of the largest `log10 E` component.
const LARGEST_YOUNGS_STEP: f64 = 0.02;

/// Finite-difference step of the largest `v0` component.
const LARGEST_VELOCITY_STEP: f64 = 0.01;

fn dot(a: &[f32], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * y).sum()
}

fn shifted(p: &Parameters, youngs: &[f64], velocity: &[f64], h: f64) -> Parameters {
    Parameters {
        log10_youngs: p
            .log10_youngs
            .iter()
            .zip(youngs)
            .map(|(a, d)| a + h * d)
            .collect(),
        velocity: p
            .velocity
            .iter()
            .zip(velocity)
            .map(|(a, d)| a + h * d)
            .collect(),
    }
}

/// A random direction that is smooth over the drivers: per component a
/// random affine function of the rest position (random constant and
/// gradient), `dim` components per driver. Directions that move
/// neighbouring drivers apart at random reorder overlapping splats of
/// nearly equal depth, whose blend order is piecewise constant: the loss is
/// not smooth along them at the steps f32 allows.
pub(crate) fn smooth_direction(rest: &[[f32; 3]], dim: usize, seed: u64) -> Vec<f64> {
    sloped_direction(rest, dim, seed, 8.0)
}

/// [`smooth_direction`] with the random gradient scaled by `slope`
/// (`smooth_direction`: 8).
fn sloped_direction(rest: &[[f32; 3]], dim: usize, seed: u64, slope: f64) -> Vec<f64> {
    let r = &pseudo_random(4 * dim, seed);
    let n = rest.len() as f64;
    let c: [f64; 3] =
        std::array::from_fn(|a| rest.iter().map(|x| f64::from(x[a])).sum::<f64>() / n);
    rest.iter()
        .flat_map(|x| {
            (0..dim).map(move |k| {
                let q = &r[4 * k..4 * k + 4];
                f64::from(q[0])
                    + (0..3)
                        .map(|a| slope * f64::from(q[a + 1]) * (f64::from(x[a]) - c[a]))
                        .sum::<f64>()
            })
        })
        .collect()
}

fn unit(n: usize, i: usize) -> Vec<f64> {
    let mut v = vec![0.0; n];
    v[i] = 1.0;
    v
}

fn argmax(g: &[f32]) -> usize {
    (0..g.len())
        .max_by(|a, b| g[*a].abs().total_cmp(&g[*b].abs()))
        .unwrap()
}

fn check(what: &str, analytic: f64, fd: f64, tolerance: f64) {
    let rel = (fd - analytic).abs() / analytic.abs().max(1e-12);
    eprintln!("{what}: gradient {analytic:.6e}, FD {fd:.6e}, relative {rel:.2e}");
    assert!(
        rel <= tolerance,
        "{what}: gradient {analytic} vs FD {fd} ({rel:.2e})"
    );
}

#[test]
fn loss_at_the_true_parameters_is_8_bit_rounding_only() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture(&ctx);
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    let truth = true_params(&p);
    let r = p.loss(&ctx, &truth, &all()).unwrap();
    let far = p.loss(&ctx, &start(&p), &all()).unwrap();
    eprintln!(
        "loss at truth {:.3e} (L1 {:.3e}, D-SSIM {:.3e}), at the start {:.3e}, {} renders",
        r.image,
        r.l1,
        r.dssim,
        far.image,
        r.images.len()
    );
    assert_eq!(r.images.len(), 2 * FRAMES);
    for t in &r.images {
        // Rounding to 8 bits moves a channel by at most 0.5/255.
        assert!(t.terms.l1 <= 0.5 / 255.0 + 1e-6, "{t:?}");
        assert!(t.terms.dssim <= 1e-3, "{t:?}");
    }
    assert!(far.image > 20.0 * r.image, "{} vs {}", far.image, r.image);
}

#[test]
fn mismatched_selections_are_typed_errors() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture(&ctx);
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    let truth = true_params(&p);
    let too_many = Selection {
        frames: vec![1, FRAMES + 1],
        views: vec![0],
    };
    let err = p.loss(&ctx, &truth, &too_many).unwrap_err();
    assert!(
        matches!(
            err,
            FitError::FrameOutOfRange {
                frame: 4,
                available: 4,
                ..
            }
        ),
        "{err}"
    );
    let no_view = Selection {
        frames: vec![1],
        views: vec![2],
    };
    assert!(matches!(
        p.evaluate(&ctx, &truth, &no_view, GradientFlow::Full),
        Err(FitError::NoSuchView { view: 2, views: 2 })
    ));
    let unsorted = Selection {
        frames: vec![2, 1],
        views: vec![0],
    };
    assert!(matches!(
        p.loss(&ctx, &truth, &unsorted),
        Err(FitError::UnsortedFrames(_))
    ));
    let mut short = truth.clone();
    short.velocity.pop();
    assert!(matches!(
        p.loss(&ctx, &short, &all()),
        Err(FitError::ParameterCount { what: "v0", .. })
    ));
    let mut stiff = truth.clone();
    stiff.log10_youngs[0] = 4.6;
    assert!(matches!(
        p.loss(&ctx, &stiff, &all()),
        Err(FitError::YoungsAboveRange { driver: 0, .. })
    ));
}

/// Gradient checks of one flow: random directions and the largest
/// components, for log10 E and v0. `loss` is the objective whose gradient
/// the flow gives.
fn check_flow(
    ctx: &GpuContext,
    p: &mut FitProblem,
    at: &Parameters,
    flow: GradientFlow,
    kind: Kind,
    mut loss: impl FnMut(&mut FitProblem, &Parameters) -> f64,
) {
    let sel = all();
    let e = p.evaluate(ctx, at, &sel, flow).unwrap();
    let g = e.read(ctx).unwrap();
    let n = at.log10_youngs.len();
    let m = at.velocity.len();
    assert!(g.youngs.iter().chain(&g.velocity).all(|v| v.is_finite()));
    // Anchored drivers' velocities have no effect: gradient exactly 0.
    for (d, &a) in p.drivers().anchored.clone().iter().enumerate() {
        if a {
            assert_eq!(
                &g.velocity[3 * d..3 * d + 3],
                &[0.0; 3],
                "anchored driver {d}"
            );
        }
    }
    let zero_n = vec![0.0; n];
    let zero_m = vec![0.0; m];
    let rest = p.drivers().rest.clone();
    let random = Random::of(kind);
    let dir_e = sloped_direction(&rest, 1, 17, random.slope);
    let dir_v = sloped_direction(&rest, 3, 23, random.slope);
    let name = format!("{flow:?}");
    let (step_e_random, step_e_one, step_v_random, step_v_one) = (
        random.youngs_step,
        LARGEST_YOUNGS_STEP,
        random.velocity_step,
        LARGEST_VELOCITY_STEP,
    );
    let fd = random
        .youngs_estimate
        .slope_of(|h| loss(p, &shifted(at, &dir_e, &zero_m, h)), step_e_random);
    check(
        &format!("{name}: log10 E · random"),
        dot(&g.youngs, &dir_e),
        fd,
        random.youngs_tolerance,
    );
    let i = argmax(&g.youngs);
    let fd = random.youngs_estimate.slope_of(
        |h| loss(p, &shifted(at, &unit(n, i), &zero_m, h)),
        step_e_one,
    );
    check(
        &format!("{name}: log10 E[{i}]"),
        f64::from(g.youngs[i]),
        fd,
        1e-2,
    );
    let fd = random
        .velocity_estimate
        .slope_of(|h| loss(p, &shifted(at, &zero_n, &dir_v, h)), step_v_random);
    check(
        &format!("{name}: v0 · random"),
        dot(&g.velocity, &dir_v),
        fd,
        random.velocity_tolerance,
    );
    let i = argmax(&g.velocity);
    let fd = random.velocity_estimate.slope_of(
        |h| loss(p, &shifted(at, &zero_n, &unit(m, i), h)),
        step_v_one,
    );
    check(
        &format!("{name}: v0[{i}]"),
        f64::from(g.velocity[i]),
        fd,
        1e-2,
    );
}

#[test]
fn full_flow_gradient_matches_finite_differences() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture(&ctx);
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    assert!(p.drivers().anchored.iter().any(|&a| a));
    assert!(p.drivers().anchored.iter().any(|&a| !a));
    let at = start(&p);
    let sel = all();
    check_flow(
        &ctx,
        &mut p,
        &at,
        GradientFlow::Full,
        Kind::Dense,
        |p, x| p.loss(&ctx, x, &sel).unwrap().loss,
    );
}

#[test]
fn truncated_flow_gradient_matches_finite_differences() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture(&ctx);
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    let at = start(&p);
    let sel = all();
    let frozen = p.forward_states(&ctx, &at, FRAMES).unwrap();
    // At the frozen states' own parameters the stage-2 objective is the loss.
    let full = p.loss(&ctx, &at, &sel).unwrap().loss;
    let truncated = p.truncated_loss(&ctx, &at, &sel, &frozen).unwrap().loss;
    // Two rollouts: equal up to the run-to-run noise of float atomics
    // (1.06e-6 relative measured between two evaluations in CI).
    assert!(
        (full - truncated).abs() <= 1e-5 * full,
        "{full} vs {truncated}"
    );
    check_flow(
        &ctx,
        &mut p,
        &at,
        GradientFlow::Truncated,
        Kind::Dense,
        |p, x| p.truncated_loss(&ctx, x, &sel, &frozen).unwrap().loss,
    );
}

/// Global E and rigid v0: the GPU transposes of their maps equal the host
/// transpose of the per-driver gradients at the same physical point.
#[test]
fn low_dimensional_fields_map_the_per_driver_gradient() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture(&ctx);
    let mut per = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    let mut low_options = options(&scene);
    low_options.youngs = YoungsField::Global;
    low_options.velocity = VelocityField::Rigid;
    let mut low = FitProblem::new(&ctx, &scene, &low_options).unwrap();
    let x = Parameters {
        log10_youngs: vec![3.7],
        velocity: vec![0.3, 0.05, 0.2, 0.4, -0.3, 0.6],
    };
    let physical = Parameters {
        log10_youngs: low.youngs_map().apply(&x.log10_youngs).unwrap(),
        velocity: low.velocity_map().apply(&x.velocity).unwrap(),
    };
    let g_per = per
        .evaluate(&ctx, &physical, &all(), GradientFlow::Full)
        .unwrap()
        .read(&ctx)
        .unwrap();
    let e_low = low.evaluate(&ctx, &x, &all(), GradientFlow::Full).unwrap();
    let g_low = e_low.read(&ctx).unwrap();
    let to64 = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    let want_e = low.youngs_map().transpose(&to64(&g_per.youngs));
    let want_v = low.velocity_map().transpose(&to64(&g_per.velocity));
    for (what, got, want) in [
        ("log10 E", &g_low.youngs, &want_e),
        ("rigid v0", &g_low.velocity, &want_v),
    ] {
        let scale = want.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        for (i, (a, b)) in got.iter().zip(want.iter()).enumerate() {
            eprintln!("{what}[{i}]: {a:.6e} vs {b:.6e}");
            assert!(
                (f64::from(*a) - b).abs() <= 1e-4 * scale,
                "{what}[{i}]: {a} vs {b}"
            );
        }
    }
}

#[test]
fn smooth_scene_full_flow_gradient_matches_finite_differences() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture_of(&ctx, Kind::Smooth);
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    assert!(p.drivers().anchored.iter().any(|&a| a));
    assert!(p.drivers().anchored.iter().any(|&a| !a));
    let at = start_of(&p, Kind::Smooth);
    let sel = all();
    check_flow(
        &ctx,
        &mut p,
        &at,
        GradientFlow::Full,
        Kind::Smooth,
        |p, x| p.loss(&ctx, x, &sel).unwrap().loss,
    );
}

#[test]
fn smooth_scene_truncated_flow_gradient_matches_finite_differences() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture_of(&ctx, Kind::Smooth);
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    let at = start_of(&p, Kind::Smooth);
    let sel = all();
    let frozen = p.forward_states(&ctx, &at, FRAMES).unwrap();
    check_flow(
        &ctx,
        &mut p,
        &at,
        GradientFlow::Truncated,
        Kind::Smooth,
        |p, x| p.truncated_loss(&ctx, x, &sel, &frozen).unwrap().loss,
    );
}

/// Weight of the velocity smoothness term in its test: its gradient is then
/// of the order of the images' (largest component 1.3e-2 against 3.7e-2).
const VELOCITY_TV_WEIGHT: f64 = 0.2;

/// The optional smoothness term on the initial velocity (issue 12): off by
/// default, and at weight 0 the loss and gradients are those without it;
/// at a weight, the loss gains `weight · velocity_tv` and the v0 gradient
/// `weight · Mᵀ ∂TV/∂v` (host [`physfit::loss::tv_vector`] over the driver
/// graph, through the velocity map's transpose), anchored drivers' stay
/// exactly 0, and the whole gradient agrees with FD on the smooth scene.
#[test]
fn velocity_smoothness_term_matches_finite_differences() {
    use physfit::loss::{tv_vector, TV_EPSILON};
    let ctx = common::gpu();
    let (_dir, scene) = fixture_of(&ctx, Kind::Smooth);
    let plain = options(&scene);
    assert_eq!(plain.velocity_tv_weight, 0.0, "off by default");
    let mut weighted = plain.clone();
    weighted.velocity_tv_weight = VELOCITY_TV_WEIGHT;
    let mut p0 = FitProblem::new(&ctx, &scene, &plain).unwrap();
    let mut pw = FitProblem::new(&ctx, &scene, &weighted).unwrap();
    let at = start_of(&p0, Kind::Smooth);
    let e0 = p0.evaluate(&ctx, &at, &all(), GradientFlow::Full).unwrap();
    let g0 = e0.read(&ctx).unwrap();
    let ew = pw.evaluate(&ctx, &at, &all(), GradientFlow::Full).unwrap();
    let gw = ew.read(&ctx).unwrap();
    // Reported whatever the weight; in the loss only with a weight.
    assert!(e0.report.velocity_tv > 0.0);
    assert_eq!(
        e0.report.loss,
        e0.report.image + plain.tv_weight * e0.report.tv
    );
    assert_eq!(e0.report.velocity_tv, ew.report.velocity_tv);
    let added = ew.report.loss - e0.report.loss;
    eprintln!(
        "velocity TV {:.6e}, weighted {:.6e}, loss {:.6e} → {:.6e}",
        e0.report.velocity_tv,
        VELOCITY_TV_WEIGHT * e0.report.velocity_tv,
        e0.report.loss,
        ew.report.loss
    );
    assert!(
        // Two evaluations: run-to-run noise of float atomics, as above.
        (added - VELOCITY_TV_WEIGHT * e0.report.velocity_tv).abs() <= 1e-5 * ew.report.loss,
        "{added}"
    );
    // The gradient's added part: the host TV gradient through Mᵀ.
    let v = pw.velocity_map().apply(&at.velocity).unwrap();
    let v3: Vec<[f64; 3]> = v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    let tv = tv_vector(&v3, &pw.drivers().graph, TV_EPSILON).unwrap();
    assert!((tv.value - e0.report.velocity_tv).abs() <= 1e-12 * tv.value);
    let flat: Vec<f64> = tv.gradient.iter().flatten().copied().collect();
    let want = pw.velocity_map().transpose(&flat);
    let image_scale = g0.velocity.iter().fold(0.0f32, |a, b| a.max(b.abs()));
    let tv_scale = want.iter().fold(0.0f64, |a, b| a.max(b.abs())) * VELOCITY_TV_WEIGHT;
    eprintln!("largest |∂/∂v0|: images {image_scale:.3e}, weighted TV {tv_scale:.3e}");
    assert!(tv_scale > 0.1 * f64::from(image_scale));
    for (i, ((a, b), w)) in gw.velocity.iter().zip(&g0.velocity).zip(&want).enumerate() {
        let got = f64::from(*a) - f64::from(*b);
        assert!(
            (got - VELOCITY_TV_WEIGHT * w).abs() <= 1e-4 * f64::from(image_scale) + 1e-5 * tv_scale,
            "v0[{i}]: {got} vs {}",
            VELOCITY_TV_WEIGHT * w
        );
    }
    // log10 E's gradient is untouched (to the run-to-run noise of atomics).
    let e_scale = g0.youngs.iter().fold(0.0f32, |a, b| a.max(b.abs()));
    for (i, (a, b)) in gw.youngs.iter().zip(&g0.youngs).enumerate() {
        assert!((a - b).abs() <= 1e-5 * e_scale, "log10 E[{i}]: {a} vs {b}");
    }
    let sel = all();
    check_flow(
        &ctx,
        &mut pw,
        &at,
        GradientFlow::Full,
        Kind::Smooth,
        |p, x| p.loss(&ctx, x, &sel).unwrap().loss,
    );
}
