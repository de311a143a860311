//! What one view can and cannot pin down: the curvature of the alignment
//! loss at its minimum, from central differences of the gradient in the
//! chart's scaled coordinates (one pixel, or 1% of colour, per unit). Its
//! inverse, scaled to unit diagonal, is the correlation of the fitted
//! parameters (a Laplace approximation: how the loss trades one for
//! another); its eigenvalues' spread is the conditioning. Focal length
//! trades against distance and a small turn against a sideways shift, and
//! these show up here as correlations near ±1.

use serde::{Deserialize, Serialize};

pub use crate::solve::symmetric_eigen::symmetric_eigen;

/// Correlations at or above this are reported as trade-offs.
pub const STRONG_CORRELATION: f64 = 0.9;

/// A pair of parameters the data trades against each other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Correlation {
    /// The first parameter.
    pub a: String,
    /// The second.
    pub b: String,
    /// Their correlation in the loss's Laplace approximation.
    pub correlation: f64,
}

/// The conditioning of one view's alignment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conditioning {
    /// Largest over smallest eigenvalue of the curvature in scaled
    /// coordinates; `None` when the curvature is not positive definite (a
    /// direction the loss does not see at all, or not at a minimum).
    pub condition_number: Option<f64>,
    /// Pairs with |correlation| ≥ [`STRONG_CORRELATION`], strongest first.
    pub strong_correlations: Vec<Correlation>,
    /// The full correlation matrix, in the order of `parameters`; empty
    /// when the curvature is not positive definite.
    pub correlation: Vec<Vec<f64>>,
    /// The parameters' names.
    pub parameters: Vec<String>,
}

/// The conditioning of `hessian` (symmetrised here) over `names`.
pub fn conditioning(hessian: &[Vec<f64>], names: &[&str]) -> Conditioning {
    let n = hessian.len();
    let sym: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| 0.5 * (hessian[i][j] + hessian[j][i]))
                .collect()
        })
        .collect();
    let parameters: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let (values, vectors) = symmetric_eigen(&sym);
    let finite = values.iter().all(|v| v.is_finite());
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(0.0, f64::max);
    if !finite || min <= 0.0 || n == 0 {
        return Conditioning {
            condition_number: None,
            strong_correlations: Vec::new(),
            correlation: Vec::new(),
            parameters,
        };
    }
    // Covariance ∝ H⁻¹ = V diag(1/λ) Vᵀ.
    let cov: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    (0..n)
                        .map(|k| vectors[i][k] * vectors[j][k] / values[k])
                        .sum()
                })
                .collect()
        })
        .collect();
    let correlation: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| cov[i][j] / (cov[i][i] * cov[j][j]).sqrt())
                .collect()
        })
        .collect();
    let mut strong = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if correlation[i][j].abs() >= STRONG_CORRELATION {
                strong.push(Correlation {
                    a: parameters[i].clone(),
                    b: parameters[j].clone(),
                    correlation: correlation[i][j],
                });
            }
        }
    }
    strong.sort_by(|x, y| y.correlation.abs().total_cmp(&x.correlation.abs()));
    Conditioning {
        condition_number: Some(max / min),
        strong_correlations: strong,
        correlation,
        parameters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_diagonalises_a_symmetric_matrix() {
        let a = vec![
            vec![4.0, 1.0, 0.5],
            vec![1.0, 3.0, -0.2],
            vec![0.5, -0.2, 1.0],
        ];
        let (values, v) = symmetric_eigen(&a);
        for k in 0..3 {
            for i in 0..3 {
                let av: f64 = (0..3).map(|j| a[i][j] * v[j][k]).sum();
                assert!((av - values[k] * v[i][k]).abs() < 1e-10);
            }
        }
    }

    #[test]
    fn a_trade_off_shows_as_a_strong_correlation() {
        // L = (x + y)² + 0.01 (x − y)²: x and y trade against each other.
        let h = vec![vec![2.02, 1.98], vec![1.98, 2.02]];
        let c = conditioning(&h, &["x", "y"]);
        assert!((c.condition_number.unwrap() - 100.0).abs() < 1e-6);
        assert_eq!(c.strong_correlations.len(), 1);
        assert!(c.strong_correlations[0].correlation < -0.97);
        let flat = conditioning(&[vec![1.0, 0.0], vec![0.0, 0.0]], &["x", "y"]);
        assert_eq!(flat.condition_number, None);
    }
}
