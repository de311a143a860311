//! GPU MPM against its f64 CPU twin (src/reference/mpm, DESIGN.md
//! § Verification 3): forward positions after 100 substeps within 1e-3·dx,
//! and the adjoint's ∂L/∂E and ∂L/∂(initial state) within 1e-3 relative.

#![allow(clippy::needless_range_loop)] // parallel per-particle arrays

mod common;
mod mpm_support;

use mpm_support::*;
use physfit::gpu::GpuContext;
use physfit::mpm::layout::STATE_STRIDE;
use physfit::mpm::{
    BackwardOptions, FrameGradient, MpmConfig, MpmSetup, MpmSimulator, ParticleState, WallMode,
};
use physfit::reference::mpm::{rollout, rollout_gradient, MpmSetup64, MpmState64};

fn to64(s: &ParticleState) -> MpmState64 {
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
    volume: f64,
}

/// A block with a smooth swirl, varied E; optionally gravity, anchored top
/// layer and slip walls close enough to be touched.
fn scene(with_rules: bool) -> Scene {
    let mut config = small_config();
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
        // One corner particle: its 27 nodes hold one end of the block.
        (0..n).map(|p| p == 0).collect()
    } else {
        vec![false; n]
    };
    let youngs = pseudo_random(n, 9)
        .iter()
        .map(|r| 2e4 * (1.0 + 0.4 * r))
        .collect();
    Scene {
        config,
        start: rest_state(x, v),
        youngs,
        anchored,
        volume: (spacing as f64).powi(3),
    }
}

fn simulator(ctx: &GpuContext, s: &Scene) -> MpmSimulator {
    let sim = MpmSimulator::new(
        ctx,
        &s.config,
        &MpmSetup {
            particle_volume: s.volume,
            anchored: s.anchored.clone(),
            youngs_max: 3e4,
        },
    )
    .unwrap();
    sim.set_youngs(ctx, &s.youngs).unwrap();
    sim
}

fn setup64(s: &Scene) -> MpmSetup64 {
    MpmSetup64 {
        config: s.config.clone(),
        particle_volume: s.volume,
        anchored: s.anchored.clone(),
    }
}

fn forward_matches(with_rules: bool) {
    let ctx = common::gpu();
    let s = scene(with_rules);
    let sim = simulator(&ctx, &s);
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
        "rules {with_rules}: max |x_gpu − x_twin| after {substeps} substeps = {:.2e}·dx (max travel {:.2}·dx)",
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
    forward_matches(false);
}

#[test]
fn forward_with_gravity_damping_anchors_and_slip_walls_matches_the_twin() {
    forward_matches(true);
}

fn relative(a: &[f64], b: &[f64]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
    let n: f64 = b.iter().map(|y| y * y).sum::<f64>();
    (d / n).sqrt()
}

fn adjoint_matches(with_rules: bool) {
    let ctx = common::gpu();
    let s = scene(with_rules);
    let sim = simulator(&ctx, &s);
    let frames = 2;
    let n = s.start.len();
    let weights = pseudo_random(n * STATE_STRIDE, 21);
    let rollout_gpu = sim.rollout(&ctx, &s.start, frames).unwrap();
    let seed = ctx.storage_from_slice("dL/dstate", &weights).unwrap();
    let g = sim
        .backward(
            &ctx,
            &rollout_gpu,
            &[FrameGradient {
                frame: frames as usize,
                grad: &seed,
            }],
            &BackwardOptions::default(),
        )
        .unwrap();
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
        "rules {with_rules}: relative GPU vs twin: dL/dE {de:.2e}, dL/dv0 {dv:.2e}, dL/d(state 0) {ds:.2e}"
    );
    assert!(de <= 1e-3 && dv <= 1e-3 && ds <= 1e-3, "{de}, {dv}, {ds}");
}

#[test]
fn adjoint_matches_the_twin() {
    adjoint_matches(false);
}

#[test]
fn adjoint_with_gravity_damping_anchors_and_slip_walls_matches_the_twin() {
    adjoint_matches(true);
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
    let grad = sim
        .backward(
            &ctx,
            &gpu,
            &[FrameGradient {
                frame: 1,
                grad: &seed,
            }],
            &BackwardOptions::default(),
        )
        .unwrap();
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
