//! The error bars' numerics (src/solve/curvature.rs, src/solve/covariance.rs)
//! on problems whose answers are known in closed form: the Hessian of a
//! quadratic from its gradients, the diagonal estimate, the covariance of
//! a Hessian with a flat direction, and ordinary least squares, whose
//! standard errors the residual-scaled covariance must reproduce.

use physfit::solve::covariance::{covariance, residual_scale};
use physfit::solve::curvature::{
    asymmetry, diagonal_by_probes, hessian_by_differences, Differences,
};
use physfit::solve::symmetric_eigen::symmetric_eigen;
use physfit::solve::Evaluated;

/// `½ xᵀAx + bᵀx` with its gradient, counting evaluations.
fn quadratic<'a>(
    a: &'a [Vec<f64>],
    b: &'a [f64],
    count: &'a mut usize,
) -> impl FnMut(&[f64]) -> Result<Evaluated, ()> + 'a {
    with_quartic(a, b, 0.0, count)
}

/// `½ xᵀAx + bᵀx + w·Σ x_i⁴/12` with its gradient, counting evaluations:
/// with `w ≠ 0` a third derivative (`2w·x_i` on the diagonal) that forward
/// differences pick up as an `O(h)` error and central ones cancel.
fn with_quartic<'a>(
    a: &'a [Vec<f64>],
    b: &'a [f64],
    w: f64,
    count: &'a mut usize,
) -> impl FnMut(&[f64]) -> Result<Evaluated, ()> + 'a {
    move |x: &[f64]| {
        *count += 1;
        let ax: Vec<f64> = a
            .iter()
            .map(|row| row.iter().zip(x).map(|(r, x)| r * x).sum())
            .collect();
        let f = 0.5 * ax.iter().zip(x).map(|(a, x)| a * x).sum::<f64>()
            + b.iter().zip(x).map(|(b, x)| b * x).sum::<f64>()
            + w * x.iter().map(|x| x.powi(4) / 12.0).sum::<f64>();
        let g = (0..x.len())
            .map(|i| ax[i] + b[i] + w * x[i].powi(3) / 3.0)
            .collect();
        Ok(Some((f, g)))
    }
}

#[test]
fn the_hessian_of_a_quadratic_comes_back_from_its_gradients_inside_and_at_bounds() {
    let a = vec![
        vec![4.0, 1.0, -0.5],
        vec![1.0, 3.0, 0.25],
        vec![-0.5, 0.25, 2.0],
    ];
    let b = [0.3, -1.0, 2.0];
    let mut count = 0;
    let x = [0.1, 0.5, 1.0];
    // The third coordinate sits on its upper bound: a one-sided difference.
    let bounds = [(-1.0, 1.0), (-1.0, 1.0), (-1.0, 1.0)];
    let (h, how) = hessian_by_differences(
        &mut quadratic(&a, &b, &mut count),
        &x,
        &[1e-3, 2e-3, 1e-3],
        &bounds,
        None,
        |_| false,
    )
    .unwrap()
    .unwrap();
    assert_eq!(how, Differences::Central);
    for i in 0..3 {
        for j in 0..3 {
            assert!(
                (h[i][j] - a[i][j]).abs() < 1e-9,
                "H[{i}][{j}] = {}",
                h[i][j]
            );
        }
    }
    // The centre, 2 per central column, 1 for the one-sided column.
    assert_eq!(count, 6);
}

#[test]
fn forward_differences_are_kept_when_accepted_and_completed_to_central_when_not() {
    let a = vec![vec![2.0, 0.5], vec![0.5, 1.0]];
    let x = [1.0, -2.0];
    // The exact Hessian: A + diag(x_i²).
    let exact = [[3.0, 0.5], [0.5, 5.0]];
    let bounds = [(-10.0, 10.0); 2];
    let steps = [0.1, 0.1];
    let centre = with_quartic(&a, &[0.0; 2], 1.0, &mut 0)(&x)
        .unwrap()
        .unwrap()
        .1;
    // The Hessian with the forward differences accepted or not, and the
    // evaluations it took.
    let taken = |accept: bool, at_x: Option<&[f64]>| {
        let mut count = 0;
        let (h, how) = hessian_by_differences(
            &mut with_quartic(&a, &[0.0; 2], 1.0, &mut count),
            &x,
            &steps,
            &bounds,
            at_x,
            |_| accept,
        )
        .unwrap()
        .unwrap();
        (h, how, count)
    };

    // Accepted: n evaluations beside the centre's (given), within O(h).
    let (h, how, count) = taken(true, Some(&centre));
    assert_eq!(how, Differences::Forward);
    assert_eq!(count, 2);
    // Forward error: h·x_i (the third derivative's half, times h).
    assert!((h[0][0] - exact[0][0] - 0.1).abs() < 0.01, "{:?}", h);
    assert!((h[1][1] - exact[1][1] + 0.2).abs() < 0.01, "{:?}", h);

    // Refused: the other sides too, and the central Hessian is exact to
    // O(h²).
    let (h, how, count) = taken(false, Some(&centre));
    assert_eq!(how, Differences::Central);
    assert_eq!(count, 4);
    for i in 0..2 {
        for j in 0..2 {
            assert!((h[i][j] - exact[i][j]).abs() < 0.01, "{:?}", h);
        }
    }

    // Without the centre's gradient, forward differences evaluate it.
    assert_eq!(taken(true, None).2, 3);
}

#[test]
fn the_asymmetry_of_difference_columns_is_their_relative_disagreement() {
    assert_eq!(asymmetry(&[vec![4.0, 1.0], vec![1.0, 1.0]]), 0.0);
    // Columns: H_10 = 1.2 against H_01 = 1.0, scale √(4·1) = 2.
    let a = asymmetry(&[vec![4.0, 1.2], vec![1.0, 1.0]]);
    assert!((a - 0.1).abs() < 1e-12, "{a}");
}

#[test]
fn the_probed_diagonal_is_exact_for_a_diagonal_hessian_and_close_for_a_dominant_one() {
    let diagonal = vec![
        vec![5.0, 0.0, 0.0, 0.0],
        vec![0.0, 0.5, 0.0, 0.0],
        vec![0.0, 0.0, 2.0, 0.0],
        vec![0.0, 0.0, 0.0, 9.0],
    ];
    let b = [1.0, 0.0, -1.0, 0.5];
    let x = [0.0, 0.2, 0.99, -0.3];
    let bounds = vec![(-1.0, 1.0); 4];
    let mut count = 0;
    let d = diagonal_by_probes(
        &mut quadratic(&diagonal, &b, &mut count),
        &x,
        0.05,
        &bounds,
        3,
        7,
        None,
    )
    .unwrap()
    .unwrap();
    for k in 0..4 {
        assert!((d[k] - diagonal[k][k]).abs() < 1e-9, "{d:?}");
    }
    assert_eq!(count, 4);
    // Off-diagonal coupling adds noise that averages out over probes.
    let mut coupled = diagonal.clone();
    for i in 0..3 {
        coupled[i][i + 1] = 0.4;
        coupled[i + 1][i] = 0.4;
    }
    let mut count = 0;
    let d = diagonal_by_probes(
        &mut quadratic(&coupled, &b, &mut count),
        &x,
        0.05,
        &bounds,
        64,
        11,
        None,
    )
    .unwrap()
    .unwrap();
    for k in 0..4 {
        assert!((d[k] - coupled[k][k]).abs() < 0.25, "{d:?}");
    }
}

#[test]
fn the_eigen_decomposition_rebuilds_the_matrix() {
    let a = vec![
        vec![2.0, -1.0, 0.0],
        vec![-1.0, 2.0, -1.0],
        vec![0.0, -1.0, 2.0],
    ];
    let (values, vectors) = symmetric_eigen(&a);
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let s2 = 2f64.sqrt();
    for (got, want) in sorted.iter().zip([2.0 - s2, 2.0, 2.0 + s2]) {
        assert!((got - want).abs() < 1e-12, "{values:?}");
    }
    for i in 0..3 {
        for j in 0..3 {
            let rebuilt: f64 = (0..3)
                .map(|k| vectors[i][k] * values[k] * vectors[j][k])
                .sum();
            assert!((rebuilt - a[i][j]).abs() < 1e-12);
        }
    }
}

#[test]
fn a_flat_direction_leaves_its_parameters_without_an_error_bar() {
    // Only a + b is pinned; c is pinned on its own.
    let h = vec![
        vec![1.0, 1.0, 0.0],
        vec![1.0, 1.0, 0.0],
        vec![0.0, 0.0, 4.0],
    ];
    let c = covariance(&h, 2.0);
    assert_eq!(c.std[0], None);
    assert_eq!(c.std[1], None);
    assert!((c.std[2].unwrap() - (2.0f64 / 4.0).sqrt()).abs() < 1e-12);
    assert_eq!(c.correlation[0][2], 0.0);
    assert_eq!(c.correlation[2][2], 1.0);
}

#[test]
fn the_residual_scaled_covariance_is_ordinary_least_squares_standard_errors() {
    // y = 0.7 t − 0.2 + noise on 40 points; the loss is the mean square.
    let n = 40usize;
    let t: Vec<f64> = (0..n).map(|i| i as f64 / n as f64).collect();
    // A fixed, zero-mean pseudo-noise.
    let noise: Vec<f64> = (0..n)
        .map(|i| 0.05 * ((i * 37 % 17) as f64 - 8.0) / 8.0)
        .collect();
    let y: Vec<f64> = t
        .iter()
        .zip(&noise)
        .map(|(t, e)| 0.7 * t - 0.2 + e)
        .collect();
    // Normal equations of the design [t, 1].
    let (stt, st, sy, sty) = (
        t.iter().map(|t| t * t).sum::<f64>(),
        t.iter().sum::<f64>(),
        y.iter().sum::<f64>(),
        t.iter().zip(&y).map(|(t, y)| t * y).sum::<f64>(),
    );
    let det = stt * n as f64 - st * st;
    let slope = (n as f64 * sty - st * sy) / det;
    let intercept = (stt * sy - st * sty) / det;
    let rss: f64 = t
        .iter()
        .zip(&y)
        .map(|(t, y)| (y - slope * t - intercept).powi(2))
        .sum();
    let loss = rss / n as f64;
    // The textbook errors: s²(XᵀX)⁻¹ with s² = RSS/(N − 2).
    let s2 = rss / (n as f64 - 2.0);
    let want = [(s2 * n as f64 / det).sqrt(), (s2 * stt / det).sqrt()];
    // The mean loss's Hessian from its gradients.
    let mut mean_square = |p: &[f64]| -> Result<Evaluated, ()> {
        let mut g = [0.0; 2];
        let mut f = 0.0;
        for (t, y) in t.iter().zip(&y) {
            let r = p[0] * t + p[1] - y;
            f += r * r / n as f64;
            g[0] += 2.0 * r * t / n as f64;
            g[1] += 2.0 * r / n as f64;
        }
        Ok(Some((f, g.to_vec())))
    };
    let bounds = [(-10.0, 10.0); 2];
    // Forward differences: exact on a quadratic, as the central ones.
    let (h, _) = hessian_by_differences(
        &mut mean_square,
        &[slope, intercept],
        &[1e-3, 1e-3],
        &bounds,
        None,
        |_| true,
    )
    .unwrap()
    .unwrap();
    let c = covariance(&h, residual_scale(loss, n as u64, 2));
    for (got, want) in c.std.iter().zip(want) {
        let got = got.unwrap();
        assert!((got / want - 1.0).abs() < 1e-6, "{got} against {want}");
    }
    // Slope and intercept of a design on [0, 1) anticorrelate.
    assert!(c.correlation[0][1] < -0.8);
}
