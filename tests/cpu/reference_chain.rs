//! The f64 twin of the whole chain (src/reference/chain.rs: MPM twin →
//! deformation twin → render twin → loss twin, + TV) against central finite
//! differences, ≤ 1e-5, on a tiny scene: 16 drivers (4 anchored), 36
//! followers and 4 static splats, 3 frames of 8 substeps, two 24×16 views,
//! both flows.
//!
//! Every non-smooth point of the chain is piecewise constant, so each
//! finite-difference evaluation is checked to take the same discrete
//! decisions as the unperturbed run ([`Decisions`]): the MPM base cell of
//! every particle at every substep (quadratic B-splines are C¹ within a
//! cell), the depth order of the splats, and per pixel which splats pass
//! the 1/255 cutoff, which hit the 0.99 clamp and where the 1e-4
//! transmittance stop falls (the twin has no tiles), and the sign of every
//! `render − reference` (the L1 kink). The scene is chosen so these hold:
//! drivers one per cell at cell centres (mid-way between the cell
//! boundaries `x/dx − 0.5 ∈ ℤ`, moving ≤ 0.29 dx over the run); followers'
//! opacities 0.2–0.45 (the clamp is far) and colours inside (0, 1); splats
//! reach about half of each image's pixels (≥ 49 %), their centres at most
//! 0.31 of the way to the Jacobian's field-of-view clamp, and a pixel's
//! transmittance stays ≥ 2.7e-3 (the 1e-4 stop is far; all printed as
//! margins, and asserted with some room); references are 8-bit, made by
//! the chain's own forward at other parameters (a different E field and
//! velocity), so `render − reference` is nowhere near 0 where splats are.

use crate::common::deform_cases::{nearest, unit_quat_scaled, Rng};
use glam::{Mat3, Vec3};
use physfit::deform::DeformSetup;
use physfit::mpm_rules::config::{MpmConfig, WallMode};
use physfit::reference::chain::{
    chain_frame_states, chain_gradient, chain_gradient_with, chain_loss, chain_loss_held,
    chain_renders, rgb, ChainGradient64, ChainParams64, ChainPaths, ChainProblem64,
};
use physfit::reference::loss::{LossWeights64, Rgb64};
use physfit::reference::mpm::{rollout, GradientFlow, MpmSetup64, MpmState64};
use physfit::reference::splat::{project_all, render, Camera64, SplatParams64};
use physfit::scene::{Camera, SimBox};
use std::time::Instant;

type V3 = [f64; 3];

const GRID: u32 = 16;
const FRAMES: usize = 3;
/// Driver lattice: NX × 2 × 2, spacing dx; the x = 0 column is anchored.
const NX: usize = 4;

/// A camera at `centre` looking at `target` (OpenCV axes, y down), turned
/// by `yaw` about the world y axis.
fn camera(yaw: f32, target: Vec3, distance: f32) -> Camera {
    let rotation = Mat3::from_rotation_y(yaw) * Mat3::from_rotation_x(0.15);
    // Camera forward in world = Rᵀ e_z.
    let centre = target - distance * (rotation.transpose() * Vec3::Z);
    Camera {
        width: 24,
        height: 16,
        fx: 30.0,
        fy: 30.0,
        cx: 12.0,
        cy: 8.0,
        rotation,
        translation: -(rotation * centre),
        near: 0.01,
    }
}

struct Scene {
    problem: ChainProblem64,
    params: ChainParams64,
}

fn driver_index(i: usize, j: usize, k: usize) -> usize {
    (i * 2 + j) * 2 + k
}

fn scene() -> Scene {
    let mut rng = Rng(2024);
    let dx = 1.0 / GRID as f64;
    let sim_box = SimBox {
        min: [-2.0, -2.0, -2.0],
        side: 4.0,
    };
    // Drivers at cell centres (7 + i)·dx: x/dx − 0.5 = 6.5 + i, half a cell
    // from the nearest boundary, jittered by ≤ 0.1 dx.
    let mut rest_drivers = Vec::new();
    let mut anchored = Vec::new();
    for i in 0..NX {
        for j in 0..2 {
            for k in 0..2 {
                let u = rng.vec3();
                let idx = [7 + i, 8 + j, 8 + k];
                rest_drivers.push(std::array::from_fn(|a| {
                    ((idx[a] as f64 + 0.1 * u[a]) * dx) as f32
                }));
                anchored.push(i == 0);
            }
        }
    }
    let n = rest_drivers.len();
    // Followers at random points of the free part of the block (and a bit
    // beyond), each with its 8 nearest drivers; static splats near the
    // anchored column, at rest.
    let lo = [7.2 * dx, 7.8 * dx, 7.8 * dx];
    let hi = [(6.5 + NX as f64) * dx, 9.2 * dx, 9.2 * dx];
    let mut deform = DeformSetup {
        splat_index: Vec::new(),
        drivers: Vec::new(),
        rest_centres: Vec::new(),
        rest_rotations: Vec::new(),
        rest_drivers: rest_drivers.clone(),
        sim_box,
    };
    let mut splats = SplatParams64 {
        sh_degree: 0,
        ..Default::default()
    };
    let world = |c: V3| -> V3 { std::array::from_fn(|a| sim_box.min[a] + sim_box.side * c[a]) };
    let push_splat = |splats: &mut SplatParams64, rng: &mut Rng, centre: V3, q: [f64; 4]| {
        splats.means.push(world(centre));
        splats.quats.push(q);
        let s = rng.vec3();
        // Anisotropic (axis ratios up to ~2.5), so that rotations show.
        splats
            .log_scales
            .push(std::array::from_fn(|a| [-1.6, -2.5, -2.0][a] + 0.15 * s[a]));
        // Opacity 0.2–0.45: far from the 0.99 clamp, and a pixel's
        // transmittance stays far above 1e-4.
        let o = 0.325 + 0.125 * rng.uniform();
        splats.opacity_logits.push((o / (1.0 - o)).ln());
        // Colour 0.5 + 0.28·c ∈ (0.2, 0.8): away from the ≥ 0 clamp.
        let c = rng.vec3();
        splats.sh.push(c.map(|v| 1.05 * v));
    };
    for g in 0..40 {
        let static_splat = g % 10 == 9;
        let u = rng.vec3();
        let centre: V3 = if static_splat {
            [
                7.0 * dx + 0.2 * dx * u[0],
                (8.5 + 0.6 * u[1]) * dx,
                (8.5 + 0.6 * u[2]) * dx,
            ]
        } else {
            std::array::from_fn(|a| 0.5 * (lo[a] + hi[a]) + 0.5 * u[a] * (hi[a] - lo[a]))
        };
        let q = unit_quat_scaled(&mut rng);
        if !static_splat {
            let c32 = centre.map(|v| v as f32);
            deform.splat_index.push(splats.len() as u32);
            deform.drivers.push(nearest(&rest_drivers, c32));
            deform.rest_centres.push(c32);
            deform.rest_rotations.push(q);
            // The follower's rest pose as the deformation sees it (f32).
            push_splat(&mut splats, &mut rng, c32.map(f64::from), q.map(f64::from));
        } else {
            push_splat(&mut splats, &mut rng, centre, q.map(f64::from));
        }
    }
    deform.validate().unwrap();
    let config = MpmConfig {
        grid_res: GRID,
        fps: 25.0,
        substeps_per_frame: 8,
        gravity: [0.0, -1.0, 0.0],
        damping: 0.0,
        density: 2000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
        colliders: Vec::new(),
        anchoring: physfit::mpm_rules::AnchorRule::Stencil,
        transfer: Default::default(),
    };
    let mpm = MpmSetup64 {
        config,
        particle_volume: dx.powi(3),
        anchored: anchored.clone(),
        held_points: Vec::new(),
        poisson: None,
    };
    // log10 E ≈ 4.3 (c ≈ 3.7 box/s, dt = 5 ms ≈ 0.3 dx/c): it sways
    // within the 0.12 s of the three frames.
    let log10_youngs: Vec<f64> = (0..n).map(|_| 4.3 + 0.15 * rng.uniform()).collect();
    // World units/s (side 4): up to ~0.35 dx of travel by frame 3; the
    // anchored drivers get nonzero values, which the chain must ignore.
    let velocity: Vec<V3> = (0..n)
        .map(|p| {
            let i = p / 4;
            let r = rng.vec3();
            [
                0.2 * i as f64 + 0.15 * r[0],
                0.35 * i as f64 + 0.15 * r[1],
                -0.25 * i as f64 + 0.15 * r[2],
            ]
        })
        .collect();
    // TV edges: lattice neighbours (a kNN graph's shape).
    let mut tv_edges = Vec::new();
    for i in 0..NX {
        for j in 0..2 {
            for k in 0..2 {
                let a = driver_index(i, j, k) as u32;
                if i + 1 < NX {
                    tv_edges.push((a, driver_index(i + 1, j, k) as u32));
                }
                if j == 0 {
                    tv_edges.push((a, driver_index(i, 1, k) as u32));
                }
                if k == 0 {
                    tv_edges.push((a, a + 1));
                }
            }
        }
    }
    let target = Vec3::from_array(world([8.6 * dx, 8.5 * dx, 8.5 * dx]).map(|v| v as f32));
    let cameras = vec![camera(0.0, target, 3.0), camera(0.6, target, 3.2)];
    let background = [40.0 / 255.0, 60.0 / 255.0, 90.0 / 255.0];
    let mut problem = ChainProblem64 {
        mpm,
        deform,
        splats,
        background,
        cameras,
        references: Vec::new(),
        weights: LossWeights64::default(),
        tv_edges,
        // Small enough that the images dominate ∂L/∂log10 E of the free
        // drivers (at 0.05 TV hid a missing `ln 10` to 1e-2); the anchored
        // driver's E, which only TV sees, checks TV's part on its own.
        tv_weight: 1e-3,
    };
    // References: the forward at another E field and velocity, 8-bit.
    let other = ChainParams64 {
        log10_youngs: log10_youngs
            .iter()
            .map(|p| p + 0.3 + 0.1 * rng.uniform())
            .collect(),
        velocity: velocity
            .iter()
            .map(|v| [0.7 * v[0] - 0.1, 1.2 * v[1], 0.8 * v[2] + 0.1])
            .collect(),
        velocity_gradient: Vec::new(),
    };
    problem.references = chain_renders(&problem, &other, FRAMES)
        .iter()
        .map(|views| views.iter().map(|img| quantise(&rgb(img))).collect())
        .collect();
    Scene {
        problem,
        params: ChainParams64 {
            log10_youngs,
            velocity,
            velocity_gradient: Vec::new(),
        },
    }
}

/// An 8-bit image read back as `value / 255`.
fn quantise(img: &Rgb64) -> Rgb64 {
    Rgb64 {
        width: img.width,
        height: img.height,
        pixels: img
            .pixels
            .iter()
            .map(|p| p.map(|v| (255.0 * v.clamp(0.0, 1.0)).round() / 255.0))
            .collect(),
    }
}

// ------------------------------------------------------------ decisions

/// The discrete decisions of one evaluation of the chain (module doc):
/// equal decisions along a finite-difference stencil mean the loss is
/// smooth there.
#[derive(Debug, PartialEq)]
struct Decisions {
    /// MPM base cell of every particle at every substep.
    cells: Vec<[i64; 3]>,
    /// Per frame and view: the depth order of the splats.
    order: Vec<Vec<usize>>,
    /// Per frame, view and pixel: the (splat, clamped) pairs blended, front
    /// to back, up to the transmittance stop.
    blended: Vec<Vec<(usize, bool)>>,
    /// Per frame, view, pixel and channel: sign of `render − reference`.
    signs: Vec<i8>,
}

/// Smallest margins seen at the unperturbed run: of any alpha to the
/// 1/255 cutoff (as `|ln(255·α)|`), of the opacity to 0.99, of the final
/// transmittance to 1e-4, of any `|render − reference|` where the render
/// is not plain background, of any colour to 0.
#[derive(Debug, Default)]
struct Margins {
    cutoff: f64,
    max_alpha: f64,
    min_transmittance: f64,
    min_residual: f64,
    min_colour: f64,
    max_fov: f64,
    /// Fraction of pixels some splat blends into (least over frames, views).
    min_covered: f64,
}

fn cells_of(states: &[MpmState64], dx: f64) -> Vec<[i64; 3]> {
    states
        .iter()
        .flat_map(|s| s.x.iter())
        .map(|x| std::array::from_fn(|a| (x[a] / dx - 0.5).floor() as i64))
        .collect()
}

/// The chain's loss at `params` (full flow, or truncated with `held`) and
/// its decisions.
fn evaluate(
    problem: &ChainProblem64,
    params: &ChainParams64,
    held: Option<&[MpmState64]>,
    margins: Option<&mut Margins>,
) -> (f64, Decisions) {
    let loss = match held {
        None => chain_loss(problem, params).total,
        Some(h) => chain_loss_held(problem, params, h).total,
    };
    let setup = &problem.mpm;
    let s = setup.config.substeps_per_frame as usize;
    let youngs = problem.youngs(params);
    let initial = problem.initial_state(params);
    // Substep states of every frame as the flow runs them.
    let mut frames_x = Vec::new();
    let mut cells = Vec::new();
    match held {
        None => {
            let states = rollout(setup, &initial, &youngs, FRAMES * s);
            cells.extend(cells_of(&states, setup.config.dx()));
            for k in 1..=FRAMES {
                frames_x.push(states[k * s].x.clone());
            }
        }
        Some(h) => {
            for k in 1..=FRAMES {
                let start = if k == 1 { &initial } else { &h[k - 1] };
                let states = rollout(setup, start, &youngs, s);
                cells.extend(cells_of(&states, setup.config.dx()));
                frames_x.push(states[s].x.clone());
            }
        }
    }
    let mut d = Decisions {
        cells,
        order: Vec::new(),
        blended: Vec::new(),
        signs: Vec::new(),
    };
    let mut m = Margins {
        cutoff: f64::MAX,
        min_transmittance: 1.0,
        min_residual: f64::MAX,
        min_colour: f64::MAX,
        min_covered: 1.0,
        ..Default::default()
    };
    for (k, x) in frames_x.iter().enumerate() {
        let splats = problem.posed_splats(x);
        for (cam, reference) in problem.cameras.iter().zip(&problem.references[k]) {
            let c = Camera64::from(cam);
            let projected = project_all(&splats, &c);
            assert_eq!(projected.len(), splats.len(), "a splat was culled");
            d.order.push(projected.iter().map(|p| p.index).collect());
            let (lim_x, lim_y) = c.fov_limits();
            for p in &projected {
                m.max_alpha = m.max_alpha.max(p.opacity);
                m.min_colour = p.colour.iter().fold(m.min_colour, |a, &b| a.min(b));
                let u = ((p.mean2d[0] - c.cx) / c.fx).abs() / lim_x;
                let v = ((p.mean2d[1] - c.cy) / c.fy).abs() / lim_y;
                m.max_fov = m.max_fov.max(u).max(v);
            }
            let image = render(&splats, cam, problem.background);
            let mut covered = 0usize;
            for py in 0..c.height {
                for px in 0..c.width {
                    let (fx, fy) = (px as f64 + 0.5, py as f64 + 0.5);
                    let mut t = 1.0;
                    let mut list = Vec::new();
                    for p in &projected {
                        let sigma = p.mahalanobis_half(fx, fy);
                        if sigma < 0.0 {
                            continue;
                        }
                        let raw = p.opacity * (-sigma).exp();
                        m.cutoff = m.cutoff.min((255.0 * raw).ln().abs());
                        let alpha = raw.min(0.99);
                        if alpha < 1.0 / 255.0 {
                            continue;
                        }
                        if t * (1.0 - alpha) <= 1e-4 {
                            break;
                        }
                        list.push((p.index, raw > 0.99));
                        t *= 1.0 - alpha;
                    }
                    m.min_transmittance = m.min_transmittance.min(t);
                    let pixel = py * c.width + px;
                    for ch in 0..3 {
                        let e = image.rgb[pixel][ch] - reference.pixels[pixel][ch];
                        d.signs.push(e.partial_cmp(&0.0).unwrap() as i8);
                        if !list.is_empty() {
                            m.min_residual = m.min_residual.min(e.abs());
                        }
                    }
                    covered += usize::from(!list.is_empty());
                    d.blended.push(list);
                }
            }
            m.min_covered = m
                .min_covered
                .min(covered as f64 / (c.width * c.height) as f64);
        }
    }
    if let Some(out) = margins {
        *out = m;
    }
    (loss, d)
}

/// The largest distance of a driver from its rest position over the
/// frames, in cells.
fn held_states_travel(problem: &ChainProblem64, params: &ChainParams64) -> f64 {
    let states = chain_frame_states(problem, params);
    let dx = problem.mpm.config.dx();
    states
        .iter()
        .flat_map(|s| s.x.iter().zip(&states[0].x))
        .map(|(x, x0)| (0..3).map(|a| (x[a] - x0[a]).powi(2)).sum::<f64>().sqrt() / dx)
        .fold(0.0, f64::max)
}

// ------------------------------------------------------- finite differences

/// A direction in (log10 E, v0 world).
#[derive(Clone)]
struct Direction {
    log10_youngs: Vec<f64>,
    velocity: Vec<V3>,
}

impl Direction {
    fn zero(n: usize) -> Self {
        Direction {
            log10_youngs: vec![0.0; n],
            velocity: vec![[0.0; 3]; n],
        }
    }

    fn apply(&self, params: &ChainParams64, t: f64) -> ChainParams64 {
        ChainParams64 {
            log10_youngs: params
                .log10_youngs
                .iter()
                .zip(&self.log10_youngs)
                .map(|(p, d)| p + t * d)
                .collect(),
            velocity: params
                .velocity
                .iter()
                .zip(&self.velocity)
                .map(|(v, d)| std::array::from_fn(|a| v[a] + t * d[a]))
                .collect(),
            velocity_gradient: params.velocity_gradient.clone(),
        }
    }

    fn derivative(&self, g: &ChainGradient64) -> f64 {
        let e: f64 = g
            .d_log10_youngs
            .iter()
            .zip(&self.log10_youngs)
            .map(|(a, b)| a * b)
            .sum();
        let v: f64 = g
            .d_velocity
            .iter()
            .zip(&self.velocity)
            .map(|(a, b)| (0..3).map(|c| a[c] * b[c]).sum::<f64>())
            .sum();
        e + v
    }
}

/// The directions: random in log10 E (all drivers, anchored included) and
/// in v0 (all drivers: the anchored components are held at zero and must
/// contribute nothing on either side), and single components: log10 E of a
/// driver next to the anchored column, in the middle and at the free end,
/// and of an anchored driver; v0 of two free drivers; TV alone is covered
/// by every log10 E direction.
fn directions(n: usize, rng: &mut Rng) -> Vec<(String, Direction)> {
    let mut out = Vec::new();
    let mut d = Direction::zero(n);
    d.log10_youngs = (0..n).map(|_| rng.uniform()).collect();
    out.push(("random log10 E".to_string(), d));
    let mut d = Direction::zero(n);
    d.velocity = (0..n).map(|_| rng.vec3()).collect();
    out.push(("random v0".to_string(), d));
    let mut d = Direction::zero(n);
    d.log10_youngs = (0..n).map(|_| rng.uniform()).collect();
    d.velocity = (0..n).map(|_| rng.vec3()).collect();
    out.push(("random (log10 E, v0)".to_string(), d));
    // (0, 0, 0) is anchored: its E moves nothing (its stencil's nodes are
    // all anchored), only TV sees it.
    for (i, j, k) in [(1, 0, 1), (2, 1, 0), (NX - 1, 1, 1), (0, 0, 0)] {
        let p = driver_index(i, j, k);
        let mut d = Direction::zero(n);
        d.log10_youngs[p] = 1.0;
        out.push((format!("log10 E_{p}"), d));
    }
    for (i, j, k, a) in [(2, 0, 1, 1), (NX - 1, 1, 0, 0)] {
        let p = driver_index(i, j, k);
        let mut d = Direction::zero(n);
        d.velocity[p][a] = 1.0;
        out.push((format!("v0_{p},{a}"), d));
    }
    out
}

/// Step in units of each direction: log10 E ± 1e-4 decades, v0 ± 1e-4
/// world units/s (v0 is ~0.1–1). The adjoint is exact up to roundoff, so
/// the comparison measures the finite difference's own error: Richardson's
/// extrapolation cancels the O(h²) truncation (printed as |D(h) − D(h/2)|,
/// up to ~1e-7 absolute here), and what is left is the loss's roundoff
/// over h (~1e-11 absolute; measured with a TV weight of 0.05: worst
/// 2.5e-7 relative at h = 1e-4, 1.9e-6 at 3e-5, 1.6e-6 at 1e-5, growing as
/// h shrinks; with this scene, worst 5.5e-7, and 3.7e-6 on the one
/// component under [`FLOOR`]). A larger h would move a splat's
/// 1/255 tail across a pixel centre: the closest alpha sits within
/// |ln(255·α)| ≈ 1.3e-4 of the cutoff and the closest `render − reference`
/// within ~1.7e-7 of 0 (printed as margins); the decision checks assert that
/// no evaluation crossed such a point.
const FD_STEP: f64 = 1e-4;

/// `(4·D(h/2) − D(h))/3` of central differences `D`, asserting every
/// evaluation takes the unperturbed run's decisions; also `|D(h) − D(h/2)|`.
fn richardson(loss: impl Fn(f64) -> (f64, Decisions), base: &Decisions, h: f64) -> (f64, f64) {
    let central = |t: f64| {
        let (lp, dp) = loss(t);
        let (lm, dm) = loss(-t);
        assert!(
            dp.cells == base.cells && dm.cells == base.cells,
            "a particle crossed a cell boundary at step {t:e}"
        );
        assert!(
            dp.order == base.order && dm.order == base.order,
            "depth order changed at step {t:e}"
        );
        assert!(
            dp.blended == base.blended && dm.blended == base.blended,
            "blend decisions changed at step {t:e}"
        );
        assert!(
            dp.signs == base.signs && dm.signs == base.signs,
            "an L1 sign flipped at step {t:e}"
        );
        (lp - lm) / (2.0 * t)
    };
    let (d1, d2) = (central(h), central(h / 2.0));
    ((4.0 * d2 - d1) / 3.0, (d1 - d2).abs())
}

const TOLERANCE: f64 = 1e-5;
/// Floor of the relative error's denominator, loss units: the roundoff of
/// a difference is ~1e-11 absolute here whatever the derivative, so a
/// component that nearly cancels (truncated ∂L/∂log10 E of the free-end
/// driver: 6.8e-6) is compared as `|fd − adjoint| / 1e-5`. The random
/// directions and every other component are above it (1e-4..1e-3).
const FLOOR: f64 = 1e-5;

/// Checks `flow`'s gradient against central differences along every
/// direction; returns the worst relative error.
fn check_flow(scene: &Scene, flow: GradientFlow) -> f64 {
    let t0 = Instant::now();
    let (problem, params) = (&scene.problem, &scene.params);
    let grad = chain_gradient(problem, params, flow);
    let held = chain_frame_states(problem, params);
    let held = match flow {
        GradientFlow::Full => None,
        GradientFlow::Truncated => Some(held.as_slice()),
    };
    let mut margins = Margins::default();
    let (l0, base) = evaluate(problem, params, held, Some(&mut margins));
    let travel = held_states_travel(problem, params);
    println!(
        "{flow:?}: loss {l0:.10e}, drivers' largest travel {travel:.2} dx, margins {margins:?}"
    );
    assert!(
        (l0 - grad.loss.total).abs() <= 1e-14 * l0,
        "gradient call's loss"
    );
    // Margins behind the decisions staying put (module doc).
    assert!(margins.max_alpha < 0.6);
    assert!(margins.min_transmittance > 1e-3);
    assert!(margins.min_colour > 0.1);
    assert!(
        margins.max_fov < 0.8,
        "near the Jacobian's field-of-view clamp"
    );
    // Anchored drivers' v0 is held at zero.
    for (p, &a) in problem.mpm.anchored.iter().enumerate() {
        if a {
            assert_eq!(grad.d_velocity[p], [0.0; 3]);
        }
    }
    // The same chain without the deformation adjoint's rotation path: it
    // must fail these checks (so they can fail).
    let ablated = chain_gradient_with(problem, params, flow, ChainPaths { rotations: false });
    let n = problem.drivers();
    let mut worst: f64 = 0.0;
    let mut worst_ablated: f64 = 0.0;
    for (label, d) in directions(n, &mut Rng(77)) {
        let loss = |t: f64| evaluate(problem, &d.apply(params, t), held, None);
        let (fd, fd_err) = richardson(loss, &base, FD_STEP);
        let an = d.derivative(&grad);
        let err = (fd - an).abs() / fd.abs().max(FLOOR);
        let err_ablated = (fd - d.derivative(&ablated)).abs() / fd.abs().max(FLOOR);
        println!(
            "{flow:?} {label}: fd {fd:.10e} (plain-difference error ~{fd_err:.1e}) adjoint {an:.10e} rel err {err:.2e} (without rotations {err_ablated:.2e})"
        );
        assert!(err <= TOLERANCE, "{flow:?} {label}: rel err {err:e}");
        worst = worst.max(err);
        worst_ablated = worst_ablated.max(err_ablated);
    }
    assert!(
        worst_ablated > 10.0 * TOLERANCE,
        "dropping the rotation path went unnoticed: {worst_ablated:e}"
    );
    // An anchored driver's v0: no effect at all, both sides exactly 0.
    let anchored = driver_index(0, 1, 0);
    assert!(problem.mpm.anchored[anchored]);
    let mut d = Direction::zero(n);
    d.velocity[anchored] = [1.0, -1.0, 0.5];
    let (lp, _) = evaluate(problem, &d.apply(params, 0.1), held, None);
    assert_eq!(lp, l0, "an anchored driver's v0 changed the loss");
    assert_eq!(d.derivative(&grad), 0.0);
    println!(
        "{flow:?}: worst rel err {worst:.2e} (without rotations {worst_ablated:.2e}) in {:?}",
        t0.elapsed()
    );
    worst
}

#[test]
fn chain_gradient_full_flow_matches_finite_differences() {
    check_flow(&scene(), GradientFlow::Full);
}

#[test]
fn chain_gradient_truncated_flow_matches_finite_differences() {
    check_flow(&scene(), GradientFlow::Truncated);
}

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    norm(&d) / norm(b)
}

fn flat(v: &[V3]) -> Vec<f64> {
    v.iter().flatten().copied().collect()
}

/// The flows cannot be swapped: their ∂L/∂log10 E and ∂L/∂v0 differ
/// (beyond what the checks above resolve), the loss does not.
#[test]
fn chain_flows_differ() {
    let scene = scene();
    let (problem, params) = (&scene.problem, &scene.params);
    let full = chain_gradient(problem, params, GradientFlow::Full);
    let truncated = chain_gradient(problem, params, GradientFlow::Truncated);
    assert_eq!(full.loss, truncated.loss);
    let de = rel_diff(&truncated.d_log10_youngs, &full.d_log10_youngs);
    let dv = rel_diff(&flat(&truncated.d_velocity), &flat(&full.d_velocity));
    println!("|truncated − full| / |full|: log10 E {de:.3e}, v0 {dv:.3e}");
    assert!(
        de > 1e-2 && dv > 1e-2,
        "flows differ by only {de:e}, {dv:e}"
    );
}
