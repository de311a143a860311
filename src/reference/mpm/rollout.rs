//! Rollouts of several substeps and their gradient (reverse pass over
//! stored states: the twin keeps every state, it only runs small scenes).

use super::grid_adjoint::AdjointPaths;
use super::{substep, substep_adjoint_with, MpmSetup64, MpmState64};

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

/// Gradient of a loss of the final state of a rollout.
#[derive(Clone, Debug)]
pub struct RolloutGradient {
    /// `∂L/∂E_p`.
    pub d_youngs: Vec<f64>,
    /// `∂L/∂(initial state)`; `.v` is the initial-velocity gradient.
    pub d_initial: MpmState64,
}

/// Gradient through `n_substeps` substeps of a loss whose gradient with
/// respect to the final state is `loss_grad_of_final_state`.
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
    let mut adj = loss_grad_of_final_state.clone();
    let mut d_youngs = vec![0.0; youngs.len()];
    for s in (0..n_substeps).rev() {
        let (before, d_e) = substep_adjoint_with(setup, &states[s], youngs, &adj, paths);
        for (total, d) in d_youngs.iter_mut().zip(d_e) {
            *total += d;
        }
        adj = before;
    }
    RolloutGradient {
        d_youngs,
        d_initial: adj,
    }
}
