//! A covariance from a Hessian (docs/design.md § Error bars): `Σ = s · H⁻¹`
//! over the directions the Hessian holds, by its eigen-decomposition
//! ([`symmetric_eigen`]).
//!
//! A direction whose eigenvalue is not clearly positive (at most
//! [`FLAT_EIGENVALUE`] × the largest) is one the data do not pin: a
//! parameter with a weight of more than [`FLAT_WEIGHT`] on such a
//! direction gets no standard error (`None`) rather than a huge or
//! negative one, and is left out of the correlations.

use super::curvature::Hessian;
use super::symmetric_eigen::symmetric_eigen;

/// Eigenvalues at most this fraction of the largest count as flat.
pub const FLAT_EIGENVALUE: f64 = 1e-8;

/// A parameter with more than this squared weight on a flat direction is
/// not constrained.
pub const FLAT_WEIGHT: f64 = 1e-3;

/// `s · H⁻¹` (module doc): the standard errors (`None` where a parameter
/// is not constrained) and the correlations between the constrained ones
/// (0 with an unconstrained one, 1 on the diagonal).
#[derive(Clone, Debug, PartialEq)]
pub struct Covariance {
    /// The standard error per parameter.
    pub std: Vec<Option<f64>>,
    /// The correlation matrix, row-major.
    pub correlation: Vec<Vec<f64>>,
}

/// The covariance `scale · H⁻¹` of `hessian` (module doc).
pub fn covariance(hessian: &Hessian, scale: f64) -> Covariance {
    let n = hessian.len();
    let (values, vectors) = symmetric_eigen(hessian);
    let largest = values.iter().fold(0.0f64, |a, &b| a.max(b));
    let flat: Vec<bool> = values
        .iter()
        .map(|&l| !(l > FLAT_EIGENVALUE * largest && l > 0.0))
        .collect();
    let constrained: Vec<bool> = (0..n)
        .map(|i| {
            (0..n)
                .filter(|&k| flat[k])
                .all(|k| vectors[i][k] * vectors[i][k] <= FLAT_WEIGHT)
        })
        .collect();
    let entry = |i: usize, j: usize| -> f64 {
        (0..n)
            .filter(|&k| !flat[k])
            .map(|k| vectors[i][k] * vectors[j][k] / values[k])
            .sum::<f64>()
            * scale
    };
    let std: Vec<Option<f64>> = (0..n)
        .map(|i| constrained[i].then(|| entry(i, i).max(0.0).sqrt()))
        .collect();
    let correlation = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| match (i == j, std[i], std[j]) {
                    (true, _, _) => 1.0,
                    (false, Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
                        (entry(i, j) / (a * b)).clamp(-1.0, 1.0)
                    }
                    _ => 0.0,
                })
                .collect()
        })
        .collect();
    Covariance { std, correlation }
}

/// The scale `s` of `Σ = s · H⁻¹` for a loss that is a mean of squared
/// residuals (docs/design.md § Error bars): `s = 2 · loss / (N − n)` for
/// `N` residuals and `n` parameters, the Gauss–Newton (Laplace)
/// covariance with the residuals' variance estimated from the residuals
/// themselves. For ordinary least squares it is the textbook
/// `RSS/(N − n) · (XᵀX)⁻¹`.
pub fn residual_scale(loss: f64, residuals: u64, parameters: usize) -> f64 {
    let dof = (residuals as f64 - parameters as f64).max(1.0);
    2.0 * loss / dof
}

/// The standard deviation of a value spread evenly over `range`,
/// `(max − min)/√12`: the error bar of a value the data leave anywhere in
/// its bounds.
pub fn uniform_std(range: [f64; 2]) -> f64 {
    (range[1] - range[0]) / 12f64.sqrt()
}
