//! Poisson's ratio as a fitted unknown (docs/design.md § Loss, parameters,
//! fit): `ν = low + (high − low) · sigmoid(z)` over the scene's
//! [`PoissonRange`] (`[fit.stiffness] poisson_range`, default `[0, 0.49]`,
//! the top at most [`crate::scene::fit_field::FITTED_POISSON_MAX`]), with the unconstrained `z` the
//! stiffness stage's parameter. The map is smooth and keeps ν inside
//! (low, high) whatever the solver does, so no bound is needed on `z` (a
//! wide box, [`Z_BOUND`], only keeps the sigmoid out of its flat tails);
//! high < 0.5 keeps λ finite and the time step the scene was checked for,
//! at `high` ([`crate::scene::Scene::poisson_max`]), valid.
//!
//! `z` is parameterised per driver by the same [`super::ParamMap`] as
//! `log10 E` (one value, or one per region), so `∂L/∂z_p = Σ_d M_dp ·
//! ∂L/∂ν_d · (high − low) · s_d (1 − s_d)`, `s_d = sigmoid(z_d)`.

pub use crate::scene::fit_field::PoissonRange;

use super::error::FitError;
use super::params::ParamMap;

/// The L-BFGS scale of a `z` coordinate: a unit step of the solver moves
/// `z` by 1, about a quarter of ν's range around the middle.
pub const POISSON_FIRST_STEP: f64 = 1.0;

/// The box of `z` (ν from `low + 3.4e-4·(high − low)` to `high − 3.4e-4·(high
/// − low)`): wide enough for any ν of the range, narrow enough that the
/// gradient does not vanish.
pub const Z_BOUND: f64 = 8.0;

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

impl PoissonRange {
    /// ν at `z`.
    pub fn poisson_of(&self, z: f64) -> f64 {
        self.low + (self.high - self.low) * sigmoid(z)
    }

    /// `z` of `nu`, for `nu` in (low, high) (the start, from
    /// `material.poisson_ratio`; the scene refuses a fitted ν outside it).
    pub fn z_of(&self, nu: f64) -> f64 {
        let s = (nu - self.low) / (self.high - self.low);
        (s / (1.0 - s)).ln()
    }

    /// `dν/dz` at `z`: `(high − low) · s (1 − s)`.
    pub fn derivative(&self, z: f64) -> f64 {
        let s = sigmoid(z);
        (self.high - self.low) * s * (1.0 - s)
    }
}

/// ν per driver from ν's parameters `z`: the fit's map, its range and
/// the start (`material.poisson_ratio`) of a fit that holds ν. A value, so
/// that what reports on a running fit (the truth's recovery after each
/// stage) computes the ν the fit simulates without borrowing its problem.
#[derive(Clone, Debug)]
pub struct DriverPoisson {
    /// The map of `z` onto the drivers, when ν is fitted.
    pub map: Option<ParamMap>,
    /// The range a fitted ν stays inside.
    pub range: PoissonRange,
    /// ν of every driver when it is held.
    pub held: f64,
    /// The drivers.
    pub drivers: usize,
}

impl DriverPoisson {
    /// ν per driver at `z`: the sigmoid of the mapped `z`, or the held ν
    /// everywhere for an empty `z`.
    ///
    /// Errors: [`FitError::ParameterCount`] for a `z` whose length is not
    /// the map's (any `z` when ν is not fitted).
    pub fn apply(&self, z: &[f64]) -> Result<Vec<f64>, FitError> {
        match &self.map {
            _ if z.is_empty() => Ok(vec![self.held; self.drivers]),
            Some(map) => Ok(map
                .apply(z)?
                .into_iter()
                .map(|z| self.range.poisson_of(z))
                .collect()),
            None => Err(FitError::ParameterCount {
                what: "Poisson's ratio",
                got: z.len(),
                expected: 0,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::fit_field::FITTED_POISSON_MAX;

    fn poisson_of(z: f64) -> f64 {
        PoissonRange::default().poisson_of(z)
    }

    fn z_of(nu: f64) -> f64 {
        PoissonRange::default().z_of(nu)
    }

    fn derivative(z: f64) -> f64 {
        PoissonRange::default().derivative(z)
    }

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

    #[test]
    fn a_narrower_range_maps_onto_itself() {
        let r = PoissonRange {
            low: 0.1,
            high: 0.4,
        };
        for nu in [0.11, 0.2, 0.3, 0.39] {
            assert!((r.poisson_of(r.z_of(nu)) - nu).abs() < 1e-14);
        }
        for z in [-3.0, 0.0, 2.5] {
            let h = 1e-6;
            let fd = (r.poisson_of(z + h) - r.poisson_of(z - h)) / (2.0 * h);
            assert!((fd - r.derivative(z)).abs() < 1e-9);
            assert!(r.poisson_of(z) > 0.1 && r.poisson_of(z) < 0.4);
        }
        assert!((r.poisson_of(0.0) - 0.25).abs() < 1e-15);
    }
}
