//! P2G* — reverse mode of [`super::p2g::p2g`].
//!
//! Forward per particle and node: `m_i += w m_p`,
//! `mv_i += w (m_p v_p + A_p dᵢ)`, `A_p = κ V_p P(F_p)F_pᵀ + m_p C_p`,
//! `κ = −dt·4/dx²`, `dᵢ = x_i − x_p`. Reverse: `w̄ = m̄_i m_p + m̄v_i·(m_p v_p
//! + A_p dᵢ)` (weights' path to x_p through ∂w/∂x_p, including the grid-mass
//! term), `v̄_p += w m_p m̄v_i`, `Ā_p += w m̄v_i dᵢᵀ`, `x̄_p −= w A_pᵀm̄v_i`
//! (offsets' path), then `C̄_p += m_p Ā_p`, `Q̄ = κ V_p Ā_p` for
//! `Q = P Fᵀ`: `P̄ = Q̄F`, `F̄ += Q̄ᵀP`, and the stress adjoint for P̄
//! (∂L/∂F, ∂L/∂E, and ∂L/∂ν through `μ(E, ν)`, `λ(E, ν)`). FLIP's carried
//! mass and momentum of a free particle, `m̂_i += w m_p`,
//! `mv̂_i += w m_p (v_p + C_p dᵢ)`, add, with `m̄̂_i` and `m̄v̂_i`:
//! `w̄ += m̄̂_i m_p + m̄v̂_i·m_p (v_p + C_p dᵢ)`, `v̄_p += w m_p m̄v̂_i`,
//! `C̄_p += w m_p m̄v̂_i dᵢᵀ`, `x̄_p −= w m_p C_pᵀm̄v̂_i`.

use super::grid::Grid64;
use super::grid_adjoint::AdjointGrid64;
use super::mat3::{self, Mat3};
use super::p2g::stencils;
use super::polar::polar_decomposition;
use super::stencil::offsets;
use super::stress::{
    fixed_corotated_stress, fixed_corotated_stress_adjoint, fixed_corotated_stress_poisson_adjoint,
};
use super::{MpmSetup64, MpmState64};
use crate::mpm_rules::config::{lame, lame_per_youngs_poisson_derivative};

/// Adds the P2G part to `partial` (the G2P* output) and returns
/// `(∂L/∂(state before), ∂L/∂E, ∂L/∂ν)`.
pub fn p2g_adjoint(
    setup: &MpmSetup64,
    state: &MpmState64,
    youngs: &[f64],
    grid: &Grid64,
    adj_grid: &AdjointGrid64,
    partial: MpmState64,
) -> (MpmState64, Vec<f64>, Vec<f64>) {
    let config = &setup.config;
    let (dt, dx) = (config.dt(), config.dx());
    let mp = setup.particle_mass();
    let kappa_v = -dt * 4.0 / (dx * dx) * setup.particle_volume;
    let mut adj = partial;
    let mut d_youngs = vec![0.0; state.len()];
    let mut d_poisson = vec![0.0; state.len()];
    for (p, s) in stencils(state, dx).iter().enumerate() {
        let (mu_per_e, lambda_per_e) = lame(1.0, setup.poisson(p));
        let f = &state.f[p];
        let polar = polar_decomposition(f);
        let stress =
            fixed_corotated_stress(f, &polar, youngs[p] * mu_per_e, youngs[p] * lambda_per_e);
        let mut a = mat3::scale(&mat3::mul(&stress, &mat3::transpose(f)), kappa_v);
        mat3::add_scaled(&mut a, &state.c[p], mp);

        let idx = grid.stencil_indices(s);
        let mut a_bar = mat3::ZERO;
        let mut carried_c_bar = mat3::ZERO;
        let mut x_bar = adj.x[p];
        let mut v_bar = adj.v[p];
        for (m, o) in offsets().enumerate() {
            let i = idx[m];
            let w = s.weight(o);
            let d = s.node_offset(o);
            let mv_bar = &adj_grid.momentum[i];
            let ad = mat3::mul_vec(&a, &d);
            let contribution: [f64; 3] = std::array::from_fn(|k| mp * state.v[p][k] + ad[k]);
            let w_bar = adj_grid.mass[i] * mp + mat3::dot(mv_bar, &contribution);
            mat3::vadd_scaled(&mut x_bar, &s.weight_gradient(o), w_bar);
            mat3::vadd_scaled(&mut v_bar, mv_bar, w * mp);
            mat3::add_scaled(&mut a_bar, &mat3::outer(mv_bar, &d), w);
            mat3::vadd_scaled(&mut x_bar, &mat3::mul_transpose_vec(&a, mv_bar), -w);
            // The carried mass and momentum (FLIP, free particles; zero
            // adjoint under APIC).
            if setup.frozen(p) {
                continue;
            }
            let carried_bar = &adj_grid.carried[i];
            let cd = mat3::mul_vec(&state.c[p], &d);
            let carried: [f64; 3] = std::array::from_fn(|k| mp * (state.v[p][k] + cd[k]));
            mat3::vadd_scaled(
                &mut x_bar,
                &s.weight_gradient(o),
                adj_grid.carried_mass[i] * mp + mat3::dot(carried_bar, &carried),
            );
            mat3::vadd_scaled(&mut v_bar, carried_bar, w * mp);
            mat3::add_scaled(&mut carried_c_bar, &mat3::outer(carried_bar, &d), w * mp);
            mat3::vadd_scaled(
                &mut x_bar,
                &mat3::mul_transpose_vec(&state.c[p], carried_bar),
                -w * mp,
            );
        }
        adj.x[p] = x_bar;
        adj.v[p] = v_bar;
        mat3::add_scaled(&mut adj.c[p], &a_bar, mp);
        mat3::add_scaled(&mut adj.c[p], &carried_c_bar, 1.0);

        let q_bar: Mat3 = mat3::scale(&a_bar, kappa_v);
        let p_bar = mat3::mul(&q_bar, f);
        let mut f_bar = mat3::mul(&mat3::transpose(&q_bar), &stress);
        let (f_bar_stress, e_bar) =
            fixed_corotated_stress_adjoint(f, &polar, youngs[p], mu_per_e, lambda_per_e, &p_bar);
        f_bar = mat3::add(&f_bar, &f_bar_stress);
        adj.f[p] = mat3::add(&adj.f[p], &f_bar);
        d_youngs[p] = e_bar;
        d_poisson[p] = fixed_corotated_stress_poisson_adjoint(
            f,
            &polar,
            youngs[p],
            lame_per_youngs_poisson_derivative(setup.poisson(p)),
            &p_bar,
        );
    }
    (adj, d_youngs, d_poisson)
}
