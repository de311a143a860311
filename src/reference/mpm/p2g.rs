//! P2G (docs/design.md § MPM step 1): `m_i += w m_p`,
//! `mv_i += w (m_p v_p + (−dt·4/dx²·V_p·P(F_p)F_pᵀ + m_p C_p)(x_i − x_p))`,
//! and, from the free particles only, the carried mass and momentum
//! without the stress impulse, `m̂_i += w m_p`,
//! `mv̂_i += w m_p (v_p + C_p (x_i − x_p))` (read by FLIP's G2P only).

use super::grid::Grid64;
use super::mat3::{self, Mat3};
use super::polar::polar_decomposition;
use super::stencil::{offsets, Stencil};
use super::stress::fixed_corotated_stress;
use super::{MpmSetup64, MpmState64};
use crate::mpm_rules::held_nodes::floor_nodes;
use crate::mpm_rules::AnchorRule;

/// Stencils of all particles.
pub fn stencils(state: &MpmState64, dx: f64) -> Vec<Stencil> {
    state.x.iter().map(|x| Stencil::new(x, dx)).collect()
}

/// The APIC affine momentum matrix of particle p,
/// `A_p = −dt·4/dx²·V_p·P(F_p)F_pᵀ + m_p C_p`.
pub fn affine_momentum(setup: &MpmSetup64, state: &MpmState64, youngs: f64, p: usize) -> Mat3 {
    let config = &setup.config;
    let (dt, dx) = (config.dt(), config.dx());
    let (mu, lambda) = setup.lame(p, youngs);
    let f = &state.f[p];
    let stress = fixed_corotated_stress(f, &polar_decomposition(f), mu, lambda);
    let kirchhoff = mat3::mul(&stress, &mat3::transpose(f));
    let mut a = mat3::scale(&kirchhoff, -dt * 4.0 / (dx * dx) * setup.particle_volume);
    mat3::add_scaled(&mut a, &state.c[p], setup.particle_mass());
    a
}

/// Scatters all particles to a fresh grid. Anchored particles scatter like
/// the others (mass, momentum and the stress of their frozen F) and mark
/// the nodes they hold as anchored: every node they reach with `w > 0`, or
/// only the nearest, their stencil's centre, by `config.anchoring`
/// ([`AnchorRule`], src/mpm_rules/config.rs); under `splats` no particle
/// marks a node and the nodes at floor(x/dx) of `setup.held_points` are
/// held instead.
pub fn p2g(setup: &MpmSetup64, state: &MpmState64, youngs: &[f64]) -> Grid64 {
    setup.check(state, youngs);
    let config = &setup.config;
    let stencils = stencils(state, config.dx());
    let mut grid = Grid64::covering(&stencils, config.grid_res);
    let mp = setup.particle_mass();
    for (p, s) in stencils.iter().enumerate() {
        let a = affine_momentum(setup, state, youngs[p], p);
        let idx = grid.stencil_indices(s);
        for (n, o) in offsets().enumerate() {
            let w = s.weight(o);
            let d = s.node_offset(o);
            let ad = mat3::mul_vec(&a, &d);
            let cd = mat3::mul_vec(&state.c[p], &d);
            let i = idx[n];
            grid.mass[i] += w * mp;
            for k in 0..3 {
                grid.momentum[i][k] += w * (mp * state.v[p][k] + ad[k]);
            }
            if !setup.frozen(p) {
                grid.carried_mass[i] += w * mp;
                for k in 0..3 {
                    grid.carried[i][k] += w * mp * (state.v[p][k] + cd[k]);
                }
            }
            let held = match config.anchoring {
                AnchorRule::Stencil => w > 0.0,
                AnchorRule::Nearest => o == [1, 1, 1],
                AnchorRule::Splats => false,
            };
            if setup.anchored[p] && held {
                grid.anchored[i] = true;
            }
        }
    }
    if config.anchoring == AnchorRule::Splats {
        for node in floor_nodes(setup.held_points.iter().copied(), config.grid_res) {
            let node = node.map(i64::from);
            if grid.contains(node) {
                let i = grid.index(node);
                grid.anchored[i] = true;
            }
        }
    }
    grid
}
