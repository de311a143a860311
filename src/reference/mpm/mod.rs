//! f64 CPU twin of the differentiable MLS-MPM (docs/design.md § MPM, § Adjoint,
//! § Verification 1–2): forward substep, hand-written adjoint carrying every
//! path, and rollout helpers. A test oracle for the GPU kernels, one file
//! per kernel with the same stem (p2g ↔ p2g_adjoint, …).
//!
//! The per-substep rules (update order, damping, anchoring, walls) are those
//! documented in src/mpm_rules/config.rs. Matrices are row-major `[[f64; 3]; 3]`
//! (`f[p][i][j] = F_ij`). Grid nodes have global indices 0..=grid_res per
//! axis (see [`grid`]); a particle whose stencil leaves them is a bug in
//! the calling test and panics. R of the polar decomposition is the
//! sign-fixed-SVD rotation, computed here by a quaternion eigenproblem
//! ([`polar`]); the GPU may use any SVD with the same sign fix.
//!
//! Adjoint: [`substep_adjoint_with`] replays P2G and the grid update from the
//! state before the substep, then runs G2P* ([`g2p_adjoint`]), grid*
//! ([`grid_adjoint`]) and P2G* ([`p2g_adjoint`]); each file's doc gives
//! its reverse-mode equations.

// Index loops over 3 axes / 3×3 entries read like the equations they code.
#![allow(clippy::needless_range_loop)]

pub mod collider;
pub mod g2p;
pub mod g2p_adjoint;
pub mod grid;
pub mod grid_adjoint;
pub mod mat3;
pub mod p2g;
pub mod p2g_adjoint;
pub mod polar;
pub mod rollout;
pub mod stencil;
pub mod stress;

pub use grid_adjoint::AdjointPaths;
pub use polar::{polar_decomposition, polar_forward_derivative, polar_reverse, Polar};
pub use rollout::{
    frame_states, frames_gradient, rollout, rollout_gradient, GradientFlow, RolloutGradient,
};

use crate::mpm_rules::config::MpmConfig;
use mat3::{Mat3, Vec3};

/// Particle state (or, for the adjoint, its gradient): position x,
/// velocity v, APIC affine matrix C, deformation gradient F.
#[derive(Clone, Debug, PartialEq)]
pub struct MpmState64 {
    pub x: Vec<Vec3>,
    pub v: Vec<Vec3>,
    pub c: Vec<Mat3>,
    pub f: Vec<Mat3>,
}

impl MpmState64 {
    /// `n` particles at rest at `positions`: v = 0, C = 0, F = I.
    pub fn at_rest(positions: Vec<Vec3>) -> Self {
        let n = positions.len();
        MpmState64 {
            x: positions,
            v: vec![[0.0; 3]; n],
            c: vec![mat3::ZERO; n],
            f: vec![mat3::IDENTITY; n],
        }
    }

    /// All-zero state of `n` particles (the neutral adjoint).
    pub fn zeros(n: usize) -> Self {
        MpmState64 {
            x: vec![[0.0; 3]; n],
            v: vec![[0.0; 3]; n],
            c: vec![mat3::ZERO; n],
            f: vec![mat3::ZERO; n],
        }
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// True when there are no particles.
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// `self += scale·other`, component by component (seeds summed into an
    /// adjoint; a state perturbed along a direction in tests).
    pub fn add_scaled(&mut self, other: &MpmState64, scale: f64) {
        assert_eq!(self.len(), other.len(), "MpmState64 particle counts differ");
        for p in 0..self.len() {
            mat3::vadd_scaled(&mut self.x[p], &other.x[p], scale);
            mat3::vadd_scaled(&mut self.v[p], &other.v[p], scale);
            mat3::add_scaled(&mut self.c[p], &other.c[p], scale);
            mat3::add_scaled(&mut self.f[p], &other.f[p], scale);
        }
    }

    /// `Σ` over all components of `self ⊙ other` (a linear functional of a
    /// state, e.g. a loss gradient applied to a state).
    pub fn dot(&self, other: &MpmState64) -> f64 {
        let mut sum = 0.0;
        for p in 0..self.len() {
            sum += mat3::dot(&self.x[p], &other.x[p]) + mat3::dot(&self.v[p], &other.v[p]);
            sum += mat3::frobenius_dot(&self.c[p], &other.c[p]);
            sum += mat3::frobenius_dot(&self.f[p], &other.f[p]);
        }
        sum
    }
}

/// What stays fixed over a simulation: the settings, the volume of every
/// particle (`m_p = density·V_p`) and the anchored flags.
#[derive(Clone, Debug)]
pub struct MpmSetup64 {
    pub config: MpmConfig,
    /// `V_p`, the same for all particles (src/mpm_rules/config.rs `particle_volume`).
    pub particle_volume: f64,
    /// Anchored (frozen) particles.
    pub anchored: Vec<bool>,
    /// Under the `splats` anchoring rule: the points whose nodes at
    /// floor(x/dx) are held (the GPU's `MpmSetup::held_points`).
    pub held_points: Vec<[f64; 3]>,
    /// Poisson's ratio per particle; `None`: `config.poisson` for all (the
    /// GPU's `MpmSimulator::set_poisson`, src/mpm/lame.rs).
    pub poisson: Option<Vec<f64>>,
}

impl MpmSetup64 {
    /// `m_p = density·V_p`.
    pub fn particle_mass(&self) -> f64 {
        self.config.density * self.particle_volume
    }

    /// Whether particle p is frozen (keeps x and F, v = 0, C = 0, carries
    /// no momentum of its own): an anchored particle, except under the
    /// `splats` anchoring rule, where anchored particles are material like
    /// the rest and only the held nodes hold them (the GPU's
    /// `AnchorRule::freezes_anchored_particles`).
    pub fn frozen(&self, p: usize) -> bool {
        self.anchored[p] && self.config.anchoring.freezes_anchored_particles()
    }

    /// Poisson's ratio of particle p.
    pub fn poisson(&self, p: usize) -> f64 {
        self.poisson
            .as_ref()
            .map_or(self.config.poisson, |nu| nu[p])
    }

    /// Lamé parameters `(μ, λ)` of particle p for Young's modulus `youngs`.
    pub fn lame(&self, p: usize, youngs: f64) -> (f64, f64) {
        crate::mpm_rules::config::lame(youngs, self.poisson(p))
    }

    /// Panics on mismatched lengths (a bug in the calling test).
    fn check(&self, state: &MpmState64, youngs: &[f64]) {
        let n = state.len();
        assert!(
            state.v.len() == n && state.c.len() == n && state.f.len() == n,
            "MpmState64 arrays differ in length"
        );
        assert_eq!(self.anchored.len(), n, "anchored flags vs particles");
        assert_eq!(youngs.len(), n, "Young's moduli vs particles");
        if let Some(nu) = &self.poisson {
            assert_eq!(nu.len(), n, "Poisson's ratios vs particles");
        }
        assert!(
            self.config.anchoring != crate::mpm_rules::AnchorRule::Splats
                || !self.held_points.is_empty()
                || !self.anchored.contains(&true),
            "anchoring \"splats\" with anchored particles and no held points would run unanchored"
        );
    }
}

/// One substep: P2G → grid update → G2P (src/mpm_rules/config.rs).
pub fn substep(setup: &MpmSetup64, state: &MpmState64, youngs: &[f64]) -> MpmState64 {
    let grid = p2g::p2g(setup, state, youngs);
    let velocity = grid::grid_update(setup, &grid);
    g2p::g2p(setup, state, &grid, &velocity)
}

/// A substep's adjoint: `∂L/∂(state before)` and the substep's parameter
/// gradients.
pub struct SubstepAdjoint {
    /// `∂L/∂(state before)`.
    pub before: MpmState64,
    /// `∂L/∂E` per particle.
    pub d_youngs: Vec<f64>,
    /// `∂L/∂ν` per particle.
    pub d_poisson: Vec<f64>,
    /// `∂L/∂μ` per collider.
    pub d_friction: Vec<f64>,
}

/// Reverse mode of [`substep`]: given `adj_after = ∂L/∂(state after)`,
/// returns `∂L/∂(state before)`, `∂L/∂E`, `∂L/∂ν` and `∂L/∂μ` per collider, replaying the forward from
/// `state_before` and running G2P* → grid* → P2G*. `paths` switches some
/// paths off ([`AdjointPaths::ALL`] keeps every one), to show in tests that
/// dropping one (the grid-mass path) breaks the gradient.
pub fn substep_adjoint_with(
    setup: &MpmSetup64,
    state_before: &MpmState64,
    youngs: &[f64],
    adj_after: &MpmState64,
    paths: AdjointPaths,
) -> SubstepAdjoint {
    let grid = p2g::p2g(setup, state_before, youngs);
    let velocity = grid::grid_update(setup, &grid);
    let g2p = g2p_adjoint::g2p_adjoint(setup, state_before, &grid, &velocity, adj_after);
    let adj_grid =
        grid_adjoint::grid_adjoint(setup, &grid, &velocity, &g2p.velocity, &g2p.carried, paths);
    let (before, d_youngs, d_poisson) =
        p2g_adjoint::p2g_adjoint(setup, state_before, youngs, &grid, &adj_grid, g2p.partial);
    SubstepAdjoint {
        before,
        d_youngs,
        d_poisson,
        d_friction: adj_grid.friction,
    }
}
