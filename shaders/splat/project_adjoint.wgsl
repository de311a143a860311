// Backward of project.wgsl, one thread per splat (no atomics: each splat's
// gradients are written by its own thread). Recomputes the forward projection
// (splat/projection.wgsl) and applies the chain rule from the per-splat 2D
// gradients of blend_adjoint (mean₂, packed conic, opacity, colour) to the
// parameters: means, raw (unnormalised) quaternions, log-scales, opacity
// logits and SH coefficients. Culled splats (empty tile rectangle) get zero.
//   conic, Σ₂ = J Σ_c Jᵀ, mean₂ and J(p) to dL/dp and dL/dΣ_c: shared with
//     camera_adjoint.wgsl in splat/projection_adjoint.wgsl;
//   Σ_c = W Σ Wᵀ, p = W μ + t: dΣ = Wᵀ dΣ_c W, dμ = Wᵀ dp;
//   Σ = M Mᵀ, M = R S: dM = 2 dΣ M, dR = dM S, ds_k = R_{:,k} · dM_{:,k};
//   log-scale: ds · s; quaternion: ∂R/∂q, then through q/|q|;
//   colour = max(SH(dir) + 0.5, 0): zero where clamped; the direction
//     gradient flows to the mean through dir = (μ − o)/|μ − o|.
#import common/dispatch
#import splat/types
#import splat/sh
#import splat/sh_color
#import splat/splat_params
#import splat/projection
#import splat/projection_adjoint

@group(0) @binding(6) var<storage, read> tile_rects: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> grad_2d: array<f32>;
@group(0) @binding(8) var<storage, read_write> grad_means: array<f32>;
@group(0) @binding(9) var<storage, read_write> grad_rotations: array<f32>;
@group(0) @binding(10) var<storage, read_write> grad_log_scales: array<f32>;
@group(0) @binding(11) var<storage, read_write> grad_opacity_logits: array<f32>;
@group(0) @binding(12) var<storage, read_write> grad_sh: array<f32>;

fn write_zero(i: u32) {
    for (var c = 0u; c < 3u; c++) {
        grad_means[3u * i + c] = 0.0;
        grad_log_scales[3u * i + c] = 0.0;
    }
    for (var c = 0u; c < 4u; c++) {
        grad_rotations[4u * i + c] = 0.0;
    }
    grad_opacity_logits[i] = 0.0;
    let n = 3u * u.coeffs_per_splat;
    for (var c = 0u; c < n; c++) {
        grad_sh[n * i + c] = 0.0;
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= u.splat_count {
        return;
    }
    if tile_rect_area(tile_rects[i]) == 0u {
        write_zero(i);
        return;
    }
    let g = 9u * i;
    let d_mean2d = vec2<f32>(grad_2d[g], grad_2d[g + 1u]);
    let d_conic = vec3<f32>(grad_2d[g + 2u], grad_2d[g + 3u], grad_2d[g + 4u]);
    let d_opacity = grad_2d[g + 5u];
    let d_color = vec3<f32>(grad_2d[g + 6u], grad_2d[g + 7u], grad_2d[g + 8u]);

    // ---- forward recomputation (splat/projection `ewa_covariance`, as project.wgsl) ----
    let mean = splat_mean(i);
    let quat = splat_quaternion(i);
    let log_scale = splat_log_scale(i);
    let logit = opacity_logits[i];
    let quat_norm = sqrt(dot(quat, quat));
    let qn = quat / quat_norm;
    let w2c = world_to_camera_rotation(u);
    let p = w2c * mean + world_to_camera_translation(u);
    let ewa = ewa_covariance(u, w2c, p, qn, log_scale);
    let rot = ewa.rot;
    let s = ewa.s;
    let m = ewa.m;
    let cov_world = ewa.cov_world;
    let cov_camera = ewa.cov_camera;
    let jac = ewa.jac;
    let conic = ewa.conic;
    let opacity = 1.0 / (1.0 + exp(-logit));

    // ---- opacity ----
    grad_opacity_logits[i] = d_opacity * opacity * (1.0 - opacity);

    // ---- colour / SH ----
    let to_mean = mean - u.camera_position.xyz;
    let dist = length(to_mean);
    let dir = to_mean / dist;
    let basis = sh_basis(dir);
    let k = u.coeffs_per_splat;
    let raw_color = sh_raw_color(i, k, basis);
    let d_raw_color = select(vec3<f32>(0.0), d_color, raw_color >= vec3<f32>(0.0));
    let basis_grad = sh_basis_gradient(dir);
    for (var c = 0u; c < k; c++) {
        let o = 3u * (i * k + c);
        let d_coeff = d_raw_color * basis[c];
        grad_sh[o] = d_coeff.x;
        grad_sh[o + 1u] = d_coeff.y;
        grad_sh[o + 2u] = d_coeff.z;
    }
    let d_dir = sh_direction_gradient(i, k, d_raw_color, basis_grad);
    var d_mean_world = (d_dir - dir * dot(dir, d_dir)) / dist;

    // ---- 2D gradients -> camera frame (splat/projection_adjoint) ----
    let adjoint = projection_adjoint(u, p, cov_camera, jac, conic, d_mean2d, d_conic);
    let d_p = adjoint.d_point;
    let d_cov_camera = adjoint.d_cov_camera;
    d_mean_world += transpose(w2c) * d_p;

    // ---- world covariance -> rotation and scale ----
    let d_cov_world = transpose(w2c) * d_cov_camera * w2c;
    let d_m = 2.0 * (d_cov_world * m);
    let d_rot = mat3x3<f32>(d_m[0] * s.x, d_m[1] * s.y, d_m[2] * s.z);
    let d_s = vec3<f32>(dot(d_m[0], rot[0]), dot(d_m[1], rot[1]), dot(d_m[2], rot[2]));
    let d_log_scale = d_s * s;

    // ∂R/∂q with R_rc = rot[c][r], q = (w, x, y, z).
    let w = qn.x;
    let x = qn.y;
    let y = qn.z;
    let z = qn.w;
    let r00 = d_rot[0][0];
    let r01 = d_rot[1][0];
    let r02 = d_rot[2][0];
    let r10 = d_rot[0][1];
    let r11 = d_rot[1][1];
    let r12 = d_rot[2][1];
    let r20 = d_rot[0][2];
    let r21 = d_rot[1][2];
    let r22 = d_rot[2][2];
    let d_qn = 2.0 * vec4<f32>(
        -z * r01 + y * r02 + z * r10 - x * r12 - y * r20 + x * r21,
        y * r01 + z * r02 + y * r10 - 2.0 * x * r11 - w * r12 + z * r20 + w * r21 - 2.0 * x * r22,
        -2.0 * y * r00 + x * r01 + w * r02 + x * r10 + z * r12 - w * r20 + z * r21 - 2.0 * y * r22,
        -2.0 * z * r00 - w * r01 + x * r02 + w * r10 - 2.0 * z * r11 + y * r12 + x * r20 + y * r21,
    );
    let d_quat = (d_qn - qn * dot(qn, d_qn)) / quat_norm;

    for (var c = 0u; c < 3u; c++) {
        grad_means[3u * i + c] = d_mean_world[c];
        grad_log_scales[3u * i + c] = d_log_scale[c];
    }
    for (var c = 0u; c < 4u; c++) {
        grad_rotations[4u * i + c] = d_quat[c];
    }
}
