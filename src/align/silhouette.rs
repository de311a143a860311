//! A first guess of the pose from the object's silhouette, before any
//! gradient: the render's and the reference's foreground regions matched by
//! their image moments (area, centroid, principal axis).
//!
//! A pose error of 10° moves the whole object a fifth of the image: the
//! rendered and the recorded object barely overlap, and even a blurred
//! pyramid level's gradient can point the wrong way (a brighter or emptier
//! image is a cheaper way down than moving the camera). The moments need no
//! overlap. Three closed-form corrections, each a camera motion that leaves
//! the others' measure nearly alone:
//! - the **centroid**: a turn of the camera about its own centre taking
//!   the ray through the rendered centroid onto the ray through the
//!   recorded one (the whole image shifts);
//! - the **principal axis** (from the second moments, when the silhouette
//!   is elongated enough to have one): a roll about that ray;
//! - the **area**: the camera moved along that ray, the object's distance
//!   scaled by √(rendered area / recorded area) (apparent area goes as
//!   1/distance²).
//!
//! Iterated a few times (re-rendering each time), the fixed point is where
//! the moments agree, which is where the two images agree when the pose is
//! right, whatever the silhouettes' bias from an image border or a
//! threshold: both are measured the same way. The caller keeps the guess
//! only when it lowers the image loss ([`super::view_align`]).
//!
//! The foreground: pixels whose colour differs from the background by more
//! than [`FOREGROUND_THRESHOLD`] in some channel. The render's background is
//! the scene's; the recording's is the median of its border pixels, since
//! its exposure may differ. With a loss mask, the mask is the recording's
//! silhouette (it is drawn with a margin, so its area is not the object's:
//! the distance is then left alone) and the render's is its alpha ≥ ½.

use glam::{DMat3, DQuat, DVec2, DVec3, Mat3, Vec3};

use crate::io::Frame;
use crate::scene::masks::Mask;
use crate::scene::Camera;

/// A pixel is foreground when a channel differs from the background by more
/// than this (colours in [0, 1]).
pub const FOREGROUND_THRESHOLD: f32 = 0.1;

/// Fewer foreground pixels than this: no silhouette (nothing to match).
pub const MIN_PIXELS: usize = 16;

/// Below this ratio of principal second moments the silhouette has no
/// reliable axis and the roll is left alone.
pub const MIN_ELONGATION: f64 = 1.5;

/// The area scale applied per step is held within [1/this, this].
const MAX_SCALE_STEP: f64 = 2.0;

/// The moments of a foreground region, pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Silhouette {
    /// Foreground pixels.
    pub area: f64,
    /// Mean of the pixel centres (x right, y down, pixel centres at +½).
    pub centroid: DVec2,
    /// Central second moments (xx, xy, yy), pixels².
    pub second: [f64; 3],
}

impl Silhouette {
    /// The moments of `foreground` (`width × height`, row-major), or `None`
    /// with fewer than [`MIN_PIXELS`] foreground pixels.
    pub fn of(foreground: &[bool], width: u32) -> Option<Silhouette> {
        let w = width.max(1) as usize;
        let (mut n, mut sx, mut sy) = (0usize, 0.0f64, 0.0f64);
        for (i, _) in foreground.iter().enumerate().filter(|(_, &f)| f) {
            n += 1;
            sx += (i % w) as f64 + 0.5;
            sy += (i / w) as f64 + 0.5;
        }
        if n < MIN_PIXELS {
            return None;
        }
        let centroid = DVec2::new(sx / n as f64, sy / n as f64);
        let mut second = [0.0f64; 3];
        for (i, _) in foreground.iter().enumerate().filter(|(_, &f)| f) {
            let d = DVec2::new((i % w) as f64 + 0.5, (i / w) as f64 + 0.5) - centroid;
            second[0] += d.x * d.x;
            second[1] += d.x * d.y;
            second[2] += d.y * d.y;
        }
        let second = second.map(|s| s / n as f64);
        Some(Silhouette {
            area: n as f64,
            centroid,
            second,
        })
    }

    /// The angle of the principal axis from +x towards +y, radians in
    /// (−π/2, π/2], when the silhouette is elongated by at least
    /// [`MIN_ELONGATION`].
    pub fn axis_angle(&self) -> Option<f64> {
        let [xx, xy, yy] = self.second;
        let mean = 0.5 * (xx + yy);
        let half_gap = (0.25 * (xx - yy).powi(2) + xy * xy).sqrt();
        let (major, minor) = (mean + half_gap, mean - half_gap);
        if minor <= 0.0 || major < MIN_ELONGATION * minor {
            return None;
        }
        Some(0.5 * (2.0 * xy).atan2(xx - yy))
    }
}

/// The median per channel of `frame`'s border pixels: the recording's
/// background where the object does not fill the frame's edge.
pub fn border_colour(frame: &Frame) -> [f32; 3] {
    let (w, h) = (frame.width as usize, frame.height as usize);
    let mut border: Vec<[f32; 4]> = Vec::with_capacity(2 * (w + h));
    for x in 0..w {
        border.push(frame.pixels[x]);
        if h > 1 {
            border.push(frame.pixels[(h - 1) * w + x]);
        }
    }
    for y in 1..h.saturating_sub(1) {
        border.push(frame.pixels[y * w]);
        if w > 1 {
            border.push(frame.pixels[y * w + w - 1]);
        }
    }
    std::array::from_fn(|c| {
        let mut v: Vec<f32> = border.iter().map(|p| p[c]).collect();
        v.sort_by(f32::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    })
}

/// Pixels of `frame` that differ from `background` by more than
/// [`FOREGROUND_THRESHOLD`] in some channel.
pub fn differs_from(frame: &Frame, background: [f32; 3]) -> Vec<bool> {
    frame
        .pixels
        .iter()
        .map(|p| (0..3).any(|c| (p[c] - background[c]).abs() > FOREGROUND_THRESHOLD))
        .collect()
}

/// The recording's silhouette (module doc): its mask when it has one, else
/// the pixels that differ from its border's colour.
pub fn recorded(frame: &Frame, mask: Option<&Mask>) -> Option<Silhouette> {
    match mask {
        Some(mask) => Silhouette::of(&mask.counts, mask.width),
        None => Silhouette::of(&differs_from(frame, border_colour(frame)), frame.width),
    }
}

/// The render's silhouette, measured as [`recorded`] measures the
/// recording: alpha ≥ ½ when the recording has a mask, else the pixels
/// that differ from the scene's `background`.
pub fn rendered(render: &Frame, background: [f32; 3], masked: bool) -> Option<Silhouette> {
    if masked {
        let covered: Vec<bool> = render.pixels.iter().map(|p| p[3] >= 0.5).collect();
        Silhouette::of(&covered, render.width)
    } else {
        Silhouette::of(&differs_from(render, background), render.width)
    }
}

/// The ray through pixel `p` in `camera`'s frame, unit length.
fn ray(camera: &Camera, p: DVec2) -> DVec3 {
    DVec3::new(
        (p.x - f64::from(camera.cx)) / f64::from(camera.fx),
        (p.y - f64::from(camera.cy)) / f64::from(camera.fy),
        1.0,
    )
    .normalize()
}

/// Wraps an axis-angle difference into (−π/2, π/2] (an axis has no sign).
fn wrap_axis(a: f64) -> f64 {
    let half_pi = std::f64::consts::FRAC_PI_2;
    let mut a = a % std::f64::consts::PI;
    if a > half_pi {
        a -= std::f64::consts::PI;
    } else if a <= -half_pi {
        a += std::f64::consts::PI;
    }
    a
}

/// How far one matching step moved the camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatchStep {
    /// The turn taking the rendered centroid's ray onto the recorded one's, radians.
    pub turn: f64,
    /// The roll about that ray, radians.
    pub roll: f64,
    /// The factor the object's distance was scaled by.
    pub scale: f64,
}

/// One matching step (module doc): `camera` moved so that `rendered`'s
/// moments would land on `recorded`'s. `object` is the object's centroid
/// in world units (the depth the distance is scaled about); `scale`: also
/// match the area.
pub fn matched_camera(
    camera: &Camera,
    rendered: &Silhouette,
    recorded: &Silhouette,
    object: DVec3,
    scale: bool,
) -> (Camera, MatchStep) {
    let from = ray(camera, rendered.centroid);
    let to = ray(camera, recorded.centroid);
    let turn = DQuat::from_rotation_arc(from, to);
    let roll_angle = match (rendered.axis_angle(), recorded.axis_angle()) {
        (Some(a), Some(b)) => wrap_axis(b - a),
        _ => 0.0,
    };
    let q = DQuat::from_axis_angle(to, roll_angle) * turn;
    let rotation = DMat3::from_quat(q) * camera.rotation.as_dmat3();
    let mut centre = camera.position().as_dvec3();
    let mut factor = 1.0;
    if scale {
        factor = (rendered.area / recorded.area)
            .sqrt()
            .clamp(1.0 / MAX_SCALE_STEP, MAX_SCALE_STEP);
        // The point on the recorded centroid's ray at the object's depth
        // stays where it projects; the camera slides along that ray.
        let depth = (rotation * (object - centre)).z;
        if depth > 0.0 {
            let anchor = centre + rotation.transpose() * (to * (depth / to.z));
            centre = anchor + factor * (centre - anchor);
        } else {
            factor = 1.0;
        }
    }
    let translation = -(rotation * centre);
    let moved = Camera {
        rotation: Mat3::from_cols(
            rotation.x_axis.as_vec3(),
            rotation.y_axis.as_vec3(),
            rotation.z_axis.as_vec3(),
        ),
        translation: Vec3::new(
            translation.x as f32,
            translation.y as f32,
            translation.z as f32,
        ),
        ..camera.clone()
    };
    (
        moved,
        MatchStep {
            turn: turn.angle_between(DQuat::IDENTITY),
            roll: roll_angle,
            scale: factor,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense, elongated point cloud (an ellipsoid's surface and inside).
    fn cloud() -> Vec<DVec3> {
        let mut pts = Vec::new();
        let n = 40;
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let p = DVec3::new(
                        (i as f64 / (n - 1) as f64) * 2.0 - 1.0,
                        (j as f64 / (n - 1) as f64) * 2.0 - 1.0,
                        (k as f64 / (n - 1) as f64) * 2.0 - 1.0,
                    );
                    if p.length_squared() <= 1.0 {
                        pts.push(DVec3::new(0.15 * p.x, 0.4 * p.y, 0.2 * p.z) + DVec3::Z * 0.1);
                    }
                }
            }
        }
        pts
    }

    fn camera_at(position: DVec3, target: DVec3) -> Camera {
        let forward = (target - position).normalize();
        let right = forward.cross(DVec3::Z).normalize();
        let down = forward.cross(right);
        let rows = DMat3::from_cols(right, down, forward).transpose();
        let t = -(rows * position);
        Camera {
            width: 96,
            height: 96,
            fx: 110.0,
            fy: 110.0,
            cx: 48.0,
            cy: 48.0,
            rotation: Mat3::from_cols(
                rows.x_axis.as_vec3(),
                rows.y_axis.as_vec3(),
                rows.z_axis.as_vec3(),
            ),
            translation: Vec3::new(t.x as f32, t.y as f32, t.z as f32),
            near: 0.01,
        }
    }

    /// The cloud's silhouette in `camera` (each point marks its pixel).
    fn silhouette(camera: &Camera, pts: &[DVec3]) -> Option<Silhouette> {
        let (w, h) = (camera.width as usize, camera.height as usize);
        let mut fg = vec![false; w * h];
        for p in pts {
            let c = camera.rotation.as_dmat3() * *p + camera.translation.as_dvec3();
            if c.z <= 0.0 {
                continue;
            }
            let u = f64::from(camera.fx) * c.x / c.z + f64::from(camera.cx);
            let v = f64::from(camera.fy) * c.y / c.z + f64::from(camera.cy);
            if u >= 0.0 && v >= 0.0 && (u as usize) < w && (v as usize) < h {
                fg[v as usize * w + u as usize] = true;
            }
        }
        Silhouette::of(&fg, camera.width)
    }

    fn rms(a: &Camera, b: &Camera, pts: &[DVec3]) -> f64 {
        let proj = |c: &Camera, p: DVec3| {
            let q = c.rotation.as_dmat3() * p + c.translation.as_dvec3();
            DVec2::new(
                f64::from(c.fx) * q.x / q.z + f64::from(c.cx),
                f64::from(c.fy) * q.y / q.z + f64::from(c.cy),
            )
        };
        let s: f64 = pts
            .iter()
            .map(|&p| (proj(a, p) - proj(b, p)).length_squared())
            .sum();
        (s / pts.len() as f64).sqrt()
    }

    #[test]
    fn moments_of_a_rectangle() {
        // A 20 × 6 bar at x 10..30, y 40..46 in a 64-wide image.
        let mut fg = vec![false; 64 * 64];
        for y in 40..46 {
            for x in 10..30 {
                fg[y * 64 + x] = true;
            }
        }
        let s = Silhouette::of(&fg, 64).unwrap();
        assert_eq!(s.area, 120.0);
        assert!((s.centroid - DVec2::new(20.0, 43.0)).length() < 1e-12);
        // Variance of n uniform pixels: (n² − 1) / 12.
        assert!((s.second[0] - 399.0 / 12.0).abs() < 1e-9);
        assert!((s.second[2] - 35.0 / 12.0).abs() < 1e-9);
        assert!(s.axis_angle().unwrap().abs() < 1e-12);
        assert!(Silhouette::of(&[true; 15], 15).is_none());
    }

    #[test]
    fn a_round_silhouette_has_no_axis() {
        let s = Silhouette {
            area: 100.0,
            centroid: DVec2::ZERO,
            second: [10.0, 0.5, 10.0],
        };
        assert!(s.axis_angle().is_none());
    }

    #[test]
    fn axis_differences_wrap_to_a_half_turn() {
        use std::f64::consts::PI;
        assert!((wrap_axis(0.9 * PI) + 0.1 * PI).abs() < 1e-12);
        assert!((wrap_axis(-0.9 * PI) - 0.1 * PI).abs() < 1e-12);
        assert!((wrap_axis(0.2) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn the_border_colour_is_the_median_of_the_edge() {
        let mut frame = Frame {
            width: 8,
            height: 8,
            pixels: vec![[0.9, 0.8, 0.7, 1.0]; 64],
        };
        // The object reaches the bottom edge over 3 of its 8 pixels.
        for x in 2..5 {
            frame.pixels[7 * 8 + x] = [0.1, 0.1, 0.1, 1.0];
        }
        assert_eq!(border_colour(&frame), [0.9, 0.8, 0.7]);
    }

    /// From 10° about an oblique axis and 10% of the distance off, a few
    /// matching steps bring the cloud's reprojection from tens of pixels to
    /// a few.
    #[test]
    fn matching_steps_undo_a_ten_degree_error() {
        let pts = cloud();
        let object = pts.iter().fold(DVec3::ZERO, |s, p| s + *p) / pts.len() as f64;
        let truth = camera_at(DVec3::new(1.6, -0.4, 0.5), object);
        let target = silhouette(&truth, &pts).unwrap();
        // The start: the true camera turned 10° about an oblique axis in
        // its own frame and moved back 10% of the distance.
        let axis = DVec3::new(0.3, -0.5, 0.8).normalize();
        let r = DMat3::from_axis_angle(axis, 10f64.to_radians()) * truth.rotation.as_dmat3();
        let centre = truth.position().as_dvec3();
        let centre = centre + 0.1 * (centre - object);
        let t = -(r * centre);
        let mut camera = Camera {
            rotation: Mat3::from_cols(r.x_axis.as_vec3(), r.y_axis.as_vec3(), r.z_axis.as_vec3()),
            translation: Vec3::new(t.x as f32, t.y as f32, t.z as f32),
            ..truth.clone()
        };
        let before = rms(&camera, &truth, &pts);
        assert!(before > 10.0, "the start is {before} px off");
        for _ in 0..4 {
            let now = silhouette(&camera, &pts).unwrap();
            camera = matched_camera(&camera, &now, &target, object, true).0;
        }
        let after = rms(&camera, &truth, &pts);
        assert!(
            after < 0.2 * before && after < 3.0,
            "{before} px → {after} px"
        );
    }
}
