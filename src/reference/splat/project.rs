//! Projection of one splat to the image (EWA splatting, Zwicker et al. 2001,
//! as 3DGS/gsplat "classic" implement it; docs/design.md § Gaussian splatting):
//!
//! 1. camera-space mean `p = R μ + t`; culled when `p.z < near`;
//! 2. world covariance `Σ = M Mᵀ`, `M = R(q/|q|) · diag(exp(log_scale))`;
//!    camera covariance `Σc = R Σ Rᵀ`;
//! 3. Jacobian of the perspective map at `p`, with `x/z`, `y/z` clamped to
//!    `±1.3·tan(half fov)` (`lim_x = 1.3 · 0.5 · W / fx`, `lim_y = 1.3 · 0.5 · H / fy`,
//!    docs/design.md; gsplat's `persp_proj` uses `−(cx/fx + 0.3·tan)` and
//!    `(W − cx)/fx + 0.3·tan`, the same when the principal point is centred,
//!    as in every case tested here): `J = [[fx/z, 0, −fx·tx/z²], [0, fy/z, −fy·ty/z²]]`,
//!    `tx = z·clamp(x/z)`, `ty = z·clamp(y/z)`;
//! 4. `Σ2 = J Σc Jᵀ + 0.3·I` (low-pass dilation, no antialiasing
//!    compensation); culled when `det Σ2 ≤ 0`; conic = `Σ2⁻¹` packed `(A, B, C)`;
//! 5. pixel mean `(fx·x/z + cx, fy·y/z + cy)` (unclamped);
//! 6. opacity = sigmoid(logit), culled when `< 1/255`; colour from SH ([`super::sh`]);
//! 7. extent ([`ProjectedSplat::radius`]).

use glam::{DMat3, DVec2, DVec3};

use super::params::SplatParams64;
use super::sh::{eval_colour, ShColour};
use crate::scene::Camera;

/// Pixels with `alpha < ALPHA_MIN` are skipped.
pub const ALPHA_MIN: f64 = 1.0 / 255.0;
/// Alpha is clamped to at most this value (its gradient is zero there).
/// docs/design.md fixes 0.99, as the original 3DGS rasterizer; gsplat's CUDA
/// kernels use 0.999. The gsplat reference cases never reach either (their
/// largest raw alpha is 0.73), so they cannot tell the two apart.
pub const ALPHA_MAX: f64 = 0.99;
/// Blending stops before a splat that would take transmittance to `≤ T_MIN`.
pub const T_MIN: f64 = 1e-4;
/// Low-pass dilation added to the diagonal of the 2D covariance, px².
pub const DILATION: f64 = 0.3;
/// Cap on the extent, in standard deviations.
pub const MAX_EXTENT_SIGMAS: f64 = 3.33;
/// Factor on `tan(half fov)` at which the projection Jacobian clamps `x/z`, `y/z`.
pub const FOV_CLAMP: f64 = 1.3;

/// A [`Camera`] widened to f64.
#[derive(Clone, Debug)]
pub struct Camera64 {
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Focal lengths, pixels.
    pub fx: f64,
    /// Focal length y.
    pub fy: f64,
    /// Principal point, pixels.
    pub cx: f64,
    /// Principal point y.
    pub cy: f64,
    /// World-to-camera rotation.
    pub rotation: DMat3,
    /// World-to-camera translation.
    pub translation: DVec3,
    /// Camera centre in world space, `−Rᵀ t`.
    pub centre: DVec3,
    /// Near plane.
    pub near: f64,
}

impl From<&Camera> for Camera64 {
    fn from(c: &Camera) -> Self {
        let rotation = c.rotation.as_dmat3();
        let translation = c.translation.as_dvec3();
        Camera64 {
            width: c.width as usize,
            height: c.height as usize,
            fx: c.fx as f64,
            fy: c.fy as f64,
            cx: c.cx as f64,
            cy: c.cy as f64,
            rotation,
            translation,
            centre: -(rotation.transpose() * translation),
            near: c.near as f64,
        }
    }
}

impl Camera64 {
    /// Jacobian clamp limits `(lim_x, lim_y)` on `x/z`, `y/z`.
    pub fn fov_limits(&self) -> (f64, f64) {
        (
            FOV_CLAMP * 0.5 * self.width as f64 / self.fx,
            FOV_CLAMP * 0.5 * self.height as f64 / self.fy,
        )
    }
}

/// A splat as the blending stage sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectedSplat {
    /// Index in the parameter arrays.
    pub index: usize,
    /// Camera-space z (the sort key, front to back).
    pub depth: f64,
    /// Pixel-space mean.
    pub mean2d: [f64; 2],
    /// Dilated 2D covariance `(Σ2_xx, Σ2_xy, Σ2_yy)`, px².
    pub cov2d: [f64; 3],
    /// Inverse of `cov2d`, `(A, B, C)`: `σ = ½(A dx² + C dy²) + B dx dy`.
    pub conic: [f64; 3],
    /// sigmoid(logit).
    pub opacity: f64,
    /// Linear RGB, `≥ 0`.
    pub colour: [f64; 3],
    /// Extent in pixels: `r = min(3.33, sqrt(2·ln(255·opacity)))·σ_max`,
    /// `σ_max = sqrt(λ_max(Σ2))`, `λ_max = m + sqrt(max(m² − det Σ2, 0))`,
    /// `m = (Σ2_xx + Σ2_yy)/2`. Every pixel with `alpha ≥ 1/255` lies in the
    /// ellipse `dᵀΣ2⁻¹d ≤ 2·ln(255·opacity)`, hence in the square
    /// `|dx| ≤ r, |dy| ≤ r` (the 3.33 cap would bind only for opacity > 1.003,
    /// i.e. never);
    /// pixels outside it contribute nothing, so binning with any box that
    /// contains this square gives the same image.
    pub radius: f64,
}

impl ProjectedSplat {
    /// Inclusive pixel ranges `(x0..=x1, y0..=y1)` whose centres lie in the
    /// extent square, clipped to the image; `None` when empty.
    pub fn pixel_box(&self, width: usize, height: usize) -> Option<([usize; 2], [usize; 2])> {
        let range = |m: f64, n: usize| {
            let lo = (m - self.radius - 0.5).ceil().max(0.0);
            let hi = (m + self.radius - 0.5).floor().min(n as f64 - 1.0);
            (lo <= hi).then_some([lo as usize, hi as usize])
        };
        Some((
            range(self.mean2d[0], width)?,
            range(self.mean2d[1], height)?,
        ))
    }

    /// `σ = ½ dᵀ Σ2⁻¹ d` at pixel centre `(px, py)`, with `d = mean2d − pixel`.
    pub fn mahalanobis_half(&self, px: f64, py: f64) -> f64 {
        let dx = self.mean2d[0] - px;
        let dy = self.mean2d[1] - py;
        let [a, b, c] = self.conic;
        0.5 * (a * dx * dx + c * dy * dy) + b * dx * dy
    }
}

/// Intermediate values of [`project_splat`] reused by its backward pass.
#[derive(Clone, Debug)]
pub(crate) struct ProjectionCache {
    /// Camera-space mean.
    pub p: DVec3,
    /// Normalised quaternion and the raw one's norm.
    pub q_unit: [f64; 4],
    pub q_norm: f64,
    /// Rotation of the splat, world from local.
    pub rot: DMat3,
    /// Scales `exp(log_scale)`.
    pub scale: DVec3,
    /// `M = R S`.
    pub m: DMat3,
    /// Camera-space covariance.
    pub cov_cam: DMat3,
    /// Rows of the Jacobian, and whether x/z, y/z were clamped.
    pub j_rows: [DVec3; 2],
    pub clamped: [bool; 2],
    /// `x/z` and `y/z` after the clamp.
    pub uv_clamped: DVec2,
    pub colour: ShColour,
}

/// Rotation matrix of a unit quaternion (w, x, y, z).
pub(crate) fn quat_to_mat(q: [f64; 4]) -> DMat3 {
    let [w, x, y, z] = q;
    DMat3::from_cols_array_2d(&[
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ])
    .transpose()
}

/// Project splat `i`; `None` when culled (non-finite parameters, behind the
/// near plane, degenerate covariance, opacity below 1/255, or any derived
/// value non-finite).
pub fn project_splat(params: &SplatParams64, i: usize, cam: &Camera64) -> Option<ProjectedSplat> {
    project_splat_cached(params, i, cam).map(|(s, _)| s)
}

pub(crate) fn project_splat_cached(
    params: &SplatParams64,
    i: usize,
    cam: &Camera64,
) -> Option<(ProjectedSplat, ProjectionCache)> {
    if !params.is_finite(i) {
        return None;
    }
    let mean = DVec3::from_array(params.means[i]);
    let p = cam.rotation * mean + cam.translation;
    if p.z.is_nan() || p.z < cam.near {
        return None;
    }
    let q = params.quats[i];
    let q_norm = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    if q_norm.is_nan() || q_norm <= 0.0 {
        return None;
    }
    let q_unit = q.map(|v| v / q_norm);
    let rot = quat_to_mat(q_unit);
    let scale = DVec3::from_array(params.log_scales[i]).exp();
    let m = rot * DMat3::from_diagonal(scale);
    let cov_world = m * m.transpose();
    let cov_cam = cam.rotation * cov_world * cam.rotation.transpose();

    let (lim_x, lim_y) = cam.fov_limits();
    let (u, v) = (p.x / p.z, p.y / p.z);
    let uv_clamped = DVec2::new(u.clamp(-lim_x, lim_x), v.clamp(-lim_y, lim_y));
    let clamped = [u.abs() > lim_x, v.abs() > lim_y];
    let z = p.z;
    let j_rows = [
        DVec3::new(cam.fx / z, 0.0, -cam.fx * uv_clamped.x / z),
        DVec3::new(0.0, cam.fy / z, -cam.fy * uv_clamped.y / z),
    ];
    let cov2d = [
        j_rows[0].dot(cov_cam * j_rows[0]) + DILATION,
        j_rows[0].dot(cov_cam * j_rows[1]),
        j_rows[1].dot(cov_cam * j_rows[1]) + DILATION,
    ];
    let det = cov2d[0] * cov2d[2] - cov2d[1] * cov2d[1];
    if det.is_nan() || det <= 0.0 {
        return None;
    }
    let conic = [cov2d[2] / det, -cov2d[1] / det, cov2d[0] / det];
    let mean2d = [cam.fx * u + cam.cx, cam.fy * v + cam.cy];

    let opacity = 1.0 / (1.0 + (-params.opacity_logits[i]).exp());
    if opacity.is_nan() || opacity < ALPHA_MIN {
        return None;
    }
    let mid = 0.5 * (cov2d[0] + cov2d[2]);
    let lambda_max = mid + (mid * mid - det).max(0.0).sqrt();
    let sigmas = (2.0 * (opacity / ALPHA_MIN).ln())
        .sqrt()
        .min(MAX_EXTENT_SIGMAS);
    let radius = sigmas * lambda_max.sqrt();

    let colour = eval_colour(params.sh_of(i), mean, cam.centre);
    let splat = ProjectedSplat {
        index: i,
        depth: z,
        mean2d,
        cov2d,
        conic,
        opacity,
        colour: colour.colour,
        radius,
    };
    let finite = splat
        .mean2d
        .iter()
        .chain(&splat.conic)
        .chain(&splat.colour)
        .all(|v| v.is_finite())
        && splat.radius.is_finite();
    if !finite {
        return None;
    }
    let cache = ProjectionCache {
        p,
        q_unit,
        q_norm,
        rot,
        scale,
        m,
        cov_cam,
        j_rows,
        clamped,
        uv_clamped,
        colour,
    };
    Some((splat, cache))
}

/// Project every splat and sort the survivors front to back by camera z
/// (ties by index, a stable order).
pub fn project_all(params: &SplatParams64, cam: &Camera64) -> Vec<ProjectedSplat> {
    let mut splats: Vec<ProjectedSplat> = (0..params.len())
        .filter_map(|i| project_splat(params, i, cam))
        .collect();
    splats.sort_by(|a, b| a.depth.total_cmp(&b.depth).then(a.index.cmp(&b.index)));
    splats
}
