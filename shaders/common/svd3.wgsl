// Robust f32 3×3 SVD and polar decomposition, with the reverse-mode
// derivative of the polar rotation (docs/design.md § Adjoint).
//
// SVD structure of McAdams et al. 2011 ("Computing the SVD of 3×3 matrices
// with minimal branching", the one Taichi ships): (1) V from a cyclic Jacobi
// eigen-decomposition of the symmetric FᵀF, (2) columns sorted by decreasing
// singular value and V made a proper rotation, (3) U from a Givens QR of F·V,
// so U is a product of rotations (det U = +1) and the sign of det F lands on
// σ₃ alone: the det-sign fix, which keeps R = U·Vᵀ a rotation also for
// inverted elements. Exact (not approximate) Jacobi and Givens rotations are
// used; the sweeps stop at f32 round-off (at most 6, usually 2–3).
//
// Matrices are WGSL mat3x3 (column-major: m[c][r] is row r, column c).

struct Svd3 {
    u: mat3x3<f32>,
    sigma: vec3<f32>,
    v: mat3x3<f32>,
}

// One Jacobi rotation zeroing a_pq of a symmetric matrix (Numerical
// Recipes' formulas), r the third index; returns the updated a_pp, a_qq,
// a_rp, a_rq and eigenvector columns V_p, V_q. Written on named entries
// (no dynamic indexing: software drivers spill indexed arrays to memory).
struct JacobiRotation {
    app: f32,
    aqq: f32,
    arp: f32,
    arq: f32,
    vp: vec3<f32>,
    vq: vec3<f32>,
}

fn jacobi_rotate(app: f32, aqq: f32, apq: f32, arp: f32, arq: f32, vp: vec3<f32>, vq: vec3<f32>) -> JacobiRotation {
    if abs(apq) <= 1e-30 {
        return JacobiRotation(app, aqq, arp, arq, vp, vq);
    }
    let theta = (aqq - app) / (2.0 * apq);
    let t = select(-1.0, 1.0, theta >= 0.0) / (abs(theta) + sqrt(theta * theta + 1.0));
    let c = 1.0 / sqrt(t * t + 1.0);
    let s = t * c;
    return JacobiRotation(
        app - t * apq,
        aqq + t * apq,
        c * arp - s * arq,
        s * arp + c * arq,
        c * vp - s * vq,
        s * vp + c * vq,
    );
}

// Givens rotation G (rows j, i; j < i) with G·B zeroing B_ij against the
// pivot B_jj: row_j' = c·row_j + s·row_i, row_i' = −s·row_j + c·row_i.
fn givens(bjj: f32, bij: f32, j: u32, i: u32) -> mat3x3<f32> {
    let rr = sqrt(bjj * bjj + bij * bij);
    var c = 1.0;
    var s = 0.0;
    if rr > 1e-30 {
        c = bjj / rr;
        s = bij / rr;
    }
    // Columns of G (column-major).
    if j == 0u && i == 1u {
        return mat3x3<f32>(vec3<f32>(c, -s, 0.0), vec3<f32>(s, c, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    }
    if j == 0u {
        return mat3x3<f32>(vec3<f32>(c, 0.0, -s), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(s, 0.0, c));
    }
    return mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, c, -s), vec3<f32>(0.0, s, c));
}

fn svd3(f: mat3x3<f32>) -> Svd3 {
    // Symmetric A = FᵀF, entries by name; V's columns v0, v1, v2.
    let ata = transpose(f) * f;
    var a00 = ata[0][0];
    var a11 = ata[1][1];
    var a22 = ata[2][2];
    var a01 = ata[1][0];
    var a02 = ata[2][0];
    var a12 = ata[2][1];
    var v0 = vec3<f32>(1.0, 0.0, 0.0);
    var v1 = vec3<f32>(0.0, 1.0, 0.0);
    var v2 = vec3<f32>(0.0, 0.0, 1.0);
    // Cyclic sweeps converge quadratically; stop once the off-diagonal is
    // below f32 round-off of the diagonal (at most 6 sweeps).
    for (var sweep = 0u; sweep < 6u; sweep++) {
        let off = a01 * a01 + a02 * a02 + a12 * a12;
        let diag = a00 * a00 + a11 * a11 + a22 * a22;
        if off <= 1e-15 * diag {
            break;
        }
        var r = jacobi_rotate(a00, a11, a01, a02, a12, v0, v1);
        a00 = r.app;
        a11 = r.aqq;
        a01 = 0.0;
        a02 = r.arp;
        a12 = r.arq;
        v0 = r.vp;
        v1 = r.vq;
        r = jacobi_rotate(a00, a22, a02, a01, a12, v0, v2);
        a00 = r.app;
        a22 = r.aqq;
        a02 = 0.0;
        a01 = r.arp;
        a12 = r.arq;
        v0 = r.vp;
        v2 = r.vq;
        r = jacobi_rotate(a11, a22, a12, a01, a02, v1, v2);
        a11 = r.app;
        a22 = r.aqq;
        a12 = 0.0;
        a01 = r.arp;
        a02 = r.arq;
        v1 = r.vp;
        v2 = r.vq;
    }
    // Sort eigenvalues (squared singular values) in decreasing order.
    var ev = vec3<f32>(a00, a11, a22);
    var vm = mat3x3<f32>(v0, v1, v2);
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
    var g = givens(b[0][0], b[0][1], 0u, 1u);
    b = g * b;
    var q = transpose(g);
    g = givens(b[0][0], b[0][2], 0u, 2u);
    b = g * b;
    q = q * transpose(g);
    g = givens(b[1][1], b[1][2], 1u, 2u);
    b = g * b;
    q = q * transpose(g);
    return Svd3(q, vec3<f32>(b[0][0], b[1][1], b[2][2]), vm);
}

// Rotation of the polar decomposition F = R·S (R = U·Vᵀ, proper rotation).
fn polar_rotation(svd: Svd3) -> mat3x3<f32> {
    return svd.u * transpose(svd.v);
}

// Guard of the M⁻¹ solve in the polar derivative, the same rule as the f64
// twin (src/reference/mpm/polar.rs, `solve_m`): M = tr(S)·I − S has the
// eigenvalues λ = (σ₂+σ₃, σ₁+σ₃, σ₁+σ₂) (eigenvectors: V's columns), which
// vanish only for an inverted element whose negative σ cancels another; there
// R has no derivative. M⁻¹b is computed as adj(M)·b·det/(det² + τ²) with
// τ = POLAR_GUARD·‖S‖_F³: M⁻¹b up to a relative (τ/det)² where M is well
// conditioned, bounded and going to zero as det M → 0, never a division by 0.
const POLAR_GUARD: f32 = 1e-6;

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

// Reverse-mode polar derivative (docs/design.md § Adjoint): given G = ∂L/∂R,
// returns the contribution R·[h]× to ∂L/∂F with h = M⁻¹·axial(RᵀG − GᵀR),
// M = tr(S)·I − S = V·diag(σ₂+σ₃, σ₁+σ₃, σ₁+σ₂)·Vᵀ.
fn polar_rotation_adjoint(svd: Svd3, r: mat3x3<f32>, g: mat3x3<f32>) -> mat3x3<f32> {
    let rhs = axial(transpose(r) * g - transpose(g) * r);
    let s = svd.sigma;
    let lambda = vec3<f32>(s.y + s.z, s.x + s.z, s.x + s.y);
    let det = lambda.x * lambda.y * lambda.z;
    let norm_s = length(s);
    let tau = POLAR_GUARD * norm_s * norm_s * norm_s;
    let denominator = det * det + tau * tau;
    if denominator == 0.0 {
        // S = 0 (F = 0): no rotation is preferred; pass no gradient.
        return mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    }
    // adj(M) = V·diag(λ₂λ₃, λ₁λ₃, λ₁λ₂)·Vᵀ.
    let adjugate = vec3<f32>(lambda.y * lambda.z, lambda.x * lambda.z, lambda.x * lambda.y);
    let h = svd.v * ((adjugate * (det / denominator)) * (transpose(svd.v) * rhs));
    return r * cross_matrix(h);
}
