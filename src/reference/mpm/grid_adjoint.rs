//! Grid* — reverse mode of [`super::grid::grid_update`].
//!
//! Forward per node with `m_i > 0`: `u = mv/m`, `g = (u + dt·gravity)·γ`
//! (`γ = exp(−damping·dt)`), `c = C(g)` through the colliders (the
//! identity at anchored nodes), `v = mask ⊙ c`. Reverse: `c̄ = mask ⊙ v̄`
//! (zeroed components pass zero gradient), `ḡ = C*(c̄)`
//! ([`super::collider::after_colliders_adjoint`], which adds each friction
//! collider's `∂L/∂μ`), `ū = γ ḡ`, `m̄v = ū/m`, and the
//! grid-mass path `m̄ = −ū·u/m` (dropped by PhysDreamer's shipped adjoint;
//! docs/design.md § Adjoint). Gravity is a constant and contributes nothing.
//! FLIP's carried velocity `v̂ = mv̂/m̂` gives `m̄v̂ = v̂̄/m̂` and
//! `m̄̂ = −v̂̄·v̂/m̂` (the carried mass's own path, with the grid mass's).

use super::collider::after_colliders_adjoint;
use super::grid::{Grid64, GridVelocity64};
use super::mat3::Vec3;
use super::MpmSetup64;

/// Which optional paths the adjoint carries; [`AdjointPaths::ALL`] is the
/// correct gradient, the others exist to prove tests can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdjointPaths {
    /// The grid-mass path through `v_i = mv_i/m_i`.
    pub grid_mass: bool,
}

impl AdjointPaths {
    /// Every path (the correct gradient).
    pub const ALL: AdjointPaths = AdjointPaths { grid_mass: true };
}

/// `∂L/∂m_i`, `∂L/∂mv_i` and `∂L/∂mv̂_i`, and `∂L/∂μ` per collider (0
/// without friction).
#[derive(Clone, Debug)]
pub struct AdjointGrid64 {
    pub mass: Vec<f64>,
    pub momentum: Vec<Vec3>,
    /// `∂L/∂m̂_i` (zero under APIC).
    pub carried_mass: Vec<f64>,
    /// `∂L/∂mv̂_i` (zero under APIC).
    pub carried: Vec<Vec3>,
    pub friction: Vec<f64>,
}

/// Reverse of the grid update given `∂L/∂v_i` (after boundary conditions)
/// and `∂L/∂v̂_i` (FLIP's carried velocities).
pub fn grid_adjoint(
    setup: &MpmSetup64,
    grid: &Grid64,
    gv: &GridVelocity64,
    adj_velocity: &[Vec3],
    adj_carried: &[Vec3],
    paths: AdjointPaths,
) -> AdjointGrid64 {
    let decay = (-setup.config.damping * setup.config.dt()).exp();
    let n = grid.mass.len();
    let mut mass = vec![0.0; n];
    let mut momentum = vec![[0.0; 3]; n];
    let mut carried = vec![[0.0; 3]; n];
    let mut carried_mass = vec![0.0; n];
    let colliders = &setup.config.colliders;
    let mut friction = vec![0.0; colliders.len()];
    for i in 0..n {
        let m_hat = grid.carried_mass[i];
        if m_hat > 0.0 {
            let mut m_hat_bar = 0.0;
            for a in 0..3 {
                carried[i][a] = adj_carried[i][a] / m_hat;
                m_hat_bar -= adj_carried[i][a] * gv.carried[i][a] / m_hat;
            }
            if paths.grid_mass {
                carried_mass[i] = m_hat_bar;
            }
        }
        let m = grid.mass[i];
        if m <= 0.0 {
            continue;
        }
        let mut c_bar = [0.0; 3];
        for a in 0..3 {
            if gv.pass[i][a] {
                c_bar[a] = adj_velocity[i][a];
            }
        }
        if !grid.anchored[i] && !colliders.is_empty() {
            let x = grid.position(i, setup.config.dx());
            let g = &gv.before_colliders[i];
            c_bar = after_colliders_adjoint(colliders, &x, g, &c_bar, &mut friction);
        }
        let u_bar = c_bar.map(|c| decay * c);
        let mut m_bar = 0.0;
        for a in 0..3 {
            momentum[i][a] = u_bar[a] / m;
            let u = grid.momentum[i][a] / m;
            m_bar -= u_bar[a] * u / m;
        }
        if paths.grid_mass {
            mass[i] = m_bar;
        }
    }
    AdjointGrid64 {
        mass,
        momentum,
        carried_mass,
        carried,
        friction,
    }
}
