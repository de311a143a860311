//! How well a twin-experiment fit recovered its truth (docs/design.md § Verification 5).
//!
//! - **v0**: `‖v − v*‖ / ‖v*‖` over the free drivers (anchored drivers are
//!   held at rest in both).
//! - **E**: the median and 90th percentile of `|Δ log10 E|` over the free
//!   drivers that deform in the truth. Rigidly moving parts do not reveal
//!   E, so a driver counts only when its Green strain `½(FᵀF − I)` reaches
//!   a Frobenius norm above [`DEFORMING_STRAIN`] in some frame of the
//!   truth's rollout. (Not `‖F − I‖`: a rigid rotation alone moves `F − I`
//!   by the angle, which would count a swinging but undeformed part, so
//!   the rotation-free strain is used.)

use serde::{Deserialize, Deserializer, Serialize};

use crate::mpm::ParticleState;

/// Strain above which a driver "deforms in the truth" (module doc).
pub const DEFORMING_STRAIN: f64 = 1e-3;

/// Per driver: whether its largest Green strain over `frames` exceeds
/// [`DEFORMING_STRAIN`].
pub fn deforming_drivers(frames: &[ParticleState]) -> Vec<bool> {
    let n = frames.first().map_or(0, ParticleState::len);
    let mut deforming = vec![false; n];
    for state in frames {
        for (d, f) in state.f.iter().enumerate() {
            if green_strain_norm(f) > DEFORMING_STRAIN {
                deforming[d] = true;
            }
        }
    }
    deforming
}

/// `‖½(FᵀF − I)‖_F`.
pub fn green_strain_norm(f: &[[f32; 3]; 3]) -> f64 {
    let mut sum = 0.0;
    for i in 0..3 {
        for j in 0..3 {
            let ftf: f64 = (0..3)
                .map(|k| f64::from(f[k][i]) * f64::from(f[k][j]))
                .sum();
            let e = 0.5 * (ftf - if i == j { 1.0 } else { 0.0 });
            sum += e * e;
        }
    }
    sum.sqrt()
}

/// A fit's recovery of its truth (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recovery {
    /// `‖v − v*‖ / ‖v*‖` over the free drivers (NaN when the truth is at
    /// rest; `null` in fit.json).
    #[serde(deserialize_with = "nan_from_null")]
    #[schemars(with = "Option<f64>")]
    pub velocity_relative_error: f64,
    /// Median `|Δ log10 E|` over the deforming free drivers (NaN when none;
    /// `null` in fit.json).
    #[serde(deserialize_with = "nan_from_null")]
    #[schemars(with = "Option<f64>")]
    pub log10_youngs_median_error: f64,
    /// Its 90th percentile.
    #[serde(deserialize_with = "nan_from_null")]
    #[schemars(with = "Option<f64>")]
    pub log10_youngs_p90_error: f64,
    /// Free drivers.
    pub free_drivers: usize,
    /// Free drivers that deform in the truth (the E errors are over these).
    pub deforming_drivers: usize,
    /// Mean `|Δν|` over the free drivers, when the truth gives Poisson's
    /// ratio (the fit's ν, fitted or held, against the truth's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poisson_mean_error: Option<f64>,
}

/// Reads a figure JSON writes as `null` when it is undefined (NaN, which
/// JSON cannot hold) back as NaN.
fn nan_from_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// The `q`-quantile of `values` (nearest rank on the sorted values; NaN
/// when empty).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

impl Recovery {
    /// Compares per-driver fitted values with the truth's: `log10_youngs`
    /// one per driver, `velocity` three per driver (world units/s),
    /// `anchored` and `deforming` per driver.
    pub fn measure(
        log10_youngs: &[f64],
        velocity: &[f64],
        truth_log10_youngs: &[f64],
        truth_velocity: &[f64],
        anchored: &[bool],
        deforming: &[bool],
    ) -> Self {
        let free: Vec<usize> = (0..anchored.len()).filter(|&d| !anchored[d]).collect();
        let (mut diff, mut norm) = (0.0, 0.0);
        for &d in &free {
            for a in 0..3 {
                let (v, t) = (velocity[3 * d + a], truth_velocity[3 * d + a]);
                diff += (v - t) * (v - t);
                norm += t * t;
            }
        }
        let mut errors: Vec<f64> = free
            .iter()
            .filter(|&&d| deforming[d])
            .map(|&d| (log10_youngs[d] - truth_log10_youngs[d]).abs())
            .collect();
        errors.sort_by(f64::total_cmp);
        Self {
            velocity_relative_error: if norm > 0.0 {
                (diff / norm).sqrt()
            } else {
                f64::NAN
            },
            log10_youngs_median_error: quantile(&errors, 0.5),
            log10_youngs_p90_error: quantile(&errors, 0.9),
            free_drivers: free.len(),
            deforming_drivers: errors.len(),
            poisson_mean_error: None,
        }
    }

    /// The same with the mean `|Δν|` of `poisson` (per driver, the fit's)
    /// against the truth's `truth` over the drivers not `anchored`.
    pub fn with_poisson(mut self, poisson: &[f64], truth: f64, anchored: &[bool]) -> Self {
        let errors: Vec<f64> = poisson
            .iter()
            .zip(anchored)
            .filter(|(_, &a)| !a)
            .map(|(&nu, _)| (nu - truth).abs())
            .collect();
        self.poisson_mean_error =
            (!errors.is_empty()).then(|| errors.iter().sum::<f64>() / errors.len() as f64);
        self
    }

    /// One line for the terminal.
    pub fn summary(&self) -> String {
        format!(
            "v0 error {:.1}% over {} free drivers; |Δ log10 E| median {:.3}, P90 {:.3} over {} drivers that deform in the truth",
            100.0 * self.velocity_relative_error,
            self.free_drivers,
            self.log10_youngs_median_error,
            self.log10_youngs_p90_error,
            self.deforming_drivers
        ) + &self
            .poisson_mean_error
            .map_or(String::new(), |e| format!("; |Δν| mean {e:.3}"))
    }
}

#[cfg(test)]
mod poisson_tests {
    use super::*;

    /// A truth at rest has no velocity error: NaN, written as `null`, and
    /// fit.json is still read back.
    #[test]
    fn an_undefined_figure_round_trips_through_json_as_null() {
        let r = Recovery::measure(&[4.0], &[0.0; 3], &[4.0], &[0.0; 3], &[false], &[false]);
        assert!(r.velocity_relative_error.is_nan());
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"velocity_relative_error\":null"), "{json}");
        let back: Recovery = serde_json::from_str(&json).unwrap();
        assert!(back.velocity_relative_error.is_nan() && back.log10_youngs_median_error.is_nan());
    }

    /// The mean |Δν| is over the free drivers only, and the terminal line
    /// says it.
    #[test]
    fn the_poisson_error_is_the_mean_over_free_drivers() {
        let r = Recovery::measure(
            &[4.0; 3],
            &[1.0; 9],
            &[4.0; 3],
            &[1.0; 9],
            &[false, false, true],
            &[true; 3],
        );
        assert_eq!(r.poisson_mean_error, None);
        assert!(!r.summary().contains("Δν"));
        let r = r.with_poisson(&[0.3, 0.1, 0.45], 0.2, &[false, false, true]);
        assert!((r.poisson_mean_error.unwrap() - 0.1).abs() < 1e-15);
        assert!(r.summary().ends_with("; |Δν| mean 0.100"), "{}", r.summary());
    }
}
