//! Poisson's ratio as a fitted unknown (docs/design.md § Loss, parameters,
//! fit): `ν = ν_max · sigmoid(z)`, ν_max = [`FITTED_POISSON_MAX`], with the
//! unconstrained `z` the stiffness stage's parameter. The map is smooth and
//! keeps ν inside (0, ν_max) whatever the solver does, so no bound is
//! needed on `z` (a wide box, [`Z_BOUND`], only keeps the sigmoid out of
//! its flat tails); ν_max < 0.5 keeps λ finite and the time step the scene
//! was checked for ([`crate::scene::Scene::poisson_max`]) valid.
//!
//! `z` is parameterised per driver by the same [`super::ParamMap`] as
//! `log10 E` (one value, or one per region), so `∂L/∂z_p = Σ_d M_dp ·
//! ∂L/∂ν_d · ν_max · s_d (1 − s_d)`, `s_d = sigmoid(z_d)`.

pub use crate::scene::fit_field::FITTED_POISSON_MAX;

/// The L-BFGS scale of a `z` coordinate: a unit step of the solver moves
/// `z` by 1, about a quarter of ν's range around the middle.
pub const POISSON_FIRST_STEP: f64 = 1.0;

/// The box of `z` (ν from 1.6e-4 to 0.4898): wide enough for any ν a
/// material has, narrow enough that the gradient does not vanish.
pub const Z_BOUND: f64 = 8.0;

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// ν at `z`.
pub fn poisson_of(z: f64) -> f64 {
    FITTED_POISSON_MAX * sigmoid(z)
}

/// `z` of `nu`, for `nu` in (0, [`FITTED_POISSON_MAX`]) (the start, from
/// `material.poisson_ratio`; the scene refuses a fitted ν outside it).
pub fn z_of(nu: f64) -> f64 {
    let s = nu / FITTED_POISSON_MAX;
    (s / (1.0 - s)).ln()
}

/// `dν/dz` at `z`: `ν_max · s (1 − s)`.
pub fn derivative(z: f64) -> f64 {
    let s = sigmoid(z);
    FITTED_POISSON_MAX * s * (1.0 - s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_of_inverts_poisson_of_and_the_derivative_is_its_slope() {
        for nu in [0.01, 0.2, 0.3, 0.45] {
            assert!((poisson_of(z_of(nu)) - nu).abs() < 1e-14);
        }
        for z in [-3.0, -0.4, 0.0, 1.7] {
            let h = 1e-6;
            let fd = (poisson_of(z + h) - poisson_of(z - h)) / (2.0 * h);
            assert!((fd - derivative(z)).abs() < 1e-9, "{fd} {}", derivative(z));
        }
        assert!(poisson_of(Z_BOUND) < FITTED_POISSON_MAX && poisson_of(-Z_BOUND) > 0.0);
    }
}
