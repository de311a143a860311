// Reverse mode of deform/gaussian_motion, per deformed Gaussian
// (src/deform/gaussian_motion_adjoint.rs; equations in
// src/reference/deform.rs, its f64 twin): from ∂L/∂(world centre) and
// ∂L/∂(raw quaternion) of its splat (the rasterizer's backward), the
// contribution of this Gaussian to ∂L/∂x_j of each of its DRIVERS drivers,
// written to slot DRIVERS·i + s (s the driver's place in its list);
// deform/driver_gather then sums the slots of each driver. Nothing is
// scattered here, so no atomics.
//   g_c = side·∂L/∂c_world;
//   torque of the rotation path: dR = R·[ω]× gives dq' = ½ (0, Rω) ⊗ q', so
//   ∂L/∂(Rω) = ½ (w'·g_u − g_w·u' + u' × g_u) and τ = Rᵀ·that (no
//   derivative of the quaternion of a matrix is needed);
//   G = g_c (X_g − X̄)ᵀ + R·[τ/2]× (a ∂L/∂R with that torque);
//   ∂L/∂A = polar_rotation_adjoint(Â, G)·inv_scale (common/svd3, guarded
//   where M is singular: collinear drivers);
//   slot s: g_c/DRIVERS + ∂L/∂A·(X_s − X̄).
// Bindings 0–3: deform/rigid_fit.
#import common/dispatch
#import deform/rigid_fit

// The rasterizer's gradients (src/splat/splat_buffers.rs, SplatGradients):
// 3 f32 per splat (means), 4 f32 per splat (raw quaternions).
@group(0) @binding(4) var<storage, read> grad_means: array<f32>;
@group(0) @binding(5) var<storage, read> grad_rotations: array<f32>;
// DRIVERS vec4 per Gaussian (xyz: the contribution; w: 0).
@group(0) @binding(6) var<storage, read_write> contributions: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 64u);
    if i >= uniforms.gaussian_count {
        return;
    }
    let g = gaussians[i];
    let fit = rigid_fit(g);
    let s = g.splat;
    let gm = vec3<f32>(grad_means[3u * s], grad_means[3u * s + 1u], grad_means[3u * s + 2u]);
    let gq = vec4<f32>(
        grad_rotations[4u * s],
        grad_rotations[4u * s + 1u],
        grad_rotations[4u * s + 2u],
        grad_rotations[4u * s + 3u],
    );
    let gc = uniforms.box_min_side.w * gm;
    let qp = quat_mul(fit.q, g.rest_rotation);
    let spatial = 0.5 * (qp.x * gq.yzw - gq.x * qp.yzw + cross(qp.yzw, gq.yzw));
    let tau = transpose(fit.r) * spatial;
    let g_r = outer(gc, rest_offset(fit, g.rest_centre)) + fit.r * cross_matrix(0.5 * tau);
    let h = polar_rotation_adjoint(fit.svd, fit.r, g_r) * fit.inv_scale;
    let shared_part = gc * (1.0 / f32(DRIVERS));
    for (var k = 0u; k < DRIVERS; k++) {
        let e = rest_offset(fit, driver_rest(driver_index(g, k)));
        contributions[DRIVERS * i + k] = vec4<f32>(shared_part + h * e, 0.0);
    }
}
