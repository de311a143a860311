// Forward projection, one thread per splat: camera transform, near-plane and
// non-finite culling, EWA 2D covariance and conic (splat/projection.wgsl),
// opacity = sigmoid(logit), colour = max(SH(dir) + 0.5, 0) with dir the unit
// vector from the camera centre to the mean, and the tile rectangle. Also
// writes the depth sort key (f32 bits of z > 0 order like the floats; culled
// splats get 0xffffffff and an empty rectangle) and the identity order the
// depth sort permutes.
#import common/dispatch
#import splat/types
#import splat/sh
#import splat/sh_color
#import splat/splat_params
#import splat/projection

@group(0) @binding(6) var<storage, read_write> projected: array<ProjectedSplat>;
@group(0) @binding(7) var<storage, read_write> tile_rects: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read_write> depth_keys: array<u32>;
@group(0) @binding(9) var<storage, read_write> depth_order: array<u32>;

fn cull(i: u32) {
    depth_keys[i] = 0xffffffffu;
    tile_rects[i] = vec4<u32>(0u);
    projected[i] = ProjectedSplat(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= u.splat_count {
        return;
    }
    depth_order[i] = i;
    let mean = splat_mean(i);
    let quat = splat_quaternion(i);
    let log_scale = splat_log_scale(i);
    let logit = opacity_logits[i];
    let quat_norm2 = dot(quat, quat);
    if !(is_finite_vec3(mean) && is_finite_f32(quat_norm2) && quat_norm2 > 0.0 && is_finite_vec3(log_scale) && is_finite_f32(logit)) {
        cull(i);
        return;
    }
    let w2c = world_to_camera_rotation(u);
    let p = w2c * mean + world_to_camera_translation(u);
    if !(p.z >= u.near) {
        cull(i);
        return;
    }
    let ewa = ewa_covariance(u, w2c, p, quat * inverseSqrt(quat_norm2), log_scale);
    let cov2d = ewa.cov2d;
    let det = ewa.det;
    let conic = ewa.conic;
    let mean2d = vec2<f32>(u.focal.x * p.x / p.z + u.principal.x, u.focal.y * p.y / p.z + u.principal.y);
    let opacity = 1.0 / (1.0 + exp(-logit));

    let dir = normalize(mean - u.camera_position.xyz);
    let basis = sh_basis(dir);
    var color = sh_raw_color(i, u.coeffs_per_splat, basis);
    // Checked before the clamp: max(NaN, 0) may be 0 (WGSL leaves it open).
    let color_finite = is_finite_vec3(color);
    color = max(color, vec3<f32>(0.0));

    if !(color_finite && det > 0.0 && is_finite_f32(det) && is_finite_vec3(conic) && is_finite_vec3(cov2d)
        && is_finite_f32(mean2d.x) && is_finite_f32(mean2d.y) && is_finite_vec3(color) && is_finite_f32(p.z)) {
        cull(i);
        return;
    }
    let rect = tile_rect(u, mean2d, cov2d, opacity);
    if tile_rect_area(rect) == 0u {
        cull(i);
        return;
    }
    tile_rects[i] = rect;
    depth_keys[i] = bitcast<u32>(p.z);
    projected[i] = ProjectedSplat(vec4<f32>(mean2d, p.z, opacity), vec4<f32>(conic, 0.0), vec4<f32>(color, 0.0));
}
