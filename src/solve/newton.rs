//! Newton's step of a quadratic model: `δ = −H⁻¹ g` for a positive
//! definite Hessian `H`, through its eigen-decomposition, with the decrease
//! the model predicts, `½ gᵀ H⁻¹ g` (docs/design.md § Error bars, "The
//! exact-gradient step").

use super::symmetric_eigen::symmetric_eigen;

/// Newton's step for the Hessian `h` and gradient `g` (one coordinate
/// system), with the model's decrease; `None` unless `h` is positive
/// definite: every eigenvalue above 1e-8 of the largest, the rule an error
/// bar asks for too.
pub fn newton_step(h: &[Vec<f64>], g: &[f64]) -> Option<(Vec<f64>, f64)> {
    let n = g.len();
    if n == 0 || h.len() != n {
        return None;
    }
    let (values, vectors) = symmetric_eigen(h);
    let largest = values.iter().fold(0.0f64, |a, &b| a.max(b));
    if values.iter().any(|&l| !(l > 1e-8 * largest && l > 0.0)) {
        return None;
    }
    // δ = −Σ_k v_k (v_kᵀ g) / λ_k; the decrease is Σ_k (v_kᵀ g)² / 2λ_k.
    let mut step = vec![0.0; n];
    let mut decrease = 0.0;
    for (k, &l) in values.iter().enumerate() {
        let along: f64 = (0..n).map(|i| vectors[i][k] * g[i]).sum();
        decrease += 0.5 * along * along / l;
        for (i, s) in step.iter_mut().enumerate() {
            *s -= vectors[i][k] * along / l;
        }
    }
    Some((step, decrease))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a quadratic the step lands on the minimum and the predicted
    /// decrease is the loss's; an indefinite Hessian gives none.
    #[test]
    fn the_step_of_a_quadratic_lands_on_its_minimum() {
        // f(x) = ½ xᵀ H x − bᵀ x, minimum at H⁻¹ b.
        let h = vec![vec![4.0, 1.0], vec![1.0, 3.0]];
        let b = [1.0, 2.0];
        let f = |x: &[f64]| {
            0.5 * (x[0] * (4.0 * x[0] + x[1]) + x[1] * (x[0] + 3.0 * x[1]))
                - b[0] * x[0]
                - b[1] * x[1]
        };
        let x0 = [0.7, -0.4];
        let g = [
            4.0 * x0[0] + x0[1] - b[0],
            x0[0] + 3.0 * x0[1] - b[1],
        ];
        let (step, decrease) = newton_step(&h, &g).unwrap();
        let x = [x0[0] + step[0], x0[1] + step[1]];
        // H⁻¹ b = [1/11, 7/11].
        assert!((x[0] - 1.0 / 11.0).abs() < 1e-12 && (x[1] - 7.0 / 11.0).abs() < 1e-12);
        assert!((f(&x0) - f(&x) - decrease).abs() < 1e-12);
        assert!(newton_step(&[vec![1.0, 2.0], vec![2.0, 1.0]], &[1.0, 0.0]).is_none());
        assert!(newton_step(&[], &[]).is_none());
    }
}
