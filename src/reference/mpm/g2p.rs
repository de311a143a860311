//! G2P (docs/design.md § MPM step 3): `v_p = Σ w v_i`,
//! `C_p = 4/dx² Σ w v_i (x_i − x_p)ᵀ`, `F_p ← (I + dt C_p) F_p`,
//! `x_p += dt v_p`; anchored particles keep x and F, with v = 0, C = 0.
//! With FLIP (src/mpm_rules/config.rs `Transfer`) the new velocity is
//! `Σ w v_i + α (v_p − Σ w v̂_i)`, while C, F and x use `Σ w v_i` as in
//! APIC.

use super::grid::{Grid64, GridVelocity64};
use super::mat3::{self, Mat3, Vec3};
use super::p2g::stencils;
use super::stencil::{offsets, Stencil};
use super::{MpmSetup64, MpmState64};

/// Gathers `(v_p, C_p)` of one particle from the grid velocities.
pub fn gather(grid: &Grid64, gv: &GridVelocity64, s: &Stencil) -> (Vec3, Mat3) {
    let idx = grid.stencil_indices(s);
    let mut v = [0.0; 3];
    let mut c = mat3::ZERO;
    let k = 4.0 / (s.dx * s.dx);
    for (n, o) in offsets().enumerate() {
        let w = s.weight(o);
        let vi = &gv.velocity[idx[n]];
        mat3::vadd_scaled(&mut v, vi, w);
        mat3::add_scaled(&mut c, &mat3::outer(vi, &s.node_offset(o)), w * k);
    }
    (v, c)
}

/// `Σ w v̂_i` of one particle: the velocity the grid got from the
/// particles, gathered back (FLIP's G2P subtracts it).
pub fn gather_carried(grid: &Grid64, gv: &GridVelocity64, s: &Stencil) -> Vec3 {
    let idx = grid.stencil_indices(s);
    let mut v = [0.0; 3];
    for (n, o) in offsets().enumerate() {
        mat3::vadd_scaled(&mut v, &gv.carried[idx[n]], s.weight(o));
    }
    v
}

/// The particle state after the substep.
pub fn g2p(
    setup: &MpmSetup64,
    state: &MpmState64,
    grid: &Grid64,
    gv: &GridVelocity64,
) -> MpmState64 {
    let dt = setup.config.dt();
    let alpha = setup.config.transfer.flip_share(dt);
    let mut out = state.clone();
    for (p, s) in stencils(state, setup.config.dx()).iter().enumerate() {
        if setup.frozen(p) {
            out.v[p] = [0.0; 3];
            out.c[p] = mat3::ZERO;
            continue;
        }
        let (v, c) = gather(grid, gv, s);
        let step = mat3::add(&mat3::IDENTITY, &mat3::scale(&c, dt));
        out.f[p] = mat3::mul(&step, &state.f[p]);
        for k in 0..3 {
            out.x[p][k] = state.x[p][k] + dt * v[k];
        }
        out.v[p] = v;
        if alpha != 0.0 {
            let carried = gather_carried(grid, gv, s);
            for k in 0..3 {
                out.v[p][k] += alpha * (state.v[p][k] - carried[k]);
            }
        }
        out.c[p] = c;
    }
    out
}
