//! Reverse mode of [`super::blend`], then of the projection.
//!
//! Per pixel, the forward blend is replayed front to back (recording each
//! contribution's alpha and the transmittance `T_i` in front of it), then
//! walked back to front with the "behind" accumulators
//! `B_i = Σ_{j>i} c_j α_j Π_{i<k<j}(1−α_k) + bg·Π_{k>i}(1−α_k)` and
//! `P_i = Π_{k>i}(1−α_k)`, updated as `B_{i−1} = c_i α_i + (1−α_i) B_i`,
//! `P_{i−1} = (1−α_i) P_i`, so no division by `(1 − α)` is ever needed:
//!
//! - `∂rgb/∂c_i = α_i T_i`;
//! - `∂rgb/∂α_i = T_i (c_i − B_i)`, `∂alpha/∂α_i = T_i P_i`;
//! - `∂rgb/∂bg = T_final`;
//! - where the 0.99 clamp is active `α_i` is constant: no gradient to the
//!   Gaussian's opacity, mean or conic from that pixel; otherwise
//!   `∂α/∂o = exp(−σ)`, `∂α/∂σ = −α`, `σ = ½(A dx² + C dy²) + B dx dy` with
//!   `d = mean2d − pixel`: `∂σ/∂mean2d = (A dx + B dy, B dx + C dy)`,
//!   `∂σ/∂(A, B, C) = (dx²/2, dx dy, dy²/2)`.
//!
//! Which splats contribute (the 1/255 cutoff, the 1e-4 stop) is piecewise
//! constant and carries no gradient.

use glam::DVec2;

use super::blend::{bin_pixels, blend_pixel};
use super::params::{SplatGrads64, SplatParams64};
use super::project::{project_splat_cached, Camera64, ProjectedSplat};
use super::project_adjoint::{project_splat_backward, ProjectedSplatGrad};
use crate::scene::Camera;

/// What [`blend_adjoint`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct BlendGrads {
    /// Per splat, in the order of the `splats` argument.
    pub splats: Vec<ProjectedSplatGrad>,
    /// dL/d background colour.
    pub background: [f64; 3],
}

/// Reverse mode of the blend alone: gradients with respect to each projected
/// splat (as [`super::project_all`] returns them, depth-sorted) and the
/// background, given `d_rgb[p] = ∂L/∂rgb[p]` and `d_alpha[p] = ∂L/∂alpha[p]`
/// per pixel (row-major).
///
/// # Panics
/// When `d_rgb` or `d_alpha` does not have `width · height` entries (a test bug).
pub fn blend_adjoint(
    splats: &[ProjectedSplat],
    width: usize,
    height: usize,
    background: [f64; 3],
    d_rgb: &[[f64; 3]],
    d_alpha: &[f64],
) -> BlendGrads {
    assert_eq!(
        d_rgb.len(),
        width * height,
        "d_rgb needs one entry per pixel"
    );
    assert_eq!(
        d_alpha.len(),
        width * height,
        "d_alpha needs one entry per pixel"
    );
    let lists = bin_pixels(splats, width, height);
    let mut out = BlendGrads {
        splats: vec![ProjectedSplatGrad::default(); splats.len()],
        background: [0.0; 3],
    };
    let mut contributions = Vec::new();
    for (pixel, slots) in lists.iter().enumerate() {
        let (x, y) = (pixel % width, pixel / width);
        let t_final = blend_pixel(splats, slots, x, y, &mut contributions);
        let (drgb, dalpha) = (d_rgb[pixel], d_alpha[pixel]);
        for (bg, d) in out.background.iter_mut().zip(drgb) {
            *bg += t_final * d;
        }
        let mut behind = background;
        let mut behind_t = 1.0;
        for c in contributions.iter().rev() {
            let s = &splats[c.slot];
            let g = &mut out.splats[c.slot];
            let t = c.transmittance;
            let mut d_alpha_i = t * behind_t * dalpha;
            for ch in 0..3 {
                g.colour[ch] += c.alpha * t * drgb[ch];
                d_alpha_i += t * (s.colour[ch] - behind[ch]) * drgb[ch];
                behind[ch] = s.colour[ch] * c.alpha + (1.0 - c.alpha) * behind[ch];
            }
            behind_t *= 1.0 - c.alpha;
            if c.clamped {
                continue;
            }
            g.opacity += c.gauss * d_alpha_i;
            let d_sigma = -c.alpha * d_alpha_i;
            let [dx, dy] = c.d;
            let [a, b, cc] = s.conic;
            g.mean2d += DVec2::new(a * dx + b * dy, b * dx + cc * dy) * d_sigma;
            g.conic[0] += 0.5 * dx * dx * d_sigma;
            g.conic[1] += dx * dy * d_sigma;
            g.conic[2] += 0.5 * dy * dy * d_sigma;
        }
    }
    out
}

/// Gradients of a loss `L(rgb, alpha)` with respect to every parameter and
/// the background, given `d_rgb[p] = ∂L/∂rgb[p]` and `d_alpha[p] = ∂L/∂alpha[p]`
/// per pixel (row-major, as [`super::Image64`]).
///
/// # Panics
/// When `d_rgb` or `d_alpha` does not have one entry per pixel (a test bug).
pub fn render_backward(
    params: &SplatParams64,
    camera: &Camera,
    background: [f64; 3],
    d_rgb: &[[f64; 3]],
    d_alpha: &[f64],
) -> SplatGrads64 {
    let cam = Camera64::from(camera);
    let mut projected: Vec<_> = (0..params.len())
        .filter_map(|i| project_splat_cached(params, i, &cam))
        .collect();
    projected.sort_by(|a, b| {
        a.0.depth
            .total_cmp(&b.0.depth)
            .then(a.0.index.cmp(&b.0.index))
    });
    let (splats, caches): (Vec<_>, Vec<_>) = projected.into_iter().unzip();
    let blend = blend_adjoint(&splats, cam.width, cam.height, background, d_rgb, d_alpha);

    let mut grads = SplatGrads64::zeros_like(params);
    grads.background = blend.background;
    for ((splat, cache), g) in splats.iter().zip(&caches).zip(&blend.splats) {
        project_splat_backward(params, &cam, splat, cache, g, &mut grads);
    }
    grads
}
