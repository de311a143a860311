//! The curvature of an objective at a point from differences of its exact
//! gradients (docs/design.md § Error bars): the whole Hessian for a few
//! parameters, and an estimate of its diagonal for many.
//!
//! - [`hessian_by_differences`]: the forward differences `(g(x + h_j e_j)
//!   − g(x)) / h_j` first (`n` evaluations beside the gradient at `x`;
//!   inwards where a step would leave the bounds), kept when the caller's
//!   test accepts them; else the other side of every column is added,
//!   which makes column `j` the central `(g(x + h_j e_j) − g(x − h_j
//!   e_j)) / 2h_j` (`n` more; one-sided at a bound). Either is
//!   symmetrised, `(H + Hᵀ)/2`, which also halves the noise of the
//!   differences. Forward differences err by `O(h)` (half the third
//!   derivative times `h`), central ones by `O(h²)`; the test is the
//!   caller's, since only it knows what the Hessian must give. The
//!   asymmetry of the forward Hessian before symmetrising,
//!   [`asymmetry`], measures that error where the third derivatives are
//!   not symmetric themselves.
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

/// Which differences a Hessian was taken by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Differences {
    /// One-sided, `n` gradients beside the centre's.
    Forward,
    /// Central (one-sided at a bound), `2n`.
    Central,
}

/// The Hessian at `x` by forward differences, kept when `enough` accepts
/// it, else by central differences from the same gradients and `n` more
/// (module doc); with which it was taken. `steps[j]` is coordinate `j`'s
/// difference step, `bounds[j]` its box; `at_x` is the gradient at `x`
/// when the caller has it (else it is evaluated first).
pub fn hessian_by_differences<O: Objective>(
    objective: &mut O,
    x: &[f64],
    steps: &[f64],
    bounds: &[(f64, f64)],
    at_x: Option<&[f64]>,
    enough: impl Fn(&Hessian) -> bool,
) -> Result<Option<(Hessian, Differences)>, O::Error> {
    let centre = match at_x {
        Some(g) => g.to_vec(),
        None => match gradient(objective, x)? {
            Some(g) => g,
            None => return Ok(None),
        },
    };
    let Some(first) = first_sides(objective, x, steps, bounds)? else {
        return Ok(None);
    };
    let forward: Vec<Vec<f64>> = first
        .iter()
        .zip(steps)
        .map(|(side, &h)| {
            side.gradient
                .iter()
                .zip(&centre)
                .map(|(a, b)| (a - b) / (side.sign * h))
                .collect()
        })
        .collect();
    let hessian = symmetrised(&forward);
    log::debug!(
        "forward-difference Hessian: asymmetry {:.3}",
        asymmetry(&forward)
    );
    if enough(&hessian) || first.iter().all(|side| !side.both) {
        return Ok(Some((hessian, Differences::Forward)));
    }
    Ok(central(objective, x, steps, &first, &centre)?.map(|h| (h, Differences::Central)))
}

/// The largest `|H_ij − H_ji| / √|H_ii·H_jj|` of the matrix whose column
/// `j` is `columns[j]`, before symmetrising: 0 for exact second
/// derivatives, the relative size of the differences' error (and noise)
/// otherwise.
pub fn asymmetry(columns: &[Vec<f64>]) -> f64 {
    let n = columns.len();
    let mut worst = 0.0f64;
    for i in 0..n {
        for j in 0..i {
            let scale = (columns[i][i] * columns[j][j]).abs().sqrt();
            if scale > 0.0 {
                worst = worst.max((columns[j][i] - columns[i][j]).abs() / scale);
            }
        }
    }
    worst
}

/// One column's first difference: the gradient a step of `sign·h_j` away
/// (inwards where a bound forbids the step up), and whether the other
/// side is in bounds too.
struct FirstSide {
    sign: f64,
    gradient: Vec<f64>,
    both: bool,
}

/// `x` moved by `by` along coordinate `j`.
fn shifted(x: &[f64], j: usize, by: f64) -> Vec<f64> {
    let mut p = x.to_vec();
    p[j] += by;
    p
}

/// Every column's first side (upwards unless a bound forbids it);
/// `None` when a point is unusable or a coordinate cannot move either
/// way.
fn first_sides<O: Objective>(
    objective: &mut O,
    x: &[f64],
    steps: &[f64],
    bounds: &[(f64, f64)],
) -> Result<Option<Vec<FirstSide>>, O::Error> {
    let mut sides = Vec::with_capacity(x.len());
    for j in 0..x.len() {
        let (h, (low, high)) = (steps[j], bounds[j]);
        let up = x[j] + h <= high;
        let down = x[j] - h >= low;
        let sign = match (up, down) {
            (true, _) => 1.0,
            (false, true) => -1.0,
            (false, false) => return Ok(None),
        };
        let Some(g) = gradient(objective, &shifted(x, j, sign * h))? else {
            return Ok(None);
        };
        sides.push(FirstSide {
            sign,
            gradient: g,
            both: up && down,
        });
    }
    Ok(Some(sides))
}

/// The central-difference Hessian from the first sides: the other side
/// of every column whose both sides are in bounds, else the one-sided
/// difference with `centre`, the gradient at `x`.
fn central<O: Objective>(
    objective: &mut O,
    x: &[f64],
    steps: &[f64],
    first: &[FirstSide],
    centre: &[f64],
) -> Result<Option<Hessian>, O::Error> {
    let mut columns = Vec::with_capacity(first.len());
    for (j, side) in first.iter().enumerate() {
        let h = steps[j];
        let (other, width) = if side.both {
            (gradient(objective, &shifted(x, j, -side.sign * h))?, 2.0 * h)
        } else {
            (Some(centre.to_vec()), h)
        };
        let Some(other) = other else {
            return Ok(None);
        };
        columns.push(
            side.gradient
                .iter()
                .zip(&other)
                .map(|(a, b)| side.sign * (a - b) / width)
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
