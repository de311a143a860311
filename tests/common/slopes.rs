//! Slopes of a function of one variable from its values (finite
//! differences), for gradient checks against functions whose values carry
//! noise: f32 rounding, the run-to-run noise of float atomics (which sum in
//! any order on real GPUs and on multi-threaded lavapipe), or isolated
//! jumps.

/// Central differences at `h` and `h/2` combined by Richardson
/// extrapolation (error O(h⁴)), so steps can be large enough that f32
/// jitter of the loss does not dominate. Four evaluations: each one's noise
/// reaches the slope amplified by about `1/h`.
pub fn richardson(mut f: impl FnMut(f64) -> f64, h: f64) -> f64 {
    let mut central = |h: f64| (f(h) - f(-h)) / (2.0 * h);
    let a = central(h);
    let b = central(h / 2.0);
    (4.0 * b - a) / 3.0
}

/// The slope at 0 of `f` from a least-squares fit of its odd part,
/// `(f(t) − f(−t))/2 ≈ b·t + d·t³`, at `t = h·i/k`, `i = 1..=k`: `b`.
pub fn fitted_slope(mut f: impl FnMut(f64) -> f64, h: f64, k: usize) -> f64 {
    let (mut s11, mut s13, mut s33, mut y1, mut y3) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for i in 1..=k {
        let t = h * i as f64 / k as f64;
        let g = 0.5 * (f(t) - f(-t));
        let t3 = t * t * t;
        s11 += t * t;
        s13 += t * t3;
        s33 += t3 * t3;
        y1 += g * t;
        y3 += g * t3;
    }
    (y1 * s33 - y3 * s13) / (s11 * s33 - s13 * s13)
}

/// The slope at 0 of a function that is smooth but for isolated jumps
/// (the image loss along a line: alphas crossing the 1/255 cutoff and
/// depth-order swaps make steps of ~1e-7 in it, while its smooth part's
/// slope is what the gradient is). `f` at `k + 1` equally spaced points over
/// `[−h, h]`; the slopes of the `k` intervals fitted, by least squares, with
/// a quadratic in the interval's midpoint (the smooth part's slope, up to a
/// quartic loss); intervals whose slope lies more than 4 robust standard
/// deviations (1.4826 × the median absolute residual) from the fit hold a
/// jump and are dropped, and the fit repeated until none is; its value at
/// 0. A jump left in a plain central difference over `[−h, h]` moves it by
/// `jump / 2h`; here it only removes one interval of `k`.
pub fn jump_robust_slope(mut f: impl FnMut(f64) -> f64, h: f64, k: usize) -> f64 {
    let t: Vec<f64> = (0..=k)
        .map(|i| -h + 2.0 * h * i as f64 / k as f64)
        .collect();
    let values: Vec<f64> = t.iter().map(|&t| f(t)).collect();
    let samples: Vec<(f64, f64)> = (0..k)
        .map(|j| {
            (
                0.5 * (t[j] + t[j + 1]),
                (values[j + 1] - values[j]) / (t[j + 1] - t[j]),
            )
        })
        .collect();
    let mut keep = vec![true; k];
    for _ in 0..k {
        let c = quadratic_fit(&samples, &keep);
        let at = |m: f64| c[0] + c[1] * m + c[2] * m * m;
        let residuals: Vec<f64> = samples.iter().map(|&(m, s)| (s - at(m)).abs()).collect();
        let mut kept: Vec<f64> = (0..k).filter(|&j| keep[j]).map(|j| residuals[j]).collect();
        kept.sort_by(f64::total_cmp);
        let limit = 4.0 * 1.4826 * kept[kept.len() / 2];
        let next: Vec<bool> = (0..k).map(|j| keep[j] && residuals[j] <= limit).collect();
        if next == keep {
            return c[0];
        }
        keep = next;
    }
    unreachable!("each pass drops an interval or returns")
}

/// Least-squares `s ≈ c0 + c1·m + c2·m²` over the kept samples `(m, s)`
/// (normal equations, centred at 0; a few dozen well-spread points).
fn quadratic_fit(samples: &[(f64, f64)], keep: &[bool]) -> [f64; 3] {
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for (&(m, s), _) in samples.iter().zip(keep).filter(|(_, &k)| k) {
        let p = [1.0, m, m * m];
        for r in 0..3 {
            b[r] += p[r] * s;
            for c in 0..3 {
                a[r][c] += p[r] * p[c];
            }
        }
    }
    // Cramer's rule on the 3×3 system.
    let det = |m: &[[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(&a);
    std::array::from_fn(|i| {
        let mut m = a;
        for r in 0..3 {
            m[r][i] = b[r];
        }
        det(&m) / d
    })
}
