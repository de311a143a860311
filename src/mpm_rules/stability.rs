//! The explicit time-step bound checked before any run (docs/design.md § MPM,
//! Stability): `dt ≤ c · dx / sqrt((λ + 2μ)/ρ)`, the P-wave CFL condition,
//! evaluated for the largest Young's modulus the run may use.

use super::config::lame;

/// CFL number `c`. Explicit MLS-MPM with quadratic B-splines is reliably
/// stable below about half the P-wave CFL limit; 0.5 is the value physfit
/// enforces.
pub const CFL_NUMBER: f64 = 0.5;

/// Largest stable substep for Young's modulus `youngs_max`, Poisson's ratio
/// `poisson`, density `density` and grid spacing `dx` (normalised units).
pub fn explicit_dt_bound(youngs_max: f64, poisson: f64, density: f64, dx: f64) -> f64 {
    let (mu, lambda) = lame(youngs_max, poisson);
    let wave_speed = ((lambda + 2.0 * mu) / density).sqrt();
    CFL_NUMBER * dx / wave_speed
}

/// Fewest substeps per frame at `fps` that satisfy [`explicit_dt_bound`].
pub fn min_substeps_per_frame(
    fps: f64,
    youngs_max: f64,
    poisson: f64,
    density: f64,
    dx: f64,
) -> u32 {
    let bound = explicit_dt_bound(youngs_max, poisson, density, dx);
    (1.0 / (fps * bound)).ceil().max(1.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_scales_with_dx_and_inverse_sqrt_e() {
        let a = explicit_dt_bound(1e6, 0.3, 2000.0, 1.0 / 32.0);
        let b = explicit_dt_bound(4e6, 0.3, 2000.0, 1.0 / 32.0);
        let c = explicit_dt_bound(1e6, 0.3, 2000.0, 1.0 / 64.0);
        assert!((a / b - 2.0).abs() < 1e-12);
        assert!((a / c - 2.0).abs() < 1e-12);
    }

    #[test]
    fn min_substeps_satisfies_the_bound() {
        let (fps, e, nu, rho, dx) = (30.0, 1e7, 0.3, 2000.0, 1.0 / 32.0);
        let n = min_substeps_per_frame(fps, e, nu, rho, dx);
        let bound = explicit_dt_bound(e, nu, rho, dx);
        assert!(1.0 / (fps * n as f64) <= bound);
        assert!(1.0 / (fps * (n - 1) as f64) > bound);
    }
}
