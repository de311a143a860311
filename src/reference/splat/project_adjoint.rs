//! Reverse mode of [`super::project`]: from the gradients of one projected
//! splat (pixel mean, packed conic, opacity, colour) to its parameters.
//! Chain-rule pieces, in reverse order of the forward steps:
//!
//! - colour: [`super::sh::eval_colour_backward`] (SH coefficients, and the
//!   mean through the view direction);
//! - opacity: `do/dlogit = o(1 − o)`;
//! - conic `Q = Σ2⁻¹` packed `(A, B, C)`, `B` used once in `σ`: the symmetric
//!   gradient is `G_Q = [[dA, dB/2], [dB/2, dC]]` (halve the off-diagonal,
//!   docs/design.md trap), then `G_Σ2 = −Q G_Q Q` (from `dQ = −Q dΣ2 Q`);
//!   the dilation `+0.3·I` is additive and passes `G_Σ2` through unchanged;
//! - `Σ2 = J Σc Jᵀ`: `G_Σc = Jᵀ G_Σ2 J`, `G_J = 2 G_Σ2 J Σc` (both symmetric);
//! - `J(p)`: `∂J00/∂z = −fx/z²`; `J02 = −fx·clamp(x/z)/z`: unclamped
//!   `∂/∂x = −fx/z²`, `∂/∂z = 2fx·x/z³`; clamped (gsplat `persp_proj_vjp`)
//!   `∂/∂x = 0`, `∂/∂z = fx·clamp(x/z)/z²`; likewise for row 1 with fy, y;
//! - pixel mean `(fx x/z + cx, fy y/z + cy)`: `∂/∂p = [[fx/z, 0, −fx x/z²], [0, fy/z, −fy y/z²]]`;
//! - `p = R μ + t`: `dμ += Rᵀ dp`; `Σc = R Σ Rᵀ`: `G_Σ = Rᵀ G_Σc R`;
//! - `Σ = M Mᵀ`: `G_M = 2 G_Σ M`; `M = Rot·diag(s)`: `G_Rot = G_M diag(s)`,
//!   `ds_j = Σ_i G_M[i][j] Rot[i][j]`, `dlog s = s ⊙ ds`;
//! - `Rot(q̂)` entry by entry (table in `rotation_backward`);
//! - `q̂ = q/|q|`: `dq = (dq̂ − q̂ (q̂·dq̂))/|q|`.

use glam::{DMat2, DMat3, DVec2, DVec3};

use super::params::{SplatGrads64, SplatParams64};
use super::project::{Camera64, ProjectedSplat, ProjectionCache};
use super::sh::eval_colour_backward;

/// Gradient of the loss with respect to one projected splat's outputs (the
/// quantities the GPU blend-backward kernel accumulates per splat; gsplat's
/// `v_means2d`, `v_conics`, `v_opacities`, `v_colors` conventions).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProjectedSplatGrad {
    /// dL/d pixel mean.
    pub mean2d: DVec2,
    /// dL/d packed conic `(A, B, C)`, `B` counted once as in
    /// `σ = ½(A dx² + C dy²) + B dx dy`.
    pub conic: [f64; 3],
    /// dL/d opacity (after the sigmoid).
    pub opacity: f64,
    /// dL/d colour (after the `≥ 0` clamp).
    pub colour: [f64; 3],
}

fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// dL/dq̂ for a unit quaternion (w, x, y, z) from dL/dRot, `Rot` as in
/// [`super::project::quat_to_mat`]; `g[i][j]` is the gradient of row i, column j.
fn rotation_backward(q: [f64; 4], g_rot: DMat3) -> [f64; 4] {
    let [w, x, y, z] = q;
    let g = |i: usize, j: usize| g_rot.col(j)[i];
    let dw =
        2.0 * (-z * g(0, 1) + y * g(0, 2) + z * g(1, 0) - x * g(1, 2) - y * g(2, 0) + x * g(2, 1));
    let dx = 2.0
        * (y * g(0, 1) + z * g(0, 2) + y * g(1, 0) - 2.0 * x * g(1, 1) - w * g(1, 2)
            + z * g(2, 0)
            + w * g(2, 1)
            - 2.0 * x * g(2, 2));
    let dy = 2.0
        * (-2.0 * y * g(0, 0) + x * g(0, 1) + w * g(0, 2) + x * g(1, 0) + z * g(1, 2)
            - w * g(2, 0)
            + z * g(2, 1)
            - 2.0 * y * g(2, 2));
    let dz = 2.0
        * (-2.0 * z * g(0, 0) - w * g(0, 1) + x * g(0, 2) + w * g(1, 0) - 2.0 * z * g(1, 1)
            + y * g(1, 2)
            + x * g(2, 0)
            + y * g(2, 1));
    [dw, dx, dy, dz]
}

/// Add splat `splat.index`'s parameter gradients to `grads`.
pub(crate) fn project_splat_backward(
    params: &SplatParams64,
    cam: &Camera64,
    splat: &ProjectedSplat,
    cache: &ProjectionCache,
    g: &ProjectedSplatGrad,
    grads: &mut SplatGrads64,
) {
    let i = splat.index;
    let k = params.coeffs_per_splat();

    // Colour (SH) and opacity.
    let mut d_mean = eval_colour_backward(
        &cache.colour,
        params.sh_of(i),
        g.colour,
        &mut grads.sh[i * k..(i + 1) * k],
    );
    grads.opacity_logits[i] += g.opacity * splat.opacity * (1.0 - splat.opacity);

    // Conic → dilated 2D covariance.
    let [a, b, c] = splat.conic;
    let q = DMat2::from_cols(DVec2::new(a, b), DVec2::new(b, c));
    let g_q = DMat2::from_cols(
        DVec2::new(g.conic[0], 0.5 * g.conic[1]),
        DVec2::new(0.5 * g.conic[1], g.conic[2]),
    );
    let g_cov2d = -(q * g_q * q);
    let g2 = |r: usize, s: usize| g_cov2d.col(s)[r];

    // Σ2 = J Σc Jᵀ.
    let j = cache.j_rows;
    let mut g_cov_cam = DMat3::ZERO;
    let mut g_j = [DVec3::ZERO; 2];
    for r in 0..2 {
        for s in 0..2 {
            g_cov_cam += outer(j[r], j[s]) * g2(r, s);
            g_j[r] += cache.cov_cam * j[s] * (2.0 * g2(r, s));
        }
    }

    // J(p) with the field-of-view clamp, and the pixel mean.
    let p = cache.p;
    let (fx, fy, z) = (cam.fx, cam.fy, p.z);
    let (z2, z3) = (z * z, z * z * z);
    let mut d_p = DVec3::ZERO;
    d_p.z += -fx / z2 * g_j[0].x - fy / z2 * g_j[1].y;
    if cache.clamped[0] {
        d_p.z += fx * cache.uv_clamped.x / z2 * g_j[0].z;
    } else {
        d_p.x += -fx / z2 * g_j[0].z;
        d_p.z += 2.0 * fx * p.x / z3 * g_j[0].z;
    }
    if cache.clamped[1] {
        d_p.z += fy * cache.uv_clamped.y / z2 * g_j[1].z;
    } else {
        d_p.y += -fy / z2 * g_j[1].z;
        d_p.z += 2.0 * fy * p.y / z3 * g_j[1].z;
    }
    d_p.x += fx / z * g.mean2d.x;
    d_p.y += fy / z * g.mean2d.y;
    d_p.z += -(fx * p.x * g.mean2d.x + fy * p.y * g.mean2d.y) / z2;
    d_mean += cam.rotation.transpose() * d_p;
    for (dst, v) in grads.means[i].iter_mut().zip(d_mean.to_array()) {
        *dst += v;
    }

    // Σc = R Σ Rᵀ, Σ = M Mᵀ, M = Rot diag(s).
    let g_cov_world = cam.rotation.transpose() * g_cov_cam * cam.rotation;
    let g_m = g_cov_world * cache.m * 2.0;
    let g_rot = g_m * DMat3::from_diagonal(cache.scale);
    for jx in 0..3 {
        let ds = g_m.col(jx).dot(cache.rot.col(jx));
        grads.log_scales[i][jx] += ds * cache.scale[jx];
    }
    let dq_unit = rotation_backward(cache.q_unit, g_rot);
    let qu = cache.q_unit;
    let radial: f64 = (0..4).map(|n| qu[n] * dq_unit[n]).sum();
    for n in 0..4 {
        grads.quats[i][n] += (dq_unit[n] - qu[n] * radial) / cache.q_norm;
    }
}
