// The rigid motion of a Gaussian's drivers (docs/design.md § Drivers and the
// deformation of Gaussians), shared by deform/gaussian_motion (forward) and
// deform/gaussian_motion_adjoint (reverse). An #import module: it declares
// the first four bindings of both kernels (functions here read them
// directly, since naga takes no storage pointers as function parameters):
//   0 uniforms, 1 the MPM state of the drivers, 2 the drivers' rest
//   positions, 3 one record per deformed Gaussian.
// f64 twin: src/reference/deform.rs.
//
// Per Gaussian with drivers j (DRIVERS of them, rest X_j, current x_j,
// normalised units): A = Σ_j (x_j − x̄)(X_j − X̄)ᵀ with the unweighted
// centroids; R = the polar rotation of A (common/svd3: McAdams SVD with the
// det-sign fix). Both centroids are taken relative to the first driver
// (x̄ = x_0 + mean(x_j − x_0)), so the differences x_j − x_0 are exact for
// nearby drivers and k drivers at one point give A = 0 exactly (then R = I
// and no gradient: the polar guard's S = 0 case). A is scaled by
// 1/(max|A_ab|·‖A/max|A_ab|‖_F) before the SVD: R is unchanged by a positive
// scale, the SVD and the guard then see ‖Â‖ = 1 whatever the driver spacing,
// and the adjoint divides ∂L/∂Â by the same scale, exactly (the part of
// ∂L/∂A along A, which the scale's own derivative would carry, is
// ⟨R·[h]×, A⟩ = ⟨[h]×, S⟩ = 0 for symmetric S).
#import common/svd3
#import mpm/params

// Drivers per Gaussian (src/deform/mod.rs, DRIVERS_PER_GAUSSIAN).
const DRIVERS: u32 = 8u;

struct DeformUniforms {
    // xyz: the simulation cube's lower corner in world units; w: its side.
    box_min_side: vec4<f32>,
    gaussian_count: u32,
    driver_count: u32,
    _pad0: u32,
    _pad1: u32,
}

// src/deform/mod.rs, GaussianRecord (64 bytes).
struct GaussianRecord {
    drivers_lo: vec4<u32>,
    drivers_hi: vec4<u32>,
    // Rest centre, normalised units.
    rest_centre: vec3<f32>,
    // The splat this Gaussian is in the splat buffers.
    splat: u32,
    // Rest rotation, raw quaternion (w, x, y, z).
    rest_rotation: vec4<f32>,
}

@group(0) @binding(0) var<uniform> uniforms: DeformUniforms;
// MPM states as records of STATE_STRIDE / 4 vec4s, x in the first three
// floats (src/mpm/layout.rs).
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
// Rest position of each driver (xyz; w unused).
@group(0) @binding(2) var<storage, read> rest_drivers: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> gaussians: array<GaussianRecord>;

fn driver_index(g: GaussianRecord, s: u32) -> u32 {
    if s < 4u {
        return g.drivers_lo[s];
    }
    return g.drivers_hi[s - 4u];
}

fn driver_position(j: u32) -> vec3<f32> {
    return state[j * (STATE_STRIDE / 4u)].xyz;
}

fn driver_rest(j: u32) -> vec3<f32> {
    return rest_drivers[j].xyz;
}

struct RigidFit {
    // X_0 and mean_j(X_j − X_0): X̄ = rest_origin + rest_mean.
    rest_origin: vec3<f32>,
    rest_mean: vec3<f32>,
    // x̄.
    centroid: vec3<f32>,
    // SVD of Â = A·inv_scale.
    svd: Svd3,
    r: mat3x3<f32>,
    // Unit quaternion of R (w, x, y, z), w ≥ 0.
    q: vec4<f32>,
    inv_scale: f32,
}

// X − X̄ for a rest point X, computed as (X − X_0) − mean(X_j − X_0).
fn rest_offset(fit: RigidFit, p: vec3<f32>) -> vec3<f32> {
    return (p - fit.rest_origin) - fit.rest_mean;
}

fn outer(a: vec3<f32>, b: vec3<f32>) -> mat3x3<f32> {
    // Columns a·b_c.
    return mat3x3<f32>(a * b.x, a * b.y, a * b.z);
}

// Unit quaternion (w, x, y, z) of a rotation by Shepperd's method: the
// branch of the largest of w², x², y², z², so no division by a small
// number; normalised, sign chosen with w ≥ 0 (the twin's rule). m[c][r] is
// row r, column c.
fn quat_from_rotation(m: mat3x3<f32>) -> vec4<f32> {
    let m00 = m[0][0];
    let m11 = m[1][1];
    let m22 = m[2][2];
    let tr = m00 + m11 + m22;
    var q: vec4<f32>;
    if tr >= m00 && tr >= m11 && tr >= m22 {
        let w = 0.5 * sqrt(max(1.0 + tr, 0.0));
        let f = 0.25 / w;
        q = vec4<f32>(w, (m[1][2] - m[2][1]) * f, (m[2][0] - m[0][2]) * f, (m[0][1] - m[1][0]) * f);
    } else if m00 >= m11 && m00 >= m22 {
        let x = 0.5 * sqrt(max(1.0 + m00 - m11 - m22, 0.0));
        let f = 0.25 / x;
        q = vec4<f32>((m[1][2] - m[2][1]) * f, x, (m[1][0] + m[0][1]) * f, (m[2][0] + m[0][2]) * f);
    } else if m11 >= m22 {
        let y = 0.5 * sqrt(max(1.0 - m00 + m11 - m22, 0.0));
        let f = 0.25 / y;
        q = vec4<f32>((m[2][0] - m[0][2]) * f, (m[1][0] + m[0][1]) * f, y, (m[2][1] + m[1][2]) * f);
    } else {
        let z = 0.5 * sqrt(max(1.0 - m00 - m11 + m22, 0.0));
        let f = 0.25 / z;
        q = vec4<f32>((m[0][1] - m[1][0]) * f, (m[2][0] + m[0][2]) * f, (m[2][1] + m[1][2]) * f, z);
    }
    q = normalize(q);
    return select(q, -q, q.x < 0.0);
}

// Hamilton product a ⊗ b of (w, x, y, z) quaternions: R(a ⊗ b) = R(a)·R(b).
fn quat_mul(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(
        a.x * b.x - dot(a.yzw, b.yzw),
        a.x * b.yzw + b.x * a.yzw + cross(a.yzw, b.yzw),
    );
}

fn rigid_fit(g: GaussianRecord) -> RigidFit {
    let j0 = g.drivers_lo.x;
    let x0 = driver_position(j0);
    let r0 = driver_rest(j0);
    var sum_x = vec3<f32>(0.0);
    var sum_r = vec3<f32>(0.0);
    for (var s = 0u; s < DRIVERS; s++) {
        let j = driver_index(g, s);
        sum_x += driver_position(j) - x0;
        sum_r += driver_rest(j) - r0;
    }
    let mean_x = sum_x / f32(DRIVERS);
    let mean_r = sum_r / f32(DRIVERS);
    var a = mat3x3<f32>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    for (var s = 0u; s < DRIVERS; s++) {
        let j = driver_index(g, s);
        let d = (driver_position(j) - x0) - mean_x;
        let e = (driver_rest(j) - r0) - mean_r;
        a += outer(d, e);
    }
    // Scale Â = A / (m·n): m the largest |A_ab| (so no square under- or
    // overflows), n = ‖A/m‖_F.
    let m = max(max(abs(a[0]), abs(a[1])), abs(a[2]));
    let largest = max(m.x, max(m.y, m.z));
    var inv_scale = 0.0;
    if largest > 0.0 {
        let b = a * (1.0 / largest);
        let n = sqrt(dot(b[0], b[0]) + dot(b[1], b[1]) + dot(b[2], b[2]));
        inv_scale = 1.0 / (largest * n);
    }
    let svd = svd3(a * inv_scale);
    let r = polar_rotation(svd);
    return RigidFit(r0, mean_r, x0 + mean_x, svd, r, quat_from_rotation(r), inv_scale);
}
