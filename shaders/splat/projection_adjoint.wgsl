// Adjoint of the EWA projection (splat/projection.wgsl) from the per-splat 2D
// gradients to the camera frame, shared by project_adjoint.wgsl (which goes
// on to the splat's parameters) and camera_adjoint.wgsl (which goes on to
// the camera's), so that both differentiate the same forward:
//   conic = Σ₂⁻¹: the packed gradient (ga, gb, gc) is the symmetric matrix
//     G = [[ga, gb/2], [gb/2, gc]] (b enters the quadratic form twice), and
//     dΣ₂ = −Σ₂⁻¹ G Σ₂⁻¹;
//   Σ₂ = J Σ_c Jᵀ: dΣ_c = Jᵀ dΣ₂ J, dJ = 2 dΣ₂ J Σ_c;
//   mean₂ = (fx·x/z + cx, fy·y/z + cy) and J(p): the camera-frame point p,
//     with the exact derivative of the clamped Jacobian (the clamped
//     coordinate contributes no x (or y) derivative, and tx = z·limit
//     changes the z one).
#import splat/types

struct ProjectionAdjoint {
    // dL/dp, camera-frame point (through mean₂ and J).
    d_point: vec3<f32>,
    // dL/dΣ_c, camera-frame covariance (symmetric).
    d_cov_camera: mat3x3<f32>,
    // dL/dJ.
    d_jac: mat3x2<f32>,
}

fn projection_adjoint(
    u: RasterUniforms,
    p: vec3<f32>,
    cov_camera: mat3x3<f32>,
    jac: mat3x2<f32>,
    conic: vec3<f32>,
    d_mean2d: vec2<f32>,
    d_conic: vec3<f32>,
) -> ProjectionAdjoint {
    // ---- conic -> 2D covariance ----
    let conic_m = mat2x2<f32>(vec2<f32>(conic.x, conic.y), vec2<f32>(conic.y, conic.z));
    let g_conic = mat2x2<f32>(vec2<f32>(d_conic.x, 0.5 * d_conic.y), vec2<f32>(0.5 * d_conic.y, d_conic.z));
    let d_cov2 = -1.0 * (conic_m * g_conic * conic_m);

    // ---- Σ₂ = J Σ_c Jᵀ ----
    let d_cov_camera = transpose(jac) * d_cov2 * jac;
    let d_jac = 2.0 * (d_cov2 * jac * cov_camera);

    // ---- camera-frame point: mean₂ and J ----
    let fx = u.focal.x;
    let fy = u.focal.y;
    let rz = 1.0 / p.z;
    let rz2 = rz * rz;
    let rz3 = rz2 * rz;
    var d_p = vec3<f32>(fx * rz * d_mean2d.x, fy * rz * d_mean2d.y, -(fx * p.x * d_mean2d.x + fy * p.y * d_mean2d.y) * rz2);
    d_p.z += -fx * rz2 * d_jac[0][0] - fy * rz2 * d_jac[1][1];
    let ratio_x = p.x * rz;
    let ratio_y = p.y * rz;
    if ratio_x < -u.limit_x || ratio_x > u.limit_x {
        let tx = p.z * clamp(ratio_x, -u.limit_x, u.limit_x);
        d_p.z += fx * tx * rz3 * d_jac[2][0];
    } else {
        d_p.x += -fx * rz2 * d_jac[2][0];
        d_p.z += 2.0 * fx * p.x * rz3 * d_jac[2][0];
    }
    if ratio_y < -u.limit_y || ratio_y > u.limit_y {
        let ty = p.z * clamp(ratio_y, -u.limit_y, u.limit_y);
        d_p.z += fy * ty * rz3 * d_jac[2][1];
    } else {
        d_p.y += -fy * rz2 * d_jac[2][1];
        d_p.z += 2.0 * fy * p.y * rz3 * d_jac[2][1];
    }
    return ProjectionAdjoint(d_p, d_cov_camera, d_jac);
}
