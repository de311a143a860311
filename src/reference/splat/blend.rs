//! Front-to-back alpha blending of depth-sorted splats (docs/design.md § Gaussian
//! splatting, gsplat `rasterize_to_pixels`): at pixel centre `x`,
//! `α_i = min(0.99, o_i·exp(−½ dᵀΣ2⁻¹d))` with `d = mean2d − x`; splats with
//! `α_i < 1/255` are skipped; before splat `i`, if `T·(1 − α_i) ≤ 1e-4` the
//! pixel stops (splat `i` excluded); `rgb = Σ c_i α_i T_i + T_final·bg`,
//! `alpha = 1 − T_final`.

use super::params::SplatParams64;
use super::project::{project_all, Camera64, ProjectedSplat, ALPHA_MAX, ALPHA_MIN, T_MIN};
use crate::scene::Camera;

/// A rendered image in f64, row-major (`y * width + x`), linear RGB.
#[derive(Clone, Debug, PartialEq)]
pub struct Image64 {
    /// Width, pixels.
    pub width: usize,
    /// Height, pixels.
    pub height: usize,
    /// Colour per pixel, background included.
    pub rgb: Vec<[f64; 3]>,
    /// `1 − final transmittance` per pixel.
    pub alpha: Vec<f64>,
}

/// One splat's contribution at one pixel, as the blend saw it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Contribution {
    /// Index into the depth-sorted splat list.
    pub slot: usize,
    /// Alpha after the clamp.
    pub alpha: f64,
    /// True when the 0.99 clamp was active (zero gradient to the Gaussian).
    pub clamped: bool,
    /// `exp(−σ)`.
    pub gauss: f64,
    /// `d = mean2d − pixel centre`.
    pub d: [f64; 2],
    /// Transmittance in front of this splat.
    pub transmittance: f64,
}

/// For every pixel, the slots (indices into `splats`, front to back) whose
/// extent square contains its centre: a speed-up only, see
/// [`ProjectedSplat::radius`].
pub(crate) fn bin_pixels(
    splats: &[ProjectedSplat],
    width: usize,
    height: usize,
) -> Vec<Vec<usize>> {
    let mut lists = vec![Vec::new(); width * height];
    for (slot, s) in splats.iter().enumerate() {
        if let Some(([x0, x1], [y0, y1])) = s.pixel_box(width, height) {
            for y in y0..=y1 {
                for x in x0..=x1 {
                    lists[y * width + x].push(slot);
                }
            }
        }
    }
    lists
}

/// Blend pixel `(x, y)`: fills `out` with the contributions in front-to-back
/// order and returns the final transmittance.
pub(crate) fn blend_pixel(
    splats: &[ProjectedSplat],
    slots: &[usize],
    x: usize,
    y: usize,
    out: &mut Vec<Contribution>,
) -> f64 {
    out.clear();
    let (px, py) = (x as f64 + 0.5, y as f64 + 0.5);
    let mut t = 1.0;
    for &slot in slots {
        let s = &splats[slot];
        let sigma = s.mahalanobis_half(px, py);
        if sigma < 0.0 {
            continue;
        }
        let gauss = (-sigma).exp();
        let raw = s.opacity * gauss;
        let alpha = raw.min(ALPHA_MAX);
        if alpha < ALPHA_MIN {
            continue;
        }
        let next_t = t * (1.0 - alpha);
        if next_t <= T_MIN {
            break;
        }
        out.push(Contribution {
            slot,
            alpha,
            clamped: raw > ALPHA_MAX,
            gauss,
            d: [s.mean2d[0] - px, s.mean2d[1] - py],
            transmittance: t,
        });
        t = next_t;
    }
    t
}

/// Render `params` seen by `camera` over `background` (linear RGB).
pub fn render(params: &SplatParams64, camera: &Camera, background: [f64; 3]) -> Image64 {
    render_with(params, &Camera64::from(camera), background)
}

/// [`render`] with an f64 camera: finite differences in the camera's
/// parameters below f32 resolution (the camera-gradient checks).
pub fn render_with(params: &SplatParams64, cam: &Camera64, background: [f64; 3]) -> Image64 {
    let cam = cam.clone();
    let splats = project_all(params, &cam);
    let lists = bin_pixels(&splats, cam.width, cam.height);
    let mut image = Image64 {
        width: cam.width,
        height: cam.height,
        rgb: Vec::with_capacity(lists.len()),
        alpha: Vec::with_capacity(lists.len()),
    };
    let mut contributions = Vec::new();
    for (pixel, slots) in lists.iter().enumerate() {
        let (x, y) = (pixel % cam.width, pixel / cam.width);
        let t_final = blend_pixel(&splats, slots, x, y, &mut contributions);
        let mut rgb = background.map(|b| b * t_final);
        for c in &contributions {
            let w = c.alpha * c.transmittance;
            for (ch, v) in rgb.iter_mut().enumerate() {
                *v += splats[c.slot].colour[ch] * w;
            }
        }
        image.rgb.push(rgb);
        image.alpha.push(1.0 - t_final);
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Mat3, Vec3};

    /// Random anisotropic splats of every opacity, from opaque (alpha clamp,
    /// transmittance stop) to barely above 1/255, seen by a 40×30 camera.
    fn random_scene() -> (SplatParams64, Camera) {
        let mut state = 12345u64;
        let mut r = |lo: f64, hi: f64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)
        };
        let mut params = SplatParams64 {
            sh_degree: 0,
            ..Default::default()
        };
        for _ in 0..300 {
            params
                .means
                .push([r(-2.0, 2.0), r(-1.5, 1.5), r(-1.0, 1.0)]);
            params
                .quats
                .push([r(-1.0, 1.0), r(-1.0, 1.0), r(-1.0, 1.0), r(-1.0, 1.0)]);
            params
                .log_scales
                .push([r(-3.5, -0.5), r(-3.5, -0.5), r(-3.5, -0.5)]);
            params.opacity_logits.push(r(-5.5, 6.0));
            params.sh.push([r(-1.0, 1.0), r(-1.0, 1.0), r(-1.0, 1.0)]);
        }
        let camera = Camera {
            width: 40,
            height: 30,
            fx: 35.0,
            fy: 35.0,
            cx: 20.0,
            cy: 15.0,
            rotation: Mat3::IDENTITY,
            translation: Vec3::new(0.0, 0.0, 5.0),
            near: 0.01,
        };
        (params, camera)
    }

    #[test]
    fn extent_square_contains_every_pixel_with_alpha_above_cutoff() {
        let (params, camera) = random_scene();
        let cam = Camera64::from(&camera);
        let splats = project_all(&params, &cam);
        assert!(splats.len() > 250);
        let mut near_edge = 0usize;
        for s in &splats {
            // Sample a fine grid well beyond the square.
            let reach = 1.5 * s.radius + 2.0;
            let steps = 120;
            for a in 0..=steps {
                for b in 0..=steps {
                    let dx = -reach + 2.0 * reach * a as f64 / steps as f64;
                    let dy = -reach + 2.0 * reach * b as f64 / steps as f64;
                    let alpha =
                        s.opacity * (-s.mahalanobis_half(s.mean2d[0] + dx, s.mean2d[1] + dy)).exp();
                    if alpha >= ALPHA_MIN {
                        assert!(
                            dx.abs() <= s.radius && dy.abs() <= s.radius,
                            "splat {}",
                            s.index
                        );
                        if dx.abs().max(dy.abs()) > 0.8 * s.radius {
                            near_edge += 1;
                        }
                    }
                }
            }
        }
        // The square is tight: visible samples reach close to its edge.
        assert!(near_edge > 0);
    }

    #[test]
    fn binning_by_extent_changes_nothing() {
        let (params, camera) = random_scene();
        let cam = Camera64::from(&camera);
        let splats = project_all(&params, &cam);
        let binned = bin_pixels(&splats, cam.width, cam.height);
        let every: Vec<usize> = (0..splats.len()).collect();
        let (mut with_bins, mut brute) = (Vec::new(), Vec::new());
        let mut skipped = 0;
        for (pixel, slots) in binned.iter().enumerate() {
            let (x, y) = (pixel % cam.width, pixel / cam.width);
            let t_bins = blend_pixel(&splats, slots, x, y, &mut with_bins);
            let t_brute = blend_pixel(&splats, &every, x, y, &mut brute);
            assert_eq!(t_bins, t_brute, "pixel ({x}, {y})");
            assert_eq!(with_bins.len(), brute.len(), "pixel ({x}, {y})");
            for (a, b) in with_bins.iter().zip(&brute) {
                assert_eq!((a.slot, a.alpha), (b.slot, b.alpha), "pixel ({x}, {y})");
            }
            skipped += splats.len() - slots.len();
        }
        assert!(
            skipped > 0,
            "binning must skip something to be worth testing"
        );
    }
}
