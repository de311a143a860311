//! The curvature of an objective at a point from differences of its exact
//! gradients (docs/design.md § Error bars): the whole Hessian for a few
//! parameters, and an estimate of its diagonal for many.
//!
//! - [`hessian_by_differences`]: column `j` is `(g(x + h_j e_j) −
//!   g(x − h_j e_j)) / 2h_j` (central), or the one-sided difference with
//!   `g(x)` where a step would leave the bounds; the result is symmetrised,
//!   `(H + Hᵀ)/2`, which also halves the noise of the differences. `2n`
//!   evaluations (fewer at bounds).
//! - [`diagonal_by_probes`]: the stochastic diagonal estimator (Bekas,
//!   Kokiopoulou and Saad 2007): for random signs `v`, `E[v ⊙ Hv] =
//!   diag H`, with `Hv ≈ (g(x + hv) − g(x)) / h`. `probes + 1` evaluations
//!   whatever the dimension; each off-diagonal entry adds noise
//!   `~ H_kj / √probes`, so it is a sensitivity scale per parameter, not
//!   its exact curvature. A coordinate whose step would leave its bounds
//!   steps inwards (its sign is fixed, which keeps the estimate unbiased
//!   while the other coordinates' signs stay random).
//!
//! An unusable point (the objective's `None`) ends either with `Ok(None)`.

use super::objective::Objective;

/// A Hessian, row-major `n × n`.
pub type Hessian = Vec<Vec<f64>>;

/// The gradient at `x`, or `None` when unusable.
fn gradient<O: Objective>(objective: &mut O, x: &[f64]) -> Result<Option<Vec<f64>>, O::Error> {
    Ok(objective.evaluate(x)?.map(|(_, g)| g))
}

/// The Hessian at `x` (module doc). `steps[j]` is coordinate `j`'s
/// difference step, `bounds[j]` its box; `at_x` is the gradient at `x`
/// when the caller has it (it is evaluated only when a bound needs it).
pub fn hessian_by_differences<O: Objective>(
    objective: &mut O,
    x: &[f64],
    steps: &[f64],
    bounds: &[(f64, f64)],
    at_x: Option<&[f64]>,
) -> Result<Option<Hessian>, O::Error> {
    let n = x.len();
    let mut centre = at_x.map(<[f64]>::to_vec);
    let mut columns = Vec::with_capacity(n);
    for j in 0..n {
        let (h, (low, high)) = (steps[j], bounds[j]);
        let shifted = |by: f64| {
            let mut p = x.to_vec();
            p[j] += by;
            p
        };
        let up = x[j] + h <= high;
        let down = x[j] - h >= low;
        let (plus, minus, width) = match (up, down) {
            (true, true) => (shifted(h), shifted(-h), 2.0 * h),
            (true, false) => (shifted(h), x.to_vec(), h),
            (false, true) => (x.to_vec(), shifted(-h), h),
            (false, false) => return Ok(None),
        };
        let mut ends = Vec::with_capacity(2);
        for p in [&plus, &minus] {
            let g = if p.as_slice() == x {
                if centre.is_none() {
                    centre = gradient(objective, x)?;
                }
                centre.clone()
            } else {
                gradient(objective, p)?
            };
            let Some(g) = g else { return Ok(None) };
            ends.push(g);
        }
        columns.push(
            ends[0]
                .iter()
                .zip(&ends[1])
                .map(|(a, b)| (a - b) / width)
                .collect::<Vec<f64>>(),
        );
    }
    Ok(Some(symmetrised(&columns)))
}

/// `(H + Hᵀ)/2` of the matrix whose column `j` is `columns[j]`.
fn symmetrised(columns: &[Vec<f64>]) -> Hessian {
    let n = columns.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| 0.5 * (columns[j][i] + columns[i][j]))
                .collect()
        })
        .collect()
}

/// A reproducible stream of random signs (SplitMix64).
struct Signs(u64);

impl Signs {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        if z & 1 == 0 {
            1.0
        } else {
            -1.0
        }
    }
}

/// An estimate of the Hessian's diagonal at `x` from `probes` random sign
/// vectors of step `step` (module doc); `at_x` as for
/// [`hessian_by_differences`]; `seed` fixes the signs.
pub fn diagonal_by_probes<O: Objective>(
    objective: &mut O,
    x: &[f64],
    step: f64,
    bounds: &[(f64, f64)],
    probes: usize,
    seed: u64,
    at_x: Option<&[f64]>,
) -> Result<Option<Vec<f64>>, O::Error> {
    let centre = match at_x {
        Some(g) => g.to_vec(),
        None => match gradient(objective, x)? {
            Some(g) => g,
            None => return Ok(None),
        },
    };
    let mut signs = Signs(seed);
    let mut sum = vec![0.0; x.len()];
    for _ in 0..probes {
        let v: Vec<f64> = x
            .iter()
            .zip(bounds)
            .map(|(&xi, &(low, high))| {
                let s = signs.next();
                if xi + s * step > high {
                    -1.0
                } else if xi + s * step < low {
                    1.0
                } else {
                    s
                }
            })
            .collect();
        let p: Vec<f64> = x.iter().zip(&v).map(|(xi, vi)| xi + step * vi).collect();
        let Some(g) = gradient(objective, &p)? else {
            return Ok(None);
        };
        for (k, s) in sum.iter_mut().enumerate() {
            *s += v[k] * (g[k] - centre[k]) / step;
        }
    }
    let probes = probes.max(1) as f64;
    Ok(Some(sum.into_iter().map(|s| s / probes).collect()))
}
