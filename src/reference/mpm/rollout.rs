//! Rollouts over substeps and frames and their gradients: a reverse pass
//! over stored states (the twin keeps every state, it only runs small
//! scenes; docs/design.md § Verification 1–2). The GPU keeps frame states and
//! in-frame checkpoints instead (§ Adjoint, Memory; src/mpm/backward.rs);
//! both compute the same gradient, and this one is the oracle.
//!
//! Frames (docs/design.md § Units and frames): frame k is the state after k·S
//! substeps, `S = config.substeps_per_frame`; frame 0 is the initial state.
//! [`frames_gradient`] takes seeds `∂L/∂(state at frame k)` for any set of
//! frames and follows one of the fit's two gradient flows (§ Loss,
//! parameters, fit), with the semantics of the GPU's
//! `MpmSimulator::backward` (src/mpm/backward.rs, `backward_on`):
//! - [`GradientFlow::Full`] (stage 1): back through the whole rollout to
//!   frame 0; a seed at frame k reaches E through every substep before it.
//! - [`GradientFlow::Truncated`] (stage 2): the state at frame k − 1 is a
//!   constant (the forward run's), so frame k's seed flows back through
//!   frame k's S substeps only; the per-frame `∂L/∂E` are summed, and
//!   `∂L/∂(state at frame 0)` gets only frame 1's seed (back through frame
//!   1's substeps) and frame 0's.
//!
//! In both flows a frame-0 seed is added to `∂L/∂(state at frame 0)` as it
//! is (frame 0 is the initial state itself).

use super::grid_adjoint::AdjointPaths;
use super::{substep, substep_adjoint_with, MpmSetup64, MpmState64};

/// The GPU's flow selector, reused so that the twin and the GPU name the
/// same two flows (a plain `Copy` enum, no GPU code behind it).
pub use crate::mpm::GradientFlow;

/// States `0..=n_substeps` of a rollout from `initial`.
pub fn rollout(
    setup: &MpmSetup64,
    initial: &MpmState64,
    youngs: &[f64],
    n_substeps: usize,
) -> Vec<MpmState64> {
    let mut states = Vec::with_capacity(n_substeps + 1);
    states.push(initial.clone());
    for s in 0..n_substeps {
        let next = substep(setup, &states[s], youngs);
        states.push(next);
    }
    states
}

/// S, the substeps per frame (at least 1).
fn substeps_per_frame(setup: &MpmSetup64) -> usize {
    let s = setup.config.substeps_per_frame as usize;
    assert!(s >= 1, "substeps_per_frame is 0");
    s
}

/// States at frames `0..=frames` (frame k after k·S substeps, docs/design.md
/// § Units and frames) of a rollout from `initial`.
pub fn frame_states(
    setup: &MpmSetup64,
    initial: &MpmState64,
    youngs: &[f64],
    frames: usize,
) -> Vec<MpmState64> {
    let s = substeps_per_frame(setup);
    rollout(setup, initial, youngs, frames * s)
        .into_iter()
        .step_by(s)
        .collect()
}

/// Gradient of a loss of a rollout: with respect to E, to the initial
/// state (frame 0) and to the colliders' friction coefficients.
#[derive(Clone, Debug)]
pub struct RolloutGradient {
    /// `∂L/∂E_p`.
    pub d_youngs: Vec<f64>,
    /// `∂L/∂ν_p`.
    pub d_poisson: Vec<f64>,
    /// `∂L/∂μ` per collider of the configuration (0 for colliders without
    /// friction).
    pub d_friction: Vec<f64>,
    /// `∂L/∂(initial state)`, i.e. `∂L/∂(state at frame 0)`; `.v` is the
    /// initial-velocity gradient. From [`frames_gradient`] with
    /// [`GradientFlow::Truncated`], only frames 0 and 1 contribute.
    pub d_initial: MpmState64,
}

/// `∂L/∂E`, `∂L/∂ν` and `∂L/∂μ` summed over the substeps of a reverse pass.
struct ParameterGradients {
    d_youngs: Vec<f64>,
    d_poisson: Vec<f64>,
    d_friction: Vec<f64>,
}

impl ParameterGradients {
    fn zeros(setup: &MpmSetup64, particles: usize) -> Self {
        Self {
            d_youngs: vec![0.0; particles],
            d_poisson: vec![0.0; particles],
            d_friction: vec![0.0; setup.config.colliders.len()],
        }
    }

    fn into_gradient(self, d_initial: MpmState64) -> RolloutGradient {
        RolloutGradient {
            d_youngs: self.d_youngs,
            d_poisson: self.d_poisson,
            d_friction: self.d_friction,
            d_initial,
        }
    }
}

/// Reverse pass over the substeps `states[0] → … → states[n]`: given
/// `adj_end = ∂L/∂(states[n])`, returns `∂L/∂(states[0])` and adds the
/// substeps' `∂L/∂E`, `∂L/∂ν` and `∂L/∂μ` into `totals`.
fn backpropagate(
    setup: &MpmSetup64,
    states: &[MpmState64],
    youngs: &[f64],
    adj_end: MpmState64,
    totals: &mut ParameterGradients,
    paths: AdjointPaths,
) -> MpmState64 {
    let mut adj = adj_end;
    for s in (0..states.len() - 1).rev() {
        let step = substep_adjoint_with(setup, &states[s], youngs, &adj, paths);
        for (total, d) in totals.d_youngs.iter_mut().zip(step.d_youngs) {
            *total += d;
        }
        for (total, d) in totals.d_poisson.iter_mut().zip(step.d_poisson) {
            *total += d;
        }
        for (total, d) in totals.d_friction.iter_mut().zip(step.d_friction) {
            *total += d;
        }
        adj = step.before;
    }
    adj
}

/// Gradient through `n_substeps` substeps of a loss whose gradient with
/// respect to the final state is `loss_grad_of_final_state` (any substep
/// count, not only whole frames; [`frames_gradient`] for losses on frames).
pub fn rollout_gradient(
    setup: &MpmSetup64,
    initial: &MpmState64,
    youngs: &[f64],
    n_substeps: usize,
    loss_grad_of_final_state: &MpmState64,
) -> RolloutGradient {
    rollout_gradient_with(
        setup,
        initial,
        youngs,
        n_substeps,
        loss_grad_of_final_state,
        AdjointPaths::ALL,
    )
}

/// [`rollout_gradient`] with switchable adjoint paths (tests only).
pub fn rollout_gradient_with(
    setup: &MpmSetup64,
    initial: &MpmState64,
    youngs: &[f64],
    n_substeps: usize,
    loss_grad_of_final_state: &MpmState64,
    paths: AdjointPaths,
) -> RolloutGradient {
    let states = rollout(setup, initial, youngs, n_substeps);
    let mut totals = ParameterGradients::zeros(setup, youngs.len());
    let d_initial = backpropagate(
        setup,
        &states,
        youngs,
        loss_grad_of_final_state.clone(),
        &mut totals,
        paths,
    );
    totals.into_gradient(d_initial)
}

/// Gradient of a loss on the frames `0..=frames` of a rollout from
/// `initial`, given `seeds`: pairs `(k, ∂L/∂(state at frame k))`, at most
/// one per frame, in any order (frames without a seed contribute nothing).
/// `flow` is the fit stage's gradient flow (module doc; docs/design.md § Loss,
/// parameters, fit): [`GradientFlow::Full`] for stage 1,
/// [`GradientFlow::Truncated`] for stage 2, whose frame-k − 1 states are
/// those of this forward run, held constant.
///
/// Panics (the twin is a test oracle) on a seed for a frame past `frames`,
/// two seeds for one frame, or a seed with another particle count.
pub fn frames_gradient(
    setup: &MpmSetup64,
    initial: &MpmState64,
    youngs: &[f64],
    frames: usize,
    seeds: &[(usize, MpmState64)],
    flow: GradientFlow,
) -> RolloutGradient {
    setup.check(initial, youngs);
    let n = initial.len();
    let mut by_frame: Vec<Option<&MpmState64>> = vec![None; frames + 1];
    for (k, seed) in seeds {
        let k = *k;
        assert!(
            k <= frames,
            "seed for frame {k} but the rollout has frames 0..={frames}"
        );
        assert_eq!(
            seed.len(),
            n,
            "seed for frame {k} has {} particles, the state {n}",
            seed.len()
        );
        assert!(
            by_frame[k].replace(seed).is_none(),
            "two seeds for frame {k}"
        );
    }
    // Nothing after the last seeded frame matters: simulate up to it.
    let last = by_frame.iter().rposition(Option::is_some).unwrap_or(0);
    let s = substeps_per_frame(setup);
    let states = rollout(setup, initial, youngs, last * s);
    // Frame k's substeps run from states[(k − 1)·S] to states[k·S].
    let frame = |k: usize| &states[(k - 1) * s..=k * s];
    let paths = AdjointPaths::ALL;
    let mut totals = ParameterGradients::zeros(setup, n);
    let mut d_initial = MpmState64::zeros(n);
    match flow {
        GradientFlow::Full => {
            // ∂L/∂(state at frame k), every later frame's seed included.
            let mut adj = MpmState64::zeros(n);
            for k in (1..=last).rev() {
                if let Some(seed) = by_frame[k] {
                    adj.add_scaled(seed, 1.0);
                }
                adj = backpropagate(setup, frame(k), youngs, adj, &mut totals, paths);
            }
            d_initial = adj;
        }
        GradientFlow::Truncated => {
            for k in (1..=last).rev() {
                let Some(seed) = by_frame[k] else { continue };
                let start =
                    backpropagate(setup, frame(k), youngs, seed.clone(), &mut totals, paths);
                // The state at frame k − 1 is a constant for k ≥ 2: its
                // gradient is dropped; frame 0's is the initial state's.
                if k == 1 {
                    d_initial = start;
                }
            }
        }
    }
    if let Some(seed) = by_frame[0] {
        d_initial.add_scaled(seed, 1.0);
    }
    totals.into_gradient(d_initial)
}
