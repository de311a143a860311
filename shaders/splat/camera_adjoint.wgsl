// Camera gradients of a rendered frame, one thread per splat: from the
// per-splat 2D gradients of blend_adjoint (mean₂, packed conic, colour) to
// the world-to-camera rotation W, translation t, focal lengths and principal
// point (gsplat's view-matrix gradient, summed over splats on the host).
// Splats are held fixed; the projection is recomputed as in project.wgsl.
//   p = W μ + t, Σ_c = W Σ Wᵀ: dW = dp μᵀ + 2 dΣ_c W Σ, dt = dp;
//   colour along dir = (μ − o)/|μ − o| with o = −Wᵀ t the camera centre:
//     g_o = −(d_dir − dir (dir · d_dir))/|μ − o|, dW −= t g_oᵀ, dt −= W g_o;
//   mean₂ = (fx·x/z + cx, fy·y/z + cy): dcx = d_mean₂.x, dfx += d_mean₂.x · x/z;
//   J = [[fx/z, 0, −fx·tx/z²], …]: dfx += Σ_k dJ[k][0] · J[k][0]/fx where the
//     x/z clamp is inactive; where it is active fx·tx = ±z·1.3·W/2 does not
//     depend on fx (the clamp limit is 1.3·W/(2 fx)), so only dJ[0][0] counts.
//   Likewise in y.
// Output per splat, 16 floats: dL/dW row-major (9), dL/dt (3), dL/dfx,
// dL/dfy, dL/dcx, dL/dcy. Culled splats write zero.
#import common/dispatch
#import splat/types
#import splat/sh
#import splat/sh_color
#import splat/splat_params
#import splat/projection
#import splat/projection_adjoint

const CAMERA_GRADIENT_STRIDE: u32 = 16u;

// Bindings 0–5 (the splats, `opacity_logits` unused here): splat/splat_params.
@group(0) @binding(6) var<storage, read> tile_rects: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> grad_2d: array<f32>;
@group(0) @binding(8) var<storage, read_write> grad_camera: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= u.splat_count {
        return;
    }
    let out = CAMERA_GRADIENT_STRIDE * i;
    if tile_rect_area(tile_rects[i]) == 0u {
        for (var c = 0u; c < CAMERA_GRADIENT_STRIDE; c++) {
            grad_camera[out + c] = 0.0;
        }
        return;
    }
    let g = 9u * i;
    let d_mean2d = vec2<f32>(grad_2d[g], grad_2d[g + 1u]);
    let d_conic = vec3<f32>(grad_2d[g + 2u], grad_2d[g + 3u], grad_2d[g + 4u]);
    let d_color = vec3<f32>(grad_2d[g + 6u], grad_2d[g + 7u], grad_2d[g + 8u]);

    // ---- forward recomputation (splat/projection `ewa_covariance`, as project.wgsl) ----
    let mean = splat_mean(i);
    let quat = splat_quaternion(i);
    let log_scale = splat_log_scale(i);
    let qn = quat / sqrt(dot(quat, quat));
    let w2c = world_to_camera_rotation(u);
    let t = world_to_camera_translation(u);
    let p = w2c * mean + t;
    let ewa = ewa_covariance(u, w2c, p, qn, log_scale);
    let cov_world = ewa.cov_world;
    let cov_camera = ewa.cov_camera;
    let jac = ewa.jac;
    let conic = ewa.conic;

    let adjoint = projection_adjoint(u, p, cov_camera, jac, conic, d_mean2d, d_conic);
    let d_p = adjoint.d_point;

    // ---- colour: the view direction from the camera centre ----
    let to_mean = mean - u.camera_position.xyz;
    let dist = length(to_mean);
    let dir = to_mean / dist;
    let basis = sh_basis(dir);
    let k = u.coeffs_per_splat;
    let raw_color = sh_raw_color(i, k, basis);
    let d_raw_color = select(vec3<f32>(0.0), d_color, raw_color >= vec3<f32>(0.0));
    let basis_grad = sh_basis_gradient(dir);
    let d_dir = sh_direction_gradient(i, k, d_raw_color, basis_grad);
    let d_centre = -(d_dir - dir * dot(dir, d_dir)) / dist;

    // ---- pose: dW (columns of the WGSL matrix are W's columns) ----
    let d_w = mat3x3<f32>(d_p * mean.x, d_p * mean.y, d_p * mean.z)
        + 2.0 * (adjoint.d_cov_camera * w2c * cov_world)
        - mat3x3<f32>(t * d_centre.x, t * d_centre.y, t * d_centre.z);
    let d_t = d_p - w2c * d_centre;
    for (var r = 0u; r < 3u; r++) {
        for (var c = 0u; c < 3u; c++) {
            grad_camera[out + 3u * r + c] = d_w[c][r];
        }
        grad_camera[out + 9u + r] = d_t[r];
    }

    // ---- intrinsics ----
    let rz = 1.0 / p.z;
    let d_jac = adjoint.d_jac;
    var d_fx = d_mean2d.x * p.x * rz + d_jac[0][0] * jac[0][0] / u.focal.x;
    var d_fy = d_mean2d.y * p.y * rz + d_jac[1][1] * jac[1][1] / u.focal.y;
    let ratio_x = p.x * rz;
    let ratio_y = p.y * rz;
    if !(ratio_x < -u.limit_x || ratio_x > u.limit_x) {
        d_fx += d_jac[2][0] * jac[2][0] / u.focal.x;
    }
    if !(ratio_y < -u.limit_y || ratio_y > u.limit_y) {
        d_fy += d_jac[2][1] * jac[2][1] / u.focal.y;
    }
    grad_camera[out + 12u] = d_fx;
    grad_camera[out + 13u] = d_fy;
    grad_camera[out + 14u] = d_mean2d.x;
    grad_camera[out + 15u] = d_mean2d.y;
}
