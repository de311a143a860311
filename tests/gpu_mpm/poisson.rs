//! Poisson's ratio per particle on the GPU (src/mpm/lame.rs; docs/design.md
//! § MPM, § Adjoint): a simulator whose particles are all set to the
//! configuration's ν runs as one that never had per-particle ν (to the
//! run-to-run noise of float atomics; tests/cpu checks that the records
//! hold the uniform's bits);
//! a drop onto a friction plane with ν varied per particle matches the f64
//! twin forward and in ∂L/∂ν; and at a fit's scale (3 frames × 100
//! substeps onto a sticky ground, whose rule has no kinks) ∂L/∂ν matches
//! finite differences of the GPU loss. `set_poisson` is checked and makes
//! earlier rollouts stale.

use crate::colliders::{
    fit_scale_drop, gpu_gradients, gpu_loss, loss_weights, small_drop, Drop, Ground,
};
use crate::common;
use crate::common::slopes::fitted_slope;
use crate::support::*;
use crate::twin::{relative, to64};
use physfit::mpm::{
    BackwardOptions, BackwardWork, ContactRule, FrameGradient, MpmError, ParticleState,
};
use physfit::reference::mpm::{frames_gradient, rollout, GradientFlow, MpmSetup64, MpmState64};

/// ν = `centre` · (1 + 0.3·r) per particle, r pseudo-random in [−1, 1).
fn varied_poisson(n: usize, centre: f64) -> Vec<f64> {
    pseudo_random(n, 41)
        .iter()
        .map(|&r| centre * (1.0 + 0.3 * r as f64))
        .collect()
}

fn twin_setup(d: &Drop, poisson: &[f64]) -> MpmSetup64 {
    MpmSetup64 {
        poisson: Some(poisson.to_vec()),
        ..d.setup64()
    }
}

#[test]
fn poisson_set_to_the_configurations_runs_as_before() {
    let ctx = common::gpu();
    let d = small_drop(Ground::Plane, ContactRule::Friction(0.3));
    let plain = d.simulator(&ctx);
    let set = d.simulator(&ctx);
    set.set_poisson(&ctx, &vec![d.config.poisson; d.start.len()])
        .unwrap();
    let a = plain.rollout(&ctx, &d.start, 3).unwrap();
    let b = set.rollout(&ctx, &d.start, 3).unwrap();
    let a = plain.read_state(&ctx, a.frames.last().unwrap()).unwrap();
    let b = set.read_state(&ctx, b.frames.last().unwrap()).unwrap();
    let worst = (0..a.len())
        .flat_map(|p| (0..3).map(move |k| (p, k)))
        .map(|(p, k)| (a.x[p][k] - b.x[p][k]).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-5 * d.config.dx() as f32, "{worst}");
}

#[test]
fn poisson_per_particle_matches_the_twin_forward_and_adjoint() {
    let ctx = common::gpu();
    let d = small_drop(Ground::Plane, ContactRule::Friction(0.3));
    let n = d.start.len();
    let nu = varied_poisson(n, 0.25);
    let sim = d.simulator(&ctx);
    sim.set_poisson(&ctx, &nu).unwrap();
    let setup = twin_setup(&d, &nu);
    // Forward: 100 substeps.
    let frames = 10;
    let gpu = sim.rollout(&ctx, &d.start, frames).unwrap();
    let gpu_end = sim.read_state(&ctx, gpu.frames.last().unwrap()).unwrap();
    let substeps = (frames * d.config.substeps_per_frame) as usize;
    let twin = rollout(&setup, &to64(&d.start), &d.youngs64(), substeps);
    let twin_end = twin.last().unwrap();
    let dx = d.config.dx();
    let worst = (0..n)
        .flat_map(|p| (0..3).map(move |a| (p, a)))
        .map(|(p, a)| (gpu_end.x[p][a] as f64 - twin_end.x[p][a]).abs())
        .fold(0.0f64, f64::max);
    eprintln!(
        "max |x_gpu − x_twin| after {substeps} substeps = {:.2e}·dx",
        worst / dx
    );
    assert!(worst <= 1e-3 * dx, "{} dx", worst / dx);
    // Varying ν moves the block: the twin at uniform ν ends elsewhere.
    let uniform = rollout(&d.setup64(), &to64(&d.start), &d.youngs64(), substeps);
    let moved = (0..n)
        .map(|p| (uniform.last().unwrap().x[p][1] - twin_end.x[p][1]).abs())
        .fold(0.0f64, f64::max);
    assert!(
        moved > 1e-2 * dx,
        "ν per particle changed nothing ({moved})"
    );

    // Adjoint over 3 frames.
    let frames = 3;
    let w = loss_weights(n, frames);
    let g = gpu_gradients(&ctx, &sim, &d.start, &w);
    let seeds: Vec<(usize, MpmState64)> = w
        .iter()
        .enumerate()
        .map(|(i, w)| (i + 1, to64(&ParticleState::from_packed(w))))
        .collect();
    let twin = frames_gradient(
        &setup,
        &to64(&d.start),
        &d.youngs64(),
        frames,
        &seeds,
        GradientFlow::Full,
    );
    let gpu_nu: Vec<f64> = g.poisson.iter().map(|&v| v as f64).collect();
    let gpu_e: Vec<f64> = g.youngs.iter().map(|&v| v as f64).collect();
    let dnu = relative(&gpu_nu, &twin.d_poisson);
    let de = relative(&gpu_e, &twin.d_youngs);
    eprintln!("relative GPU vs twin: dL/dν {dnu:.2e}, dL/dE {de:.2e}");
    assert!(twin.d_poisson.iter().any(|&g| g != 0.0));
    assert!(dnu <= 1e-3 && de <= 1e-3, "dL/dν {dnu}, dL/dE {de}");
}

/// Half-width and points of the finite-difference fit of ∂L/∂ν along a
/// per-particle direction of amplitude 1 (ν moves by at most ±0.02).
const POISSON_STEP: (f64, usize) = (0.02, 4);

#[test]
fn fit_scale_drop_poisson_gradient_matches_finite_differences() {
    let ctx = common::gpu();
    let d = fit_scale_drop(Ground::Plane, ContactRule::Sticky);
    let n = d.start.len();
    let nu = varied_poisson(n, 0.25);
    let sim = d.simulator(&ctx);
    sim.set_poisson(&ctx, &nu).unwrap();
    let w = loss_weights(n, 3);
    let g = gpu_gradients(&ctx, &sim, &d.start, &w);
    let dir: Vec<f64> = pseudo_random(n, 5).iter().map(|&r| r as f64).collect();
    let analytic: f64 = g.poisson.iter().zip(&dir).map(|(a, b)| *a as f64 * b).sum();
    let fd = fitted_slope(
        |h| {
            let moved: Vec<f64> = nu.iter().zip(&dir).map(|(v, x)| v + h * x).collect();
            sim.set_poisson(&ctx, &moved).unwrap();
            gpu_loss(&ctx, &sim, &d.start, &w)
        },
        POISSON_STEP.0,
        POISSON_STEP.1,
    );
    let rel = (fd - analytic).abs() / analytic.abs();
    eprintln!("dL/dν: adjoint {analytic:.6e}, FD {fd:.6e}, relative {rel:.2e}");
    assert!(rel <= 1e-2, "dL/dν {rel}");
}

#[test]
fn set_poisson_is_checked_and_makes_earlier_rollouts_stale() {
    let ctx = common::gpu();
    let d = small_drop(Ground::Plane, ContactRule::Sticky);
    let n = d.start.len();
    let sim = d.simulator(&ctx);
    for bad in [
        vec![0.3; n - 1],
        vec![0.5; n],
        vec![-0.1; n],
        vec![f64::NAN; n],
    ] {
        assert!(matches!(
            sim.set_poisson(&ctx, &bad),
            Err(MpmError::InvalidInput(_))
        ));
    }
    let r = sim.rollout(&ctx, &d.start, 1).unwrap();
    sim.set_poisson(&ctx, &vec![0.25; n]).unwrap();
    let seed = ctx
        .storage_from_slice("dL/dstate", &pseudo_random(n * 24, 3))
        .unwrap();
    let stale = sim.backward(
        &ctx,
        &r,
        &[FrameGradient {
            frame: 1,
            grad: &seed,
        }],
        &BackwardOptions::default(),
        &mut BackwardWork::new(),
    );
    assert!(matches!(stale, Err(MpmError::StaleRollout { .. })));
}
