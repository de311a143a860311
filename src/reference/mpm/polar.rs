//! Polar decomposition `F = R·S` (R a rotation, S symmetric) and its
//! derivatives (docs/design.md § Adjoint, polar derivative).
//!
//! R is the rotation of the sign-fixed SVD, `R = U·diag(1, 1, det(UVᵀ))·Vᵀ`,
//! which is the rotation maximising `tr(RᵀF)` over SO(3) (also for inverted
//! F, det F < 0). Instead of an SVD this twin solves that maximisation
//! directly: `tr(R(q)ᵀF) = qᵀKq` for the unit quaternion q of R and a
//! symmetric 4×4 K built from F (Davenport's q-method), so q is the
//! eigenvector of K's largest eigenvalue, found by cyclic Jacobi in f64.
//! K's eigenvalue gaps are the pairwise sums σᵢ + σⱼ of the sign-fixed
//! singular values, the same numbers as the eigenvalues of
//! `M = tr(S)·I − S`, so the method is accurate at equal singular values
//! (F = rotation·diag(s, s, s'), F = scaled rotation) and R is ambiguous
//! only where M is singular.

use super::mat3::{self, Mat3, Vec3};

/// Factors of `F = R·S`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Polar {
    /// Rotation (det +1).
    pub r: Mat3,
    /// `S = RᵀF`, symmetrised (symmetric in exact arithmetic).
    pub s: Mat3,
}

/// Relative size of the guard on `M⁻¹` (see [`solve_m`]).
pub const M_GUARD: f64 = 1e-6;

/// Polar decomposition of `f` (see the module doc).
pub fn polar_decomposition(f: &Mat3) -> Polar {
    let k = davenport_matrix(f);
    let (values, vectors) = symmetric_eigen4(k);
    let mut best = 0;
    for i in 1..4 {
        if values[i] > values[best] {
            best = i;
        }
    }
    let q: [f64; 4] = std::array::from_fn(|a| vectors[a][best]);
    let r = rotation_from_quaternion(&q);
    let rtf = mat3::mul(&mat3::transpose(&r), f);
    let s = mat3::scale(&mat3::add(&rtf, &mat3::transpose(&rtf)), 0.5);
    Polar { r, s }
}

/// Forward-mode derivative: `dR = R·[ω]×`, `ω = M⁻¹·axial(RᵀdF − dFᵀR)`,
/// `M = tr(S)·I − S` (docs/design.md § Adjoint).
pub fn polar_forward_derivative(f: &Mat3, df: &Mat3) -> Mat3 {
    let polar = polar_decomposition(f);
    let rt_df = mat3::mul(&mat3::transpose(&polar.r), df);
    let b = mat3::axial(&mat3::sub(&rt_df, &mat3::transpose(&rt_df)));
    let omega = solve_m(&polar.s, &b);
    mat3::mul(&polar.r, &mat3::skew(&omega))
}

/// Reverse mode: given `G = ∂L/∂R`, returns the contribution
/// `∂L/∂F = R·[h]×`, `h = M⁻¹·axial(RᵀG − GᵀR)` (docs/design.md § Adjoint).
pub fn polar_reverse(f: &Mat3, g: &Mat3) -> Mat3 {
    polar_reverse_with(&polar_decomposition(f), g)
}

/// [`polar_reverse`] with the decomposition already at hand.
pub fn polar_reverse_with(polar: &Polar, g: &Mat3) -> Mat3 {
    let rt_g = mat3::mul(&mat3::transpose(&polar.r), g);
    let a = mat3::axial(&mat3::sub(&rt_g, &mat3::transpose(&rt_g)));
    let h = solve_m(&polar.s, &a);
    mat3::mul(&polar.r, &mat3::skew(&h))
}

/// Solves `M·x = b` for `M = tr(S)·I − S` (symmetric, eigenvalues σᵢ + σⱼ).
///
/// Guard: M is singular only for inverted elements whose negative singular
/// value cancels another (σᵢ + σⱼ = 0), where R itself is not unique. The
/// solve uses `x = adj(M)·b · det/(det² + τ²)` with
/// `τ = M_GUARD·‖S‖_F³`: equal to `M⁻¹b` up to a relative `(τ/det)²`
/// (≈ 4e-13 near F = I) where M is well conditioned, and bounded, going to
/// zero, as `det M → 0` instead of dividing by zero.
pub fn solve_m(s: &Mat3, b: &Vec3) -> Vec3 {
    let tr = mat3::trace(s);
    let m = mat3::sub(&mat3::scale(&mat3::IDENTITY, tr), s);
    let det = mat3::determinant(&m);
    let tau = M_GUARD * mat3::norm(s).powi(3);
    // adj(M) = cof(M)ᵀ.
    let adj = mat3::transpose(&mat3::cofactor(&m));
    let x = mat3::mul_vec(&adj, b);
    let denominator = det * det + tau * tau;
    if denominator == 0.0 {
        // S = 0 (F = 0): no rotation is preferred; pass no gradient.
        return [0.0; 3];
    }
    let factor = det / denominator;
    [x[0] * factor, x[1] * factor, x[2] * factor]
}

/// Rotation of the unit quaternion `q = (w, x, y, z)` (normalised here).
fn rotation_from_quaternion(q: &[f64; 4]) -> Mat3 {
    let n = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    let (w, x, y, z) = (q[0] / n, q[1] / n, q[2] / n, q[3] / n);
    [
        [
            w * w + x * x - y * y - z * z,
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            w * w - x * x + y * y - z * z,
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            w * w - x * x - y * y + z * z,
        ],
    ]
}

/// Davenport's K: the symmetric 4×4 with `qᵀKq = tr(R(q)ᵀF)` for the
/// rotation of [`rotation_from_quaternion`] (coefficients read off its
/// quadratic entries).
fn davenport_matrix(f: &Mat3) -> [[f64; 4]; 4] {
    let kww = f[0][0] + f[1][1] + f[2][2];
    let kxx = f[0][0] - f[1][1] - f[2][2];
    let kyy = -f[0][0] + f[1][1] - f[2][2];
    let kzz = -f[0][0] - f[1][1] + f[2][2];
    let kwx = f[2][1] - f[1][2];
    let kwy = f[0][2] - f[2][0];
    let kwz = f[1][0] - f[0][1];
    let kxy = f[0][1] + f[1][0];
    let kxz = f[0][2] + f[2][0];
    let kyz = f[1][2] + f[2][1];
    [
        [kww, kwx, kwy, kwz],
        [kwx, kxx, kxy, kxz],
        [kwy, kxy, kyy, kyz],
        [kwz, kxz, kyz, kzz],
    ]
}

/// Eigen-decomposition of a symmetric 4×4 by cyclic Jacobi rotations:
/// returns the eigenvalues and the eigenvectors as the columns of the
/// second value. Converges quadratically to full f64 precision in a
/// handful of sweeps.
fn symmetric_eigen4(mut a: [[f64; 4]; 4]) -> ([f64; 4], [[f64; 4]; 4]) {
    let mut v = [[0.0; 4]; 4];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    let scale: f64 = a.iter().flatten().map(|x| x * x).sum::<f64>();
    for _sweep in 0..32 {
        let mut off = 0.0;
        for p in 0..3 {
            for q in (p + 1)..4 {
                off += a[p][q] * a[p][q];
            }
        }
        // Off-diagonal norm below 1e-17 of the matrix norm: done.
        if off <= 1e-34 * scale {
            break;
        }
        for p in 0..3 {
            for q in (p + 1)..4 {
                if a[p][q] * a[p][q] <= 1e-40 * scale {
                    continue;
                }
                // Rotation zeroing a[p][q] (Golub & Van Loan, Alg. 8.4.1).
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..4 {
                    let akp = a[k][p];
                    let akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for k in 0..4 {
                    let apk = a[p][k];
                    let aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let vkp = row[p];
                    let vkq = row[q];
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    (std::array::from_fn(|i| a[i][i]), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_rotation_of_rotated_stretch() {
        let r = rotation_from_quaternion(&[0.9, 0.1, -0.3, 0.2]);
        let s = [[1.2, 0.1, 0.0], [0.1, 0.9, -0.05], [0.0, -0.05, 1.05]];
        let f = mat3::mul(&r, &s);
        let p = polar_decomposition(&f);
        for i in 0..3 {
            for j in 0..3 {
                assert!((p.r[i][j] - r[i][j]).abs() < 1e-13);
                assert!((p.s[i][j] - s[i][j]).abs() < 1e-13);
            }
        }
    }

    #[test]
    fn derivative_is_finite_where_m_is_singular() {
        // σ = (1, 0.5, −0.5): σ₂ + σ₃ = 0, M singular, R not unique.
        let f = [[1.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, -0.5]];
        let g = [[0.3, -1.0, 0.2], [0.5, 0.1, 2.0], [-0.7, 0.4, 0.9]];
        for df in [polar_reverse(&f, &g), polar_forward_derivative(&f, &g)] {
            assert!(df.iter().flatten().all(|x| x.is_finite()), "{df:?}");
        }
        let zero = polar_reverse(&mat3::ZERO, &g);
        assert!(zero.iter().flatten().all(|x| *x == 0.0));
    }

    #[test]
    fn inverted_f_gives_a_rotation() {
        let f = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -0.5]];
        let p = polar_decomposition(&f);
        assert!((mat3::determinant(&p.r) - 1.0).abs() < 1e-13);
        let back = mat3::mul(&p.r, &p.s);
        for i in 0..3 {
            for j in 0..3 {
                assert!((back[i][j] - f[i][j]).abs() < 1e-13);
            }
        }
    }
}
