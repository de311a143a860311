//! G2P* — reverse mode of [`super::g2p::g2p`].
//!
//! Forward per free particle: `v' = Σ w v_i`, `C' = k Σ w v_i dᵢᵀ`
//! (`k = 4/dx²`, `dᵢ = x_i − x_p`), `F' = (I + dt C')F`, `x' = x + dt v'`.
//! Reverse: `C̄ = C̄' + dt F̄'Fᵀ`, `F̄ = (I + dt C')ᵀF̄'`, `v̄ = v̄' + dt x̄'`,
//! then per node `v̄_i += w (v̄ + k C̄ dᵢ)`, and the position gets the
//! weights' path `Σ (v̄·v_i + k v_iᵀC̄dᵢ) ∂w/∂x_p` and the offsets' path
//! `−Σ w k C̄ᵀv_i` (`∂dᵢ/∂x_p = −I`). Anchored particles pass x̄' and F̄'
//! straight through (x and F kept) and drop v̄', C̄' (v, C set to 0).
//!
//! With FLIP (`v' = Σ w v_i + α (v_p − Σ w v̂_i)`, src/mpm_rules/config.rs
//! `Transfer`) the particle's own velocity gets `v̄_p = α v̄'`, each node's
//! carried velocity `v̂̄_i −= α w v̄'`, and the weights' path
//! `−α v̄'·v̂_i ∂w/∂x_p`.

use super::g2p::gather;
use super::grid::{Grid64, GridVelocity64};
use super::mat3::{self, Vec3};
use super::p2g::stencils;
use super::stencil::offsets;
use super::{MpmSetup64, MpmState64};

/// What G2P* returns (module doc).
pub struct G2pAdjoint {
    /// The G2P part of `∂L/∂(state before)`: x̄ and F̄, and FLIP's direct
    /// `v̄_p = α v̄'` (the rest of v̄ and C̄ come from P2G*).
    pub partial: MpmState64,
    /// `∂L/∂v_i` for the grid velocities.
    pub velocity: Vec<Vec3>,
    /// `∂L/∂v̂_i` for the carried velocities (zero under APIC).
    pub carried: Vec<Vec3>,
}

/// G2P* (module doc) given `adj_after = ∂L/∂(state after)`.
pub fn g2p_adjoint(
    setup: &MpmSetup64,
    state: &MpmState64,
    grid: &Grid64,
    gv: &GridVelocity64,
    adj_after: &MpmState64,
) -> G2pAdjoint {
    let dt = setup.config.dt();
    let alpha = setup.config.transfer.flip_share(dt);
    let n = state.len();
    let mut adj = MpmState64::zeros(n);
    let mut adj_velocity = vec![[0.0; 3]; gv.velocity.len()];
    let mut adj_carried = vec![[0.0; 3]; gv.velocity.len()];
    for (p, s) in stencils(state, setup.config.dx()).iter().enumerate() {
        if setup.frozen(p) {
            adj.x[p] = adj_after.x[p];
            adj.f[p] = adj_after.f[p];
            continue;
        }
        let (_, c_new) = gather(grid, gv, s);
        let k = 4.0 / (s.dx * s.dx);
        // F' = (I + dt C')F.
        let step = mat3::add(&mat3::IDENTITY, &mat3::scale(&c_new, dt));
        adj.f[p] = mat3::mul(&mat3::transpose(&step), &adj_after.f[p]);
        let mut c_bar = adj_after.c[p];
        mat3::add_scaled(
            &mut c_bar,
            &mat3::mul(&adj_after.f[p], &mat3::transpose(&state.f[p])),
            dt,
        );
        // x' = x + dt v'.
        let mut x_bar = adj_after.x[p];
        let mut v_bar = adj_after.v[p];
        mat3::vadd_scaled(&mut v_bar, &adj_after.x[p], dt);
        // FLIP's α (v_p − Σ w v̂_i).
        let flip_bar = adj_after.v[p].map(|v| alpha * v);
        adj.v[p] = flip_bar;

        let idx = grid.stencil_indices(s);
        for (m, o) in offsets().enumerate() {
            let i = idx[m];
            let w = s.weight(o);
            let d = s.node_offset(o);
            let vi = &gv.velocity[i];
            let c_bar_d = mat3::mul_vec(&c_bar, &d);
            for a in 0..3 {
                adj_velocity[i][a] += w * (v_bar[a] + k * c_bar_d[a]);
            }
            let carried = &gv.carried[i];
            mat3::vadd_scaled(&mut adj_carried[i], &flip_bar, -w);
            let w_bar =
                mat3::dot(&v_bar, vi) + k * mat3::dot(vi, &c_bar_d) - mat3::dot(&flip_bar, carried);
            mat3::vadd_scaled(&mut x_bar, &s.weight_gradient(o), w_bar);
            let d_bar = mat3::mul_transpose_vec(&c_bar, vi);
            mat3::vadd_scaled(&mut x_bar, &d_bar, -w * k);
        }
        adj.x[p] = x_bar;
    }
    G2pAdjoint {
        partial: adj,
        velocity: adj_velocity,
        carried: adj_carried,
    }
}
