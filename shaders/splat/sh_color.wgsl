// A splat's colour from its SH coefficients, and the colour gradient's
// direction term, written once for project.wgsl, project_adjoint.wgsl and
// camera_adjoint.wgsl (splat/sh holds the basis). Reads the `sh` binding
// of splat/splat_params (per splat, `coeffs_per_splat` RGB triples): naga
// takes no storage pointers as function parameters.
#import splat/splat_params

// RGB coefficient `c` of splat `i` with `k` coefficients per splat.
fn sh_coefficient(i: u32, k: u32, c: u32) -> vec3<f32> {
    let o = 3u * (i * k + c);
    return vec3<f32>(sh[o], sh[o + 1u], sh[o + 2u]);
}

// 0.5 + Σ_c basis_c · coefficient_c: the colour before its clamp at 0.
fn sh_raw_color(i: u32, k: u32, basis: array<f32, 16>) -> vec3<f32> {
    var color = vec3<f32>(0.5);
    for (var c = 0u; c < k; c++) {
        color += basis[c] * sh_coefficient(i, k, c);
    }
    return color;
}

// dL/d(dir) = Σ_c (d_raw_color · coefficient_c) ∇basis_c, with dir treated
// as a free 3-vector (callers project it onto the sphere).
fn sh_direction_gradient(i: u32, k: u32, d_raw_color: vec3<f32>, basis_grad: array<vec3<f32>, 16>) -> vec3<f32> {
    var d_dir = vec3<f32>(0.0);
    for (var c = 0u; c < k; c++) {
        d_dir += dot(d_raw_color, sh_coefficient(i, k, c)) * basis_grad[c];
    }
    return d_dir;
}
