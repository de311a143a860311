// EWA projection of one 3D Gaussian to the image (Zwicker et al. 2002, as in
// 3DGS and gsplat "classic"), written once here and imported by project.wgsl,
// project_adjoint.wgsl and camera_adjoint.wgsl, so that both backward
// passes differentiate exactly what the forward computed.
//   Σ = R(q) S Sᵀ R(q)ᵀ,  S = diag(exp(log_scale)),  q normalised here;
//   p = W μ + t (camera frame), Σ_c = W Σ Wᵀ;
//   J = [[fx/z, 0, −fx·tx/z²], [0, fy/z, −fy·ty/z²]] with tx = z·clamp(x/z, ±limit_x)
//   (likewise ty): the clamp keeps far off-screen splats from exploding;
//   Σ₂ = J Σ_c Jᵀ + 0.3·I (low-pass dilation), conic = Σ₂⁻¹;
//   mean₂ = (fx·x/z + cx, fy·y/z + cy).
#import splat/types

fn is_finite_f32(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn is_finite_vec3(v: vec3<f32>) -> bool {
    return is_finite_f32(v.x) && is_finite_f32(v.y) && is_finite_f32(v.z);
}

// Rotation matrix of a unit quaternion (w, x, y, z).
fn quat_to_rotmat(q: vec4<f32>) -> mat3x3<f32> {
    let w = q.x;
    let x = q.y;
    let y = q.z;
    let z = q.w;
    // Columns.
    return mat3x3<f32>(
        vec3<f32>(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)),
        vec3<f32>(2.0 * (x * y - w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + w * x)),
        vec3<f32>(2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)),
    );
}

fn world_to_camera_rotation(u: RasterUniforms) -> mat3x3<f32> {
    return transpose(mat3x3<f32>(u.world_to_camera[0].xyz, u.world_to_camera[1].xyz, u.world_to_camera[2].xyz));
}

fn world_to_camera_translation(u: RasterUniforms) -> vec3<f32> {
    return vec3<f32>(u.world_to_camera[0].w, u.world_to_camera[1].w, u.world_to_camera[2].w);
}

// Projection Jacobian at camera-frame point p, with the x/z, y/z clamp.
fn projection_jacobian(u: RasterUniforms, p: vec3<f32>) -> mat3x2<f32> {
    let tx = p.z * clamp(p.x / p.z, -u.limit_x, u.limit_x);
    let ty = p.z * clamp(p.y / p.z, -u.limit_y, u.limit_y);
    let rz = 1.0 / p.z;
    let rz2 = rz * rz;
    return mat3x2<f32>(
        vec2<f32>(u.focal.x * rz, 0.0),
        vec2<f32>(0.0, u.focal.y * rz),
        vec2<f32>(-u.focal.x * tx * rz2, -u.focal.y * ty * rz2),
    );
}

// The EWA covariance of one splat and the intermediates its adjoints need.
struct EwaCovariance {
    // R(q) of the normalised quaternion.
    rot: mat3x3<f32>,
    // exp(log_scale).
    s: vec3<f32>,
    // M = R S.
    m: mat3x3<f32>,
    // Σ = M Mᵀ.
    cov_world: mat3x3<f32>,
    // Σ_c = W Σ Wᵀ.
    cov_camera: mat3x3<f32>,
    // J at the camera-frame point.
    jac: mat3x2<f32>,
    // Σ₂ + 0.3·I, packed (xx, xy, yy).
    cov2d: vec3<f32>,
    // det(Σ₂ + 0.3·I).
    det: f32,
    // (Σ₂ + 0.3·I)⁻¹, packed (xx, xy, yy).
    conic: vec3<f32>,
}

// The EWA covariance of a splat with normalised quaternion `qn` and
// log-scales `log_scale` at camera-frame point `p`, `w2c` = W. Callers
// normalise the quaternion themselves (and cull before calling, where they
// cull), so each keeps its own rounding of |q|.
fn ewa_covariance(u: RasterUniforms, w2c: mat3x3<f32>, p: vec3<f32>, qn: vec4<f32>, log_scale: vec3<f32>) -> EwaCovariance {
    let rot = quat_to_rotmat(qn);
    let s = exp(log_scale);
    let m = mat3x3<f32>(rot[0] * s.x, rot[1] * s.y, rot[2] * s.z);
    let cov_world = m * transpose(m);
    let cov_camera = w2c * cov_world * transpose(w2c);
    let jac = projection_jacobian(u, p);
    let cov2 = jac * cov_camera * transpose(jac);
    let cov2d = vec3<f32>(cov2[0][0] + DILATION, cov2[0][1], cov2[1][1] + DILATION);
    let det = cov2d.x * cov2d.z - cov2d.y * cov2d.y;
    let conic = vec3<f32>(cov2d.z, -cov2d.y, cov2d.x) / det;
    return EwaCovariance(rot, s, m, cov_world, cov_camera, jac, cov2d, det, conic);
}

// Tiles [min.xy, max.zw) holding every pixel centre where alpha can reach
// 1/255: the axis-aligned box of the ellipse dᵀ Σ₂⁻¹ d ≤ 2·ln(255·opacity),
// half-widths sqrt(k²·Σ₂xx), sqrt(k²·Σ₂yy) (k ≤ 3.33 since opacity ≤ 1).
// k² is widened by 1e-4 (relative) so a pixel whose f32 alpha lands on the
// threshold is never lost to rounding; blending applies the exact test.
// Computed once per splat here and stored: counting and writing read the
// same stored rectangle, so they agree bit for bit by construction.
fn tile_rect(u: RasterUniforms, mean2d: vec2<f32>, cov2d: vec3<f32>, opacity: f32) -> vec4<u32> {
    let k2 = 2.0 * log(255.0 * opacity) * 1.0001;
    if !(k2 > 0.0) {
        return vec4<u32>(0u);
    }
    let extent = sqrt(k2 * vec2<f32>(cov2d.x, cov2d.z));
    // Pixel px is covered when its centre px + 0.5 lies in [mean − extent, mean + extent].
    let size = vec2<f32>(u.image_size);
    let first = max(ceil(mean2d - extent - 0.5), vec2<f32>(0.0));
    let last = min(floor(mean2d + extent - 0.5), size - 1.0);
    if !(first.x <= last.x && first.y <= last.y) {
        return vec4<u32>(0u);
    }
    let first_tile = vec2<u32>(first) / TILE_SIZE;
    let last_tile = vec2<u32>(last) / TILE_SIZE;
    return vec4<u32>(first_tile, last_tile + 1u);
}

fn tile_rect_area(r: vec4<u32>) -> u32 {
    return (r.z - r.x) * (r.w - r.y);
}

// dᵀ conic d at one point of a segment, minimised over the segment: the
// segment is `fixed` along one axis and runs over [lo, hi] along the other;
// `(p_fixed, p_free, p_cross)` are conic's coefficients of fixed², free²
// and 2·fixed·free. Also returns the same form with |p_cross|, the size of
// the terms that cancel, for the rounding margin.
fn segment_minimum(fixed: f32, lo: f32, hi: f32, p_fixed: f32, p_free: f32, p_cross: f32) -> vec2<f32> {
    // d/dt (p_free t² + 2 p_cross fixed t) = 0 at t = −p_cross·fixed/p_free
    // (p_free > 0: the conic is positive definite), clamped to the segment.
    let t = clamp(-p_cross * fixed / p_free, lo, hi);
    let fixed2 = p_fixed * fixed * fixed;
    let free2 = p_free * t * t;
    let cross = 2.0 * p_cross * fixed * t;
    return vec2<f32>(fixed2 + free2 + cross, fixed2 + free2 + abs(cross));
}

// Whether tile `tile` holds a pixel centre where the splat's alpha can
// reach 1/255: the minimum of dᵀ conic d over the rectangle of the tile's
// pixel centres (inside the image) against 2·ln(255·opacity), the ellipse
// tile_rect boxes. A thin or tilted ellipse's box holds many tiles the
// ellipse never reaches; each would cost blend a pass of all its pixels
// over a splat that adds nothing. The minimum of the convex form over a
// rectangle is 0 when the mean lies inside, else on an edge
// (segment_minimum). The test is conservative: the continuous rectangle
// holds every pixel centre; k² is widened as in tile_rect and by `margin`
// (≥ 1e-4) of the terms' own size, far above f32 rounding, so a tile passes
// whenever blending's own f32 test could find alpha ≥ 1/255 in it (blending
// applies that exact test per pixel). So the image is unchanged.
fn ellipse_reaches_tile(u: RasterUniforms, mean2d: vec2<f32>, conic: vec3<f32>, opacity: f32, tile: vec2<u32>, margin: f32) -> bool {
    let k2 = 2.0 * log(255.0 * opacity) * 1.0001;
    if !(k2 > 0.0) {
        return false;
    }
    let first = vec2<f32>(tile * TILE_SIZE) + 0.5;
    let last = vec2<f32>(min((tile + 1u) * TILE_SIZE, u.image_size) - 1u) + 0.5;
    // d = pixel centre − mean over the rectangle (the form is even in d).
    let lo = first - mean2d;
    let hi = last - mean2d;
    if lo.x <= 0.0 && hi.x >= 0.0 && lo.y <= 0.0 && hi.y >= 0.0 {
        return true;
    }
    let a = conic.x;
    let b = conic.y;
    let c = conic.z;
    // Left and right edges (dx fixed, dy free), then bottom and top.
    let e0 = segment_minimum(lo.x, lo.y, hi.y, a, c, b);
    let e1 = segment_minimum(hi.x, lo.y, hi.y, a, c, b);
    let e2 = segment_minimum(lo.y, lo.x, hi.x, c, a, b);
    let e3 = segment_minimum(hi.y, lo.x, hi.x, c, a, b);
    return e0.x <= k2 + margin * e0.y || e1.x <= k2 + margin * e1.y
        || e2.x <= k2 + margin * e2.y || e3.x <= k2 + margin * e3.y;
}
