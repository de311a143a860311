// Robust f32 3×3 SVD and polar decomposition, with the reverse-mode
// derivative of the polar rotation (DESIGN.md § Adjoint).
//
// SVD structure of McAdams et al. 2011 ("Computing the SVD of 3×3 matrices
// with minimal branching", the one Taichi ships): (1) V from a cyclic Jacobi
// eigen-decomposition of the symmetric FᵀF, (2) columns sorted by decreasing
// singular value and V made a proper rotation, (3) U from a Givens QR of F·V,
// so U is a product of rotations (det U = +1) and the sign of det F lands on
// σ₃ alone: the det-sign fix, which keeps R = U·Vᵀ a rotation also for
// inverted elements. Exact (not approximate) Jacobi and Givens rotations are
// used; 6 Jacobi sweeps reach f32 round-off for any input.
//
// Matrices are WGSL mat3x3 (column-major: m[c][r] is row r, column c).

struct Svd3 {
    u: mat3x3<f32>,
    sigma: vec3<f32>,
    v: mat3x3<f32>,
}

fn svd3(f: mat3x3<f32>) -> Svd3 {
    // Symmetric A = FᵀF as rows of a plain array (dynamic indexing).
    let ata = transpose(f) * f;
    var a: array<array<f32, 3>, 3>;
    var v: array<array<f32, 3>, 3>;
    for (var r = 0u; r < 3u; r++) {
        for (var c = 0u; c < 3u; c++) {
            a[r][c] = ata[c][r];
            v[r][c] = select(0.0, 1.0, r == c);
        }
    }
    for (var sweep = 0u; sweep < 6u; sweep++) {
        for (var pair = 0u; pair < 3u; pair++) {
            let p = select(select(1u, 0u, pair == 1u), 0u, pair == 0u);
            let q = select(select(2u, 2u, pair == 1u), 1u, pair == 0u);
            let apq = a[p][q];
            if abs(apq) <= 1e-30 {
                continue;
            }
            // Numerical Recipes' Jacobi rotation zeroing a[p][q].
            let theta = (a[q][q] - a[p][p]) / (2.0 * apq);
            let t = select(-1.0, 1.0, theta >= 0.0) / (abs(theta) + sqrt(theta * theta + 1.0));
            let c = 1.0 / sqrt(t * t + 1.0);
            let s = t * c;
            let app = a[p][p];
            let aqq = a[q][q];
            a[p][p] = app - t * apq;
            a[q][q] = aqq + t * apq;
            a[p][q] = 0.0;
            a[q][p] = 0.0;
            let r = 3u - p - q;
            let arp = a[r][p];
            let arq = a[r][q];
            a[r][p] = c * arp - s * arq;
            a[p][r] = a[r][p];
            a[r][q] = s * arp + c * arq;
            a[q][r] = a[r][q];
            for (var k = 0u; k < 3u; k++) {
                let vkp = v[k][p];
                let vkq = v[k][q];
                v[k][p] = c * vkp - s * vkq;
                v[k][q] = s * vkp + c * vkq;
            }
        }
    }
    // Sort eigenvalues (squared singular values) in decreasing order.
    var ev = vec3<f32>(a[0][0], a[1][1], a[2][2]);
    var vm = mat3x3<f32>(
        vec3<f32>(v[0][0], v[1][0], v[2][0]),
        vec3<f32>(v[0][1], v[1][1], v[2][1]),
        vec3<f32>(v[0][2], v[1][2], v[2][2]),
    );
    if ev.x < ev.y {
        ev = ev.yxz;
        vm = mat3x3<f32>(vm[1], vm[0], vm[2]);
    }
    if ev.x < ev.z {
        ev = ev.zyx;
        vm = mat3x3<f32>(vm[2], vm[1], vm[0]);
    }
    if ev.y < ev.z {
        ev = ev.xzy;
        vm = mat3x3<f32>(vm[0], vm[2], vm[1]);
    }
    if determinant(vm) < 0.0 {
        vm[2] = -vm[2];
    }
    // Givens QR of B = F·V: B = Q·R with Q a rotation, R upper triangular
    // (diagonal up to round-off because B's columns are orthogonal).
    var b = f * vm;
    var q = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    for (var step = 0u; step < 3u; step++) {
        // (row i, pivot row j): (1,0), (2,0), (2,1).
        let i = select(2u, 1u, step == 0u);
        let j = select(0u, 1u, step == 2u);
        let bjj = b[j][j];
        let bij = b[j][i];
        let rr = sqrt(bjj * bjj + bij * bij);
        var c = 1.0;
        var s = 0.0;
        if rr > 1e-30 {
            c = bjj / rr;
            s = bij / rr;
        }
        // Rows j and i of B: row_j' = c·row_j + s·row_i, row_i' = −s·row_j + c·row_i.
        for (var col = 0u; col < 3u; col++) {
            let bj = b[col][j];
            let bi = b[col][i];
            b[col][j] = c * bj + s * bi;
            b[col][i] = -s * bj + c * bi;
        }
        // Q ← Q·Gᵀ: columns j and i.
        let qj = q[j];
        let qi = q[i];
        q[j] = c * qj + s * qi;
        q[i] = -s * qj + c * qi;
    }
    return Svd3(q, vec3<f32>(b[0][0], b[1][1], b[2][2]), vm);
}

// Rotation of the polar decomposition F = R·S (R = U·Vᵀ, proper rotation).
fn polar_rotation(svd: Svd3) -> mat3x3<f32> {
    return svd.u * transpose(svd.v);
}

// Smallest |σᵢ + σⱼ| used when inverting M = tr(S)·I − S. M's eigenvalues
// are the pairwise sums σᵢ + σⱼ (eigenvectors: V's columns); they vanish only
// for an inverted element whose negative σ₃ cancels σ₂. There R has no
// derivative; the guard keeps the sign of the sum and clamps its magnitude to
// this value, so the gradient stays finite (and large) instead of NaN.
const POLAR_PAIR_SUM_MIN: f32 = 1e-6;

fn guarded_pair_inverse(sum: f32) -> f32 {
    let sign = select(-1.0, 1.0, sum >= 0.0);
    return 1.0 / (sign * max(abs(sum), POLAR_PAIR_SUM_MIN));
}

// axial(A) = (A₃₂, A₁₃, A₂₁) (1-based row, column).
fn axial(a: mat3x3<f32>) -> vec3<f32> {
    return vec3<f32>(a[1][2], a[2][0], a[0][1]);
}

// Cross-product matrix [w]× (so [w]×·x = w × x).
fn cross_matrix(w: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(
        vec3<f32>(0.0, w.z, -w.y),
        vec3<f32>(-w.z, 0.0, w.x),
        vec3<f32>(w.y, -w.x, 0.0),
    );
}

// Reverse-mode polar derivative (DESIGN.md § Adjoint): given G = ∂L/∂R,
// returns the contribution R·[h]× to ∂L/∂F with h = M⁻¹·axial(RᵀG − GᵀR),
// M = tr(S)·I − S = V·diag(σ₂+σ₃, σ₁+σ₃, σ₁+σ₂)·Vᵀ.
fn polar_rotation_adjoint(svd: Svd3, r: mat3x3<f32>, g: mat3x3<f32>) -> mat3x3<f32> {
    let rhs = axial(transpose(r) * g - transpose(g) * r);
    let s = svd.sigma;
    let inv = vec3<f32>(
        guarded_pair_inverse(s.y + s.z),
        guarded_pair_inverse(s.x + s.z),
        guarded_pair_inverse(s.x + s.y),
    );
    let h = svd.v * (inv * (transpose(svd.v) * rhs));
    return r * cross_matrix(h);
}
