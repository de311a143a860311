//! Small dense f64 3-vector and 3×3-matrix helpers for the MPM twin.
//! Matrices are row-major: `m[row][col]`, so `F[i][j] = F_ij`.

/// A 3-vector.
pub type Vec3 = [f64; 3];
/// A 3×3 matrix, row-major.
pub type Mat3 = [[f64; 3]; 3];

/// The identity matrix.
pub const IDENTITY: Mat3 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
/// The zero matrix.
pub const ZERO: Mat3 = [[0.0; 3]; 3];

pub fn add(a: &Mat3, b: &Mat3) -> Mat3 {
    std::array::from_fn(|i| std::array::from_fn(|j| a[i][j] + b[i][j]))
}

pub fn sub(a: &Mat3, b: &Mat3) -> Mat3 {
    std::array::from_fn(|i| std::array::from_fn(|j| a[i][j] - b[i][j]))
}

pub fn scale(a: &Mat3, s: f64) -> Mat3 {
    std::array::from_fn(|i| std::array::from_fn(|j| a[i][j] * s))
}

/// `a += s·b`.
pub fn add_scaled(a: &mut Mat3, b: &Mat3, s: f64) {
    for i in 0..3 {
        for j in 0..3 {
            a[i][j] += s * b[i][j];
        }
    }
}

pub fn mul(a: &Mat3, b: &Mat3) -> Mat3 {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

pub fn transpose(a: &Mat3) -> Mat3 {
    std::array::from_fn(|i| std::array::from_fn(|j| a[j][i]))
}

/// `a·v`.
pub fn mul_vec(a: &Mat3, v: &Vec3) -> Vec3 {
    std::array::from_fn(|i| a[i][0] * v[0] + a[i][1] * v[1] + a[i][2] * v[2])
}

/// `aᵀ·v`.
pub fn mul_transpose_vec(a: &Mat3, v: &Vec3) -> Vec3 {
    std::array::from_fn(|j| a[0][j] * v[0] + a[1][j] * v[1] + a[2][j] * v[2])
}

/// `a·bᵀ` (outer product).
pub fn outer(a: &Vec3, b: &Vec3) -> Mat3 {
    std::array::from_fn(|i| std::array::from_fn(|j| a[i] * b[j]))
}

/// Frobenius inner product `⟨a, b⟩ = Σ a_ij b_ij`.
pub fn frobenius_dot(a: &Mat3, b: &Mat3) -> f64 {
    (0..3)
        .map(|i| (0..3).map(|j| a[i][j] * b[i][j]).sum::<f64>())
        .sum()
}

pub fn trace(a: &Mat3) -> f64 {
    a[0][0] + a[1][1] + a[2][2]
}

pub fn dot(a: &Vec3, b: &Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub fn cross(a: &Vec3, b: &Vec3) -> Vec3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub fn vadd(a: &Vec3, b: &Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// `a += s·b` for vectors.
pub fn vadd_scaled(a: &mut Vec3, b: &Vec3, s: f64) {
    for k in 0..3 {
        a[k] += s * b[k];
    }
}

pub fn column(a: &Mat3, j: usize) -> Vec3 {
    [a[0][j], a[1][j], a[2][j]]
}

fn from_columns(c0: &Vec3, c1: &Vec3, c2: &Vec3) -> Mat3 {
    std::array::from_fn(|i| [c0[i], c1[i], c2[i]])
}

pub fn determinant(a: &Mat3) -> f64 {
    dot(&column(a, 0), &cross(&column(a, 1), &column(a, 2)))
}

/// Cofactor matrix `cof(F) = J·F⁻ᵀ`, a polynomial in F (no inverse): its
/// columns are `f₂×f₃, f₃×f₁, f₁×f₂` for the columns `fₖ` of F.
pub fn cofactor(a: &Mat3) -> Mat3 {
    let (f1, f2, f3) = (column(a, 0), column(a, 1), column(a, 2));
    from_columns(&cross(&f2, &f3), &cross(&f3, &f1), &cross(&f1, &f2))
}

/// Reverse mode of [`cofactor`]: given `Y = ∂L/∂cof(F)`, returns `∂L/∂F`.
/// From `⟨y, a×b⟩ = ⟨b×y, a⟩ = ⟨y×a, b⟩` applied to each column.
pub fn cofactor_reverse(a: &Mat3, y: &Mat3) -> Mat3 {
    let (f1, f2, f3) = (column(a, 0), column(a, 1), column(a, 2));
    let (y1, y2, y3) = (column(y, 0), column(y, 1), column(y, 2));
    // c1 = f2×f3, c2 = f3×f1, c3 = f1×f2.
    let g1 = vadd(&cross(&y2, &f3), &cross(&f2, &y3));
    let g2 = vadd(&cross(&f3, &y1), &cross(&y3, &f1));
    let g3 = vadd(&cross(&y1, &f2), &cross(&f1, &y2));
    from_columns(&g1, &g2, &g3)
}

/// Cross-product matrix `[w]×`, with `[w]×·v = w×v`.
pub fn skew(w: &Vec3) -> Mat3 {
    [[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]]
}

/// `axial(A) = (A₃₂, A₁₃, A₂₁)` (docs/design.md § Adjoint; 1-based indices):
/// `axial([w]×) = w`.
pub fn axial(a: &Mat3) -> Vec3 {
    [a[2][1], a[0][2], a[1][0]]
}

/// Frobenius norm.
pub fn norm(a: &Mat3) -> f64 {
    frobenius_dot(a, a).sqrt()
}
