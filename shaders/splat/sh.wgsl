// Real spherical harmonics up to degree 3 in the 3DGS / gsplat convention
// (coefficient order and signs of Kerbl et al. 2023's `eval_sh`), evaluated
// along the unit direction from the camera centre to the splat mean, and the
// derivative of each basis function with respect to that unit direction
// (used by project_adjoint to carry the colour gradient to the mean).

const SH_C0: f32 = 0.28209479177387814;
const SH_C1: f32 = 0.4886025119029199;

// Basis values for coefficient index k (0..16) at unit direction n.
fn sh_basis(n: vec3<f32>) -> array<f32, 16> {
    let x = n.x;
    let y = n.y;
    let z = n.z;
    var b: array<f32, 16>;
    b[0] = SH_C0;
    b[1] = -SH_C1 * y;
    b[2] = SH_C1 * z;
    b[3] = -SH_C1 * x;
    let c1 = x * x - y * y;
    let s1 = 2.0 * x * y;
    b[4] = 0.5462742152960395 * s1;
    b[5] = -1.092548430592079 * z * y;
    b[6] = 0.9461746957575601 * z * z - 0.3153915652525201;
    b[7] = -1.092548430592079 * z * x;
    b[8] = 0.5462742152960395 * c1;
    let a = -2.285228997322329 * z * z + 0.4570457994644658;
    let t = 1.445305721320277 * z;
    let c2 = x * c1 - y * s1;
    let s2 = x * s1 + y * c1;
    b[9] = -0.5900435899266435 * s2;
    b[10] = t * s1;
    b[11] = a * y;
    b[12] = z * (1.865881662950577 * z * z - 1.119528997770346);
    b[13] = a * x;
    b[14] = t * c1;
    b[15] = -0.5900435899266435 * c2;
    return b;
}

// d(basis_k)/d(n) for k in 0..16 (n treated as a free 3-vector).
fn sh_basis_gradient(n: vec3<f32>) -> array<vec3<f32>, 16> {
    let x = n.x;
    let y = n.y;
    let z = n.z;
    var g: array<vec3<f32>, 16>;
    g[0] = vec3<f32>(0.0);
    g[1] = vec3<f32>(0.0, -SH_C1, 0.0);
    g[2] = vec3<f32>(0.0, 0.0, SH_C1);
    g[3] = vec3<f32>(-SH_C1, 0.0, 0.0);
    let k2 = 1.092548430592079;
    g[4] = vec3<f32>(k2 * y, k2 * x, 0.0);
    g[5] = vec3<f32>(0.0, -k2 * z, -k2 * y);
    g[6] = vec3<f32>(0.0, 0.0, 2.0 * 0.9461746957575601 * z);
    g[7] = vec3<f32>(-k2 * z, 0.0, -k2 * x);
    g[8] = vec3<f32>(k2 * x, -k2 * y, 0.0);
    let a = -2.285228997322329 * z * z + 0.4570457994644658;
    let da_dz = -2.0 * 2.285228997322329 * z;
    let t = 1.445305721320277 * z;
    let dt_dz = 1.445305721320277;
    let c1 = x * x - y * y;
    let s1 = 2.0 * x * y;
    let k3 = -0.5900435899266435;
    // s2 = 3x²y − y³, c2 = x³ − 3xy².
    g[9] = k3 * vec3<f32>(6.0 * x * y, 3.0 * x * x - 3.0 * y * y, 0.0);
    g[10] = vec3<f32>(t * 2.0 * y, t * 2.0 * x, dt_dz * s1);
    g[11] = vec3<f32>(0.0, a, y * da_dz);
    g[12] = vec3<f32>(0.0, 0.0, 3.0 * 1.865881662950577 * z * z - 1.119528997770346);
    g[13] = vec3<f32>(a, 0.0, x * da_dz);
    g[14] = vec3<f32>(t * 2.0 * x, -t * 2.0 * y, dt_dz * c1);
    g[15] = k3 * vec3<f32>(3.0 * x * x - 3.0 * y * y, -6.0 * x * y, 0.0);
    return g;
}
