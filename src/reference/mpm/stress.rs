//! Fixed-corotated first Piola–Kirchhoff stress (docs/design.md § MPM):
//! `P = 2μ(F − R) + λ(J − 1)·J·F⁻ᵀ`, written with the cofactor matrix
//! `J·F⁻ᵀ = cof(F)` so that neither P nor its adjoint needs an inverse.

use super::mat3::{self, Mat3};
use super::polar::{polar_reverse_with, Polar};

/// `P(F)` for Lamé parameters `(mu, lambda)`, with the polar factors of F.
pub fn fixed_corotated_stress(f: &Mat3, polar: &Polar, mu: f64, lambda: f64) -> Mat3 {
    let j = mat3::determinant(f);
    let mut p = mat3::scale(&mat3::sub(f, &polar.r), 2.0 * mu);
    mat3::add_scaled(&mut p, &mat3::cofactor(f), lambda * (j - 1.0));
    p
}

/// `∂L/∂ν` of [`fixed_corotated_stress`] with `μ = E·μ̂(ν)`, `λ = E·λ̂(ν)`
/// given `P̄ = ∂L/∂P`: `E·(μ̂'·⟨P̄, 2(F − R)⟩ + λ̂'·(J − 1)⟨P̄, cof F⟩)`,
/// `(μ̂', λ̂')` = `d_lame` (src/mpm_rules/config.rs
/// `lame_per_youngs_poisson_derivative`).
pub fn fixed_corotated_stress_poisson_adjoint(
    f: &Mat3,
    polar: &Polar,
    youngs: f64,
    d_lame: (f64, f64),
    p_bar: &Mat3,
) -> f64 {
    let j = mat3::determinant(f);
    let shear = 2.0 * mat3::frobenius_dot(p_bar, &mat3::sub(f, &polar.r));
    let volume = (j - 1.0) * mat3::frobenius_dot(p_bar, &mat3::cofactor(f));
    youngs * (d_lame.0 * shear + d_lame.1 * volume)
}

/// Reverse mode of [`fixed_corotated_stress`] with `μ = E·mu_per_e`,
/// `λ = E·lambda_per_e` (both linear in E): given `P̄ = ∂L/∂P`, returns
/// `(∂L/∂F, ∂L/∂E)`. Carries the R path through the polar derivative, the
/// J path (`∂J/∂F = cof F`) and the cofactor path.
pub fn fixed_corotated_stress_adjoint(
    f: &Mat3,
    polar: &Polar,
    youngs: f64,
    mu_per_e: f64,
    lambda_per_e: f64,
    p_bar: &Mat3,
) -> (Mat3, f64) {
    let (mu, lambda) = (youngs * mu_per_e, youngs * lambda_per_e);
    let j = mat3::determinant(f);
    let cof = mat3::cofactor(f);
    let f_minus_r = mat3::sub(f, &polar.r);

    let d_youngs = mat3::frobenius_dot(p_bar, &f_minus_r) * 2.0 * mu_per_e
        + mat3::frobenius_dot(p_bar, &cof) * lambda_per_e * (j - 1.0);

    // 2μ(F − R): F directly, and R through the polar derivative.
    let mut f_bar = mat3::scale(p_bar, 2.0 * mu);
    let r_bar = mat3::scale(p_bar, -2.0 * mu);
    f_bar = mat3::add(&f_bar, &polar_reverse_with(polar, &r_bar));
    // λ(J − 1)·cof F: J path and cofactor path.
    let j_bar = lambda * mat3::frobenius_dot(p_bar, &cof);
    mat3::add_scaled(&mut f_bar, &cof, j_bar);
    let cof_bar = mat3::scale(p_bar, lambda * (j - 1.0));
    f_bar = mat3::add(&f_bar, &mat3::cofactor_reverse(f, &cof_bar));
    (f_bar, d_youngs)
}
