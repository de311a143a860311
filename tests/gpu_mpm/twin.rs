//! GPU MPM against its f64 CPU twin (src/reference/mpm, docs/design.md
//! § Verification 3 and 6): forward positions after 100 substeps within
//! 1e-3·dx, the adjoint's ∂L/∂E and ∂L/∂(initial state) within 1e-3
//! relative, and, at a fit's length (3 frames × 100 substeps, E ≈ 1e5 on a
//! 32³ grid, sticky walls touched, anchored particles, both scatter
//! variants, both gradient flows), per-particle ∂L/∂E and ∂L/∂v0 component
//! by component.

#![allow(clippy::needless_range_loop)] // parallel per-particle arrays

use crate::common;

use crate::support::*;
use physfit::gpu::GpuContext;
use physfit::mpm::layout::STATE_STRIDE;
use physfit::mpm::{
    BackwardOptions, BackwardWork, FrameGradient, GradientFlow, HostMpmGradients, MpmConfig,
    MpmOptions, MpmSetup, MpmSimulator, ParticleState, ScatterMode, WallMode,
};
use physfit::mpm_rules::config::Transfer;
use physfit::mpm_rules::AnchorRule;
use physfit::reference::mpm::{frames_gradient, rollout, rollout_gradient, MpmSetup64, MpmState64};

pub(crate) fn to64(s: &ParticleState) -> MpmState64 {
    let v3 = |a: &[f32; 3]| a.map(|x| x as f64);
    let m3 = |m: &[[f32; 3]; 3]| m.map(|r| r.map(|x| x as f64));
    MpmState64 {
        x: s.x.iter().map(v3).collect(),
        v: s.v.iter().map(v3).collect(),
        c: s.c.iter().map(m3).collect(),
        f: s.f.iter().map(m3).collect(),
    }
}

fn to32(s: &MpmState64) -> ParticleState {
    let v3 = |a: &[f64; 3]| a.map(|x| x as f32);
    let m3 = |m: &[[f64; 3]; 3]| m.map(|r| r.map(|x| x as f32));
    ParticleState {
        x: s.x.iter().map(v3).collect(),
        v: s.v.iter().map(v3).collect(),
        c: s.c.iter().map(m3).collect(),
        f: s.f.iter().map(m3).collect(),
    }
}

struct Scene {
    config: MpmConfig,
    start: ParticleState,
    youngs: Vec<f32>,
    anchored: Vec<bool>,
    /// The points whose floor nodes the `splats` rule holds.
    held_points: Vec<[f32; 3]>,
    volume: f64,
}

/// A block with a smooth swirl, varied E; optionally gravity, an anchored
/// corner (holding its nodes by `anchoring`) and slip walls close enough to
/// be touched; the particle–grid transfer `transfer`.
fn scene_with_transfer(with_rules: bool, anchoring: AnchorRule, transfer: Transfer) -> Scene {
    let mut config = small_config();
    config.anchoring = anchoring;
    config.transfer = transfer;
    let spacing = 1.0 / 32.0;
    let centre = if with_rules {
        [0.5, 0.25, 0.5]
    } else {
        [0.5, 0.5, 0.5]
    };
    let x = block(if with_rules { 6 } else { 4 }, spacing, centre);
    let n = x.len();
    let v = swirl(&x, centre, 0.5);
    let anchored = if with_rules {
        config.gravity = [0.0, -3.0, 0.0];
        config.damping = 2.0;
        config.walls = WallMode::Slip;
        // One corner particle: its 27 nodes (or its nearest one) hold one
        // end of the block.
        (0..n).map(|p| p == 0).collect()
    } else {
        vec![false; n]
    };
    let youngs = pseudo_random(n, 9)
        .iter()
        .map(|r| 2e4 * (1.0 + 0.4 * r))
        .collect();
    // Under `splats`: a dense patch of points around the anchored corner,
    // as a scene's anchored splats are denser than its drivers, its floor
    // nodes holding the end. The patch is longer along x than along z, so
    // that a transposed node layout would hold other nodes.
    let held_points = match anchoring {
        AnchorRule::Splats if with_rules => (0..27)
            .map(|i| {
                let o = [i % 3, i / 3 % 3, i / 9].map(|k| k as f32);
                let o = [o[0] * spacing, o[1] * spacing / 3.0, o[2] * spacing / 6.0];
                std::array::from_fn(|a| x[0][a] + o[a])
            })
            .collect(),
        _ => Vec::new(),
    };
    Scene {
        config,
        start: rest_state(x, v),
        youngs,
        anchored,
        held_points,
        volume: (spacing as f64).powi(3),
    }
}

fn simulator(ctx: &GpuContext, s: &Scene) -> MpmSimulator {
    simulator_with(ctx, s, ScatterMode::Auto)
}

fn simulator_with(ctx: &GpuContext, s: &Scene, scatters: ScatterMode) -> MpmSimulator {
    let youngs_max = s.youngs.iter().fold(0.0f32, |a, &b| a.max(b)) as f64;
    MpmSimulator::with_options(
        ctx,
        &s.config,
        &MpmSetup {
            particle_volume: s.volume,
            anchored: s.anchored.clone(),
            held_points: s.held_points.clone(),
            youngs: s.youngs.clone(),
            youngs_max,
        },
        &MpmOptions {
            scatters,
            ..Default::default()
        },
    )
    .unwrap()
}

/// The backward pass of `rollout` for seeds `∂L/∂(state k)`, read back.
fn gpu_gradients(
    ctx: &GpuContext,
    sim: &MpmSimulator,
    rollout: &physfit::mpm::Rollout,
    seeds: &[(usize, &physfit::gpu::GpuBuffer)],
    flow: GradientFlow,
) -> HostMpmGradients {
    let grads: Vec<FrameGradient> = seeds
        .iter()
        .map(|&(frame, grad)| FrameGradient { frame, grad })
        .collect();
    let options = BackwardOptions {
        flow,
        checkpoint_every: None,
    };
    sim.backward(ctx, rollout, &grads, &options, &mut BackwardWork::new())
        .unwrap()
        .read(ctx)
        .unwrap()
}

fn setup64(s: &Scene) -> MpmSetup64 {
    MpmSetup64 {
        config: s.config.clone(),
        particle_volume: s.volume,
        anchored: s.anchored.clone(),
        held_points: s.held_points.iter().map(|p| p.map(f64::from)).collect(),
        poisson: None,
    }
}

fn forward_matches(with_rules: bool, anchoring: AnchorRule) {
    forward_matches_in(with_rules, anchoring, Transfer::Apic);
}

fn forward_matches_in(with_rules: bool, anchoring: AnchorRule, transfer: Transfer) {
    // The nearest-node rule marks its node in both scatter kernels
    // (p2g.wgsl and p2g_bin.wgsl), and under `splats` both scatters leave
    // the flags the grid clear wrote: each is checked.
    let modes: &[ScatterMode] = match anchoring {
        AnchorRule::Stencil => &[ScatterMode::Auto],
        AnchorRule::Nearest | AnchorRule::Splats => &[ScatterMode::Binned, ScatterMode::Atomic],
    };
    for &scatters in modes {
        forward_matches_with(with_rules, anchoring, transfer, scatters);
    }
}

fn forward_matches_with(
    with_rules: bool,
    anchoring: AnchorRule,
    transfer: Transfer,
    scatters: ScatterMode,
) {
    let ctx = common::gpu();
    let s = scene_with_transfer(with_rules, anchoring, transfer);
    let sim = simulator_with(&ctx, &s, scatters);
    let frames = 10; // 100 substeps
    let gpu = sim.rollout(&ctx, &s.start, frames).unwrap();
    let gpu_end = sim.read_state(&ctx, gpu.frames.last().unwrap()).unwrap();
    let youngs64: Vec<f64> = s.youngs.iter().map(|&e| e as f64).collect();
    let substeps = (frames * s.config.substeps_per_frame) as usize;
    let twin = rollout(&setup64(&s), &to64(&s.start), &youngs64, substeps);
    let twin_end = twin.last().unwrap();
    let dx = s.config.dx();
    let mut worst = 0.0f64;
    let mut travelled = 0.0f64;
    for p in 0..s.start.len() {
        for a in 0..3 {
            worst = worst.max((gpu_end.x[p][a] as f64 - twin_end.x[p][a]).abs());
            travelled = travelled.max((twin_end.x[p][a] - s.start.x[p][a] as f64).abs());
        }
    }
    eprintln!(
        "rules {with_rules}, {transfer:?}, {scatters:?}: max |x_gpu − x_twin| after {substeps} substeps = {:.2e}·dx (max travel {:.2}·dx)",
        worst / dx,
        travelled / dx
    );
    // The rules scene is held by its anchored corner and touches the slip
    // floor from the start (its lowest stencil nodes are wall nodes), so it
    // moves less.
    let min_travel = if with_rules { 0.05 } else { 0.5 };
    assert!(travelled > min_travel * dx, "the scene barely moved");
    assert!(worst <= 1e-3 * dx, "{} dx", worst / dx);
}

#[test]
fn forward_matches_the_twin_after_100_substeps() {
    forward_matches(false, AnchorRule::Stencil);
}

#[test]
fn forward_with_gravity_damping_anchors_and_slip_walls_matches_the_twin() {
    forward_matches(true, AnchorRule::Stencil);
}

#[test]
fn forward_with_the_nearest_node_anchoring_matches_the_twin() {
    forward_matches(true, AnchorRule::Nearest);
}

/// `∂L/∂E` per particle and `∂L/∂v0` per particle and axis of GPU
/// gradients, in f64 for comparisons with the twin.
pub(crate) fn youngs_and_velocity(g: &HostMpmGradients) -> (Vec<f64>, Vec<f64>) {
    let youngs = g.youngs.iter().map(|&v| v as f64).collect();
    let velocity = g
        .initial_state
        .v
        .iter()
        .flatten()
        .map(|&v| v as f64)
        .collect();
    (youngs, velocity)
}

pub(crate) fn relative(a: &[f64], b: &[f64]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
    let n: f64 = b.iter().map(|y| y * y).sum::<f64>();
    (d / n).sqrt()
}

fn adjoint_matches(with_rules: bool, anchoring: AnchorRule) {
    adjoint_matches_with(with_rules, anchoring, Transfer::Apic, ScatterMode::Auto);
}

fn adjoint_matches_with(
    with_rules: bool,
    anchoring: AnchorRule,
    transfer: Transfer,
    scatters: ScatterMode,
) {
    let ctx = common::gpu();
    let s = scene_with_transfer(with_rules, anchoring, transfer);
    let sim = simulator_with(&ctx, &s, scatters);
    let frames = 2;
    let n = s.start.len();
    let weights = pseudo_random(n * STATE_STRIDE, 21);
    let rollout_gpu = sim.rollout(&ctx, &s.start, frames).unwrap();
    let seed = ctx.storage_from_slice("dL/dstate", &weights).unwrap();
    let g = gpu_gradients(
        &ctx,
        &sim,
        &rollout_gpu,
        &[(frames as usize, &seed)],
        GradientFlow::Full,
    );
    let youngs64: Vec<f64> = s.youngs.iter().map(|&e| e as f64).collect();
    let seed64 = to64(&ParticleState::from_packed(&weights));
    let twin = rollout_gradient(
        &setup64(&s),
        &to64(&s.start),
        &youngs64,
        (frames * s.config.substeps_per_frame) as usize,
        &seed64,
    );
    let gpu_e: Vec<f64> = g.youngs.iter().map(|&v| v as f64).collect();
    let de = relative(&gpu_e, &twin.d_youngs);
    let gpu_state: Vec<f64> = g
        .initial_state
        .to_packed()
        .iter()
        .map(|&v| v as f64)
        .collect();
    let twin_state: Vec<f64> = to32(&twin.d_initial)
        .to_packed()
        .iter()
        .map(|&v| v as f64)
        .collect();
    let ds = relative(&gpu_state, &twin_state);
    let gpu_v: Vec<f64> = g
        .initial_state
        .v
        .iter()
        .flatten()
        .map(|&v| v as f64)
        .collect();
    let twin_v: Vec<f64> = twin.d_initial.v.iter().flatten().copied().collect();
    let dv = relative(&gpu_v, &twin_v);
    eprintln!(
        "rules {with_rules}, {transfer:?}, {scatters:?}: relative GPU vs twin: dL/dE {de:.2e}, dL/dv0 {dv:.2e}, dL/d(state 0) {ds:.2e}"
    );
    assert!(de <= 1e-3 && dv <= 1e-3 && ds <= 1e-3, "{de}, {dv}, {ds}");
}

/// The `splats` rule: the grid clear writes the held nodes of a dense
/// patch of points, and no particle marks any.
#[test]
fn forward_with_the_anchored_splats_rule_matches_the_twin() {
    forward_matches(true, AnchorRule::Splats);
}

#[test]
fn adjoint_matches_the_twin() {
    adjoint_matches(false, AnchorRule::Stencil);
}

#[test]
fn adjoint_with_gravity_damping_anchors_and_slip_walls_matches_the_twin() {
    adjoint_matches(true, AnchorRule::Stencil);
}

#[test]
fn adjoint_with_the_nearest_node_anchoring_matches_the_twin() {
    adjoint_matches(true, AnchorRule::Nearest);
}

#[test]
fn adjoint_with_the_anchored_splats_rule_matches_the_twin() {
    for scatters in [ScatterMode::Binned, ScatterMode::Atomic] {
        adjoint_matches_with(true, AnchorRule::Splats, Transfer::Apic, scatters);
    }
}

/// The FLIP transfer (a PIC share per unit of time, src/mpm_rules/config.rs
/// `Transfer`): its six kernels (src/mpm/flip.rs) against the twin's
/// FLIP, forward and adjoint, with gravity, damping, an anchored corner
/// under both anchoring rules and slip walls, in both scatter variants.
const FLIP: Transfer = Transfer::Flip { pic_time: 0.05 };

#[test]
fn forward_with_the_flip_transfer_matches_the_twin() {
    forward_matches_in(false, AnchorRule::Stencil, FLIP);
    for scatters in [ScatterMode::Binned, ScatterMode::Atomic] {
        forward_matches_with(true, AnchorRule::Stencil, FLIP, scatters);
    }
    forward_matches_in(true, AnchorRule::Nearest, FLIP);
    forward_matches_in(true, AnchorRule::Splats, FLIP);
}

#[test]
fn adjoint_with_the_flip_transfer_matches_the_twin() {
    adjoint_matches_with(false, AnchorRule::Stencil, FLIP, ScatterMode::Auto);
    for scatters in [ScatterMode::Binned, ScatterMode::Atomic] {
        adjoint_matches_with(true, AnchorRule::Stencil, FLIP, scatters);
    }
    adjoint_matches_with(true, AnchorRule::Nearest, FLIP, ScatterMode::Auto);
    adjoint_matches_with(true, AnchorRule::Splats, FLIP, ScatterMode::Auto);
    adjoint_matches_with(
        true,
        AnchorRule::Stencil,
        Transfer::Flip {
            pic_time: f64::INFINITY,
        },
        ScatterMode::Auto,
    );
}

fn rotation(axis: [f64; 3], angle: f64) -> [[f64; 3]; 3] {
    let n = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]).sqrt();
    let [x, y, z] = axis.map(|a| a / n);
    let (s, c) = angle.sin_cos();
    let t = 1.0 - c;
    [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
    ]
}

fn mul(a: [[f64; 3]; 3], b: [[f64; 3]; 3]) -> [[f64; 3]; 3] {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

fn diag(d: [f64; 3]) -> [[f64; 3]; 3] {
    std::array::from_fn(|i| std::array::from_fn(|j| if i == j { d[i] } else { 0.0 }))
}

/// The robust SVD and the polar derivative where naive ones fail: isolated
/// particles (4·dx apart, stencils disjoint) with inverted, degenerate
/// (equal singular values) and nearly singular F. One substep from rest
/// (v = C = 0, no gravity), so C' is the stress response alone.
#[test]
fn stress_and_its_adjoint_match_the_twin_for_hard_deformation_gradients() {
    let ctx = common::gpu();
    let r1 = rotation([1.0, 2.0, 3.0], 0.7);
    let r2 = rotation([-2.0, 0.5, 1.0], 2.1);
    let fs: Vec<[[f64; 3]; 3]> = vec![
        mul(r1, diag([1.1, 0.9, 1.0])),
        diag([1.0, 0.8, -0.5]),                      // inverted
        mul(r2, diag([0.8, 0.8, 0.8])),              // all singular values equal
        mul(mul(r1, diag([1.2, 1.0, 1e-3])), r2),    // nearly singular
        mul(mul(r2, diag([1.1, 1.1, 0.9])), r1),     // two equal
        mul(mul(r1, diag([1.3, 0.7, -0.6])), r2),    // inverted, rotated
        mul(mul(r2, diag([1.0, 0.5, -0.4995])), r1), // inverted, σ₂ + σ₃ ≈ 0: polar guard near its limit
    ];
    let n = fs.len();
    let mut config = small_config();
    config.substeps_per_frame = 1;
    config.fps = 240.0;
    let x: Vec<[f32; 3]> = (0..n)
        .map(|p| {
            [
                0.3 + 0.25 * (p % 3) as f32,
                0.35 + 0.25 * (p / 3) as f32,
                0.5,
            ]
        })
        .collect();
    let mut start = rest_state(x, vec![[0.0; 3]; n]);
    for p in 0..n {
        start.f[p] = fs[p].map(|r| r.map(|v| v as f32));
    }
    let s = Scene {
        config,
        start,
        youngs: vec![1e4; n],
        anchored: vec![false; n],
        held_points: Vec::new(),
        volume: (1.0f64 / 32.0).powi(3),
    };
    let sim = simulator(&ctx, &s);
    let gpu = sim.rollout(&ctx, &s.start, 1).unwrap();
    let gpu_next = sim.read_state(&ctx, &gpu.frames[1]).unwrap();
    let youngs64 = vec![1e4; n];
    let twin = rollout(&setup64(&s), &to64(&s.start), &youngs64, 1);
    for p in 0..n {
        let g: Vec<f64> = gpu_next.c[p].iter().flatten().map(|&v| v as f64).collect();
        let t: Vec<f64> = twin[1].c[p].iter().flatten().copied().collect();
        let rel = relative(&g, &t);
        eprintln!(
            "F #{p}: relative C' error {rel:.2e} (|C'| = {:.3e})",
            t.iter().map(|v| v * v).sum::<f64>().sqrt()
        );
        assert!(rel <= 1e-4, "particle {p}: GPU C' {g:?} vs twin {t:?}");
    }
    // Adjoint through the same substep, random seed on the whole state.
    let weights = pseudo_random(n * STATE_STRIDE, 77);
    let seed = ctx.storage_from_slice("dL/dstate", &weights).unwrap();
    let grad = gpu_gradients(&ctx, &sim, &gpu, &[(1, &seed)], GradientFlow::Full);
    let twin_grad = rollout_gradient(
        &setup64(&s),
        &to64(&s.start),
        &youngs64,
        1,
        &to64(&ParticleState::from_packed(&weights)),
    );
    for p in 0..n {
        let g: Vec<f64> = grad.initial_state.f[p]
            .iter()
            .flatten()
            .map(|&v| v as f64)
            .collect();
        let t: Vec<f64> = twin_grad.d_initial.f[p].iter().flatten().copied().collect();
        let rel = relative(&g, &t);
        let de =
            (grad.youngs[p] as f64 - twin_grad.d_youngs[p]).abs() / twin_grad.d_youngs[p].abs();
        eprintln!("F #{p}: relative dL/dF error {rel:.2e}, dL/dE error {de:.2e}");
        assert!(rel <= 1e-3 && de <= 1e-3, "particle {p}: dF {rel}, dE {de}");
    }
}

/// Largest per-component relative error of `gpu` against `twin`, each
/// component's error divided by max(|twin component|, floor · max |twin|):
/// components far below the typical magnitude are judged against the
/// floor, so that one tiny component's rounding cannot dominate, yet no
/// norm hides one bad particle. Returns the error and its index.
fn max_relative(gpu: &[f64], twin: &[f64], floor: f64) -> (f64, usize) {
    assert_eq!(gpu.len(), twin.len());
    let scale = twin.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(scale > 0.0, "the twin gradient is zero");
    gpu.iter()
        .zip(twin)
        .enumerate()
        .map(|(i, (g, t))| ((g - t).abs() / t.abs().max(floor * scale), i))
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a })
}

/// The relative floor of [`max_relative`] for the fit-scale comparison.
const FIT_SCALE_FLOOR: f64 = 1e-2;

/// A fit-scale scene (docs/design.md § Verification 6): a 32³ grid at 30 fps
/// with 100 substeps, density 2000, E ≈ 1e5 varied per particle, gravity,
/// sticky walls (the demo's setting), a 6 × 8 × 6 block of particles
/// (spacing dx/2) hanging from its anchored top layer, whose low-x face
/// lies within reach of the wall nodes (node index < 3) from the start, and
/// a swirling initial velocity.
fn fit_scale_scene() -> Scene {
    let grid_res = 32;
    let dx = 1.0 / grid_res as f32;
    let config = MpmConfig {
        grid_res,
        fps: 30.0,
        substeps_per_frame: 100,
        gravity: [0.0, -2.0, 0.0],
        damping: 0.0,
        density: 2000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
        colliders: Vec::new(),
        anchoring: AnchorRule::Stencil,
        transfer: Default::default(),
    };
    let needed = physfit::mpm_rules::stability::min_substeps_per_frame(
        config.fps,
        1.3e5,
        config.poisson,
        config.density,
        config.dx(),
    );
    assert!(
        config.substeps_per_frame >= needed,
        "needs {needed} substeps"
    );
    let spacing = dx / 2.0;
    let mut x = Vec::new();
    let (nx, ny, nz) = (6, 8, 6);
    // Lowest x at 3.3·dx: base cell 2 of the quadratic stencil, whose
    // nodes 2..=4 include wall node 2.
    let origin = [
        3.3 * dx,
        0.5 - ny as f32 * spacing / 2.0,
        0.5 - nz as f32 * spacing / 2.0,
    ];
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                let jitter = |a: usize| ((a * 7919 + 13) % 97) as f32 / 97.0 * 0.1 * spacing;
                x.push([
                    origin[0] + i as f32 * spacing + jitter(i + 3 * j + 5 * k),
                    origin[1] + j as f32 * spacing + jitter(2 * i + j + 7 * k),
                    origin[2] + k as f32 * spacing + jitter(3 * i + 11 * j + k),
                ]);
            }
        }
    }
    let n = x.len();
    let top = x.iter().map(|p| p[1]).fold(f32::NEG_INFINITY, f32::max);
    let anchored: Vec<bool> = x.iter().map(|p| p[1] > top - 0.5 * spacing).collect();
    let centre = [origin[0] + (nx - 1) as f32 * spacing / 2.0, 0.5, 0.5];
    let v = swirl(&x, centre, 0.3);
    let youngs = pseudo_random(n, 31)
        .iter()
        .map(|r| 1e5 * (1.0 + 0.3 * r))
        .collect();
    Scene {
        config,
        start: rest_state(x, v),
        youngs,
        anchored,
        held_points: Vec::new(),
        volume: (spacing as f64).powi(3),
    }
}

/// At a fit's length, the GPU's per-particle ∂L/∂E and ∂L/∂v0 match the
/// twin's component by component, for both scatter variants and both
/// gradient flows, with seeds on x, v, C and F at frames 1, 2 and 3.
#[test]
fn fit_scale_gradients_match_the_twin_per_component() {
    let ctx = common::gpu();
    let s = fit_scale_scene();
    let n = s.start.len();
    let frames = 3usize;
    let setup = setup64(&s);
    let youngs64: Vec<f64> = s.youngs.iter().map(|&e| e as f64).collect();
    let weights: Vec<Vec<f32>> = (1..=frames)
        .map(|k| pseudo_random(n * STATE_STRIDE, 40 + k as u64))
        .collect();
    let seeds64: Vec<(usize, MpmState64)> = weights
        .iter()
        .enumerate()
        .map(|(i, w)| (i + 1, to64(&ParticleState::from_packed(w))))
        .collect();
    let anchored = s.anchored.iter().filter(|a| **a).count();
    assert!(anchored > 0 && anchored < n);
    // The block touches the sticky wall: some free particle's stencil
    // reaches wall node 2 along x from the start.
    let dx = s.config.dx();
    assert!(s
        .start
        .x
        .iter()
        .zip(&s.anchored)
        .any(|(x, a)| !a && ((x[0] as f64 / dx - 0.5).floor() as i64) <= 2));
    for flow in [GradientFlow::Full, GradientFlow::Truncated] {
        let twin = frames_gradient(&setup, &to64(&s.start), &youngs64, frames, &seeds64, flow);
        let twin_v: Vec<f64> = twin.d_initial.v.iter().flatten().copied().collect();
        for scatters in [ScatterMode::Binned, ScatterMode::Atomic] {
            let sim = simulator_with(&ctx, &s, scatters);
            let rollout = sim.rollout(&ctx, &s.start, frames as u32).unwrap();
            let bufs: Vec<_> = weights
                .iter()
                .map(|w| ctx.storage_from_slice("dL/dstate", w).unwrap())
                .collect();
            let seeds: Vec<(usize, &physfit::gpu::GpuBuffer)> =
                bufs.iter().enumerate().map(|(i, b)| (i + 1, b)).collect();
            let g = gpu_gradients(&ctx, &sim, &rollout, &seeds, flow);
            let (gpu_e, gpu_v) = youngs_and_velocity(&g);
            // Anchored particles stay at F = I, where the stress is 0 for
            // every E: no ∂L/∂E (to f32 rounding of the SVD of I).
            let scale = twin.d_youngs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for p in (0..n).filter(|p| s.anchored[*p]) {
                assert!(gpu_e[p].abs() <= 1e-6 * scale, "anchored particle {p}");
            }
            let (de, pe) = max_relative(&gpu_e, &twin.d_youngs, FIT_SCALE_FLOOR);
            let (dv, pv) = max_relative(&gpu_v, &twin_v, FIT_SCALE_FLOOR);
            eprintln!(
                "{flow:?}, {scatters:?}: max per-component relative error (floor \
                 {FIT_SCALE_FLOOR:.0e}·max): dL/dE {de:.2e} (particle {pe}), dL/dv0 {dv:.2e} \
                 (component {pv}); norms: dE {:.2e}, dv0 {:.2e}",
                relative(&gpu_e, &twin.d_youngs),
                relative(&gpu_v, &twin_v)
            );
            // Measured on lavapipe (both variants, both flows): dL/dE
            // 3.4e-3–9.3e-3, dL/dv0 1.3e-4–3.2e-4 (norms 2.2e-4–2.4e-4 and
            // 3e-6–6.5e-6): f32 rounding grown over 300 substeps, worst on
            // particles whose gradient is near the floor. The bounds leave
            // 3× for other adapters' rounding; dropping an adjoint path
            // moves them far more (the grid-mass path alone changes ∂L/∂v0
            // by more than 1e-2 of its norm: tests/cpu/reference_mpm.rs).
            assert!(
                de <= 3e-2,
                "{flow:?} {scatters:?}: dL/dE particle {pe}: {de}"
            );
            assert!(
                dv <= 2e-3,
                "{flow:?} {scatters:?}: dL/dv0 component {pv}: {dv}"
            );
        }
    }
}

/// The FLIP transfer's gradients on the backward's other schedules against
/// the twin: the substep grids recomputed in each substep adjoint (no kept
/// grids: the ADJOINT stages on the simulator's own grid) and the
/// truncated flow (the fit's stage-2 pass), with kept grids and without.
#[test]
fn flip_gradients_match_the_twin_on_recomputed_grids_and_in_the_truncated_flow() {
    let ctx = common::gpu();
    let s = scene_with_transfer(true, AnchorRule::Stencil, FLIP);
    let frames = 2;
    let n = s.start.len();
    // Seeds at both frames, so that the truncated flow's ∂L/∂(state 0)
    // (frame 1's seed only) is not zero.
    let weights = [21, 22].map(|k| pseudo_random(n * STATE_STRIDE, k));
    let seeds = weights
        .each_ref()
        .map(|w| ctx.storage_from_slice("dL/dstate", w).unwrap());
    let seeds64: Vec<(usize, MpmState64)> = weights
        .iter()
        .enumerate()
        .map(|(k, w)| (k + 1, to64(&ParticleState::from_packed(w))))
        .collect();
    let youngs64: Vec<f64> = s.youngs.iter().map(|&e| e as f64).collect();
    let youngs_max = s.youngs.iter().fold(0.0f32, |a, &b| a.max(b)) as f64;
    for (keep_grids, flow) in [
        (false, GradientFlow::Full),
        (true, GradientFlow::Truncated),
        (false, GradientFlow::Truncated),
    ] {
        let sim = MpmSimulator::with_options(
            &ctx,
            &s.config,
            &MpmSetup {
                particle_volume: s.volume,
                anchored: s.anchored.clone(),
                held_points: Vec::new(),
                youngs: s.youngs.clone(),
                youngs_max,
            },
            &MpmOptions {
                kept_grids_budget: match keep_grids {
                    true => MpmOptions::default().kept_grids_budget,
                    false => 0,
                },
                ..Default::default()
            },
        )
        .unwrap();
        let rollout = sim.rollout(&ctx, &s.start, frames).unwrap();
        let g = gpu_gradients(
            &ctx,
            &sim,
            &rollout,
            &[(1, &seeds[0]), (2, &seeds[1])],
            flow,
        );
        let twin = frames_gradient(
            &setup64(&s),
            &to64(&s.start),
            &youngs64,
            frames as usize,
            &seeds64,
            flow,
        );
        let (gpu_e, gpu_v) = youngs_and_velocity(&g);
        let twin_v: Vec<f64> = twin.d_initial.v.iter().flatten().copied().collect();
        let de = relative(&gpu_e, &twin.d_youngs);
        let dv = relative(&gpu_v, &twin_v);
        eprintln!("FLIP, kept grids {keep_grids}, {flow:?}: relative GPU vs twin: dL/dE {de:.2e}, dL/dv0 {dv:.2e}");
        assert!(
            de <= 1e-3 && dv <= 1e-3,
            "kept grids {keep_grids}, {flow:?}: {de}, {dv}"
        );
    }
}

/// A FLIP configuration with a PIC time the transfer cannot run (zero,
/// negative or NaN) is refused by the simulator itself, naming τ, for a
/// caller that builds its configuration without a scene.
#[test]
fn the_simulator_refuses_a_flip_pic_time_it_cannot_run() {
    let ctx = common::gpu();
    for pic_time in [0.0, -0.1, f64::NAN] {
        let s = scene_with_transfer(false, AnchorRule::Stencil, Transfer::Flip { pic_time });
        let youngs_max = s.youngs.iter().fold(0.0f32, |a, &b| a.max(b)) as f64;
        let refused = MpmSimulator::new(
            &ctx,
            &s.config,
            &MpmSetup {
                particle_volume: s.volume,
                anchored: s.anchored.clone(),
                held_points: Vec::new(),
                youngs: s.youngs.clone(),
                youngs_max,
            },
        );
        let m = refused.err().expect("refused").to_string();
        assert!(
            m.contains("PIC time τ") && m.contains("positive"),
            "{pic_time}: {m}"
        );
    }
}
