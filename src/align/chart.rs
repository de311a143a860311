//! The coordinates `physfit align` moves a view in: a chart around a start
//! camera, scaled so that a unit step of any coordinate moves the image by
//! about one pixel (or changes a colour by 1%), which keeps the quasi-Newton
//! solver's first steps well scaled across the groups.
//!
//! With the start's world-to-camera `R₀, t₀`, fx₀, fy₀ and object distance `d`:
//! - rotation `ω` (camera-frame axis-angle, radians) about the object's
//!   centroid `q` (in the start's camera frame): `R = exp([ω]×) R₀`,
//!   `t = exp([ω]×)(t₀ − q) + q + δ`. Turning about the object rather than
//!   about the camera's own centre keeps the object where it is in the
//!   image, so the turn (seen as parallax) and the sideways shift (seen as
//!   the whole object moving) are nearly independent coordinates; about the
//!   camera's centre they are almost the same motion for a distant object
//!   and the loss cannot tell them apart along a long valley;
//! - translation `δ` (camera frame, world units): the whole object shifts
//!   (x, y) or grows (z);
//! - focal `φ`: `fx = fx₀ e^φ`, `fy = fy₀ e^φ` (the aspect ratio fixed);
//! - colour `a, b` per channel: `c' = clamp(a·c + b, 0, 1)`.
//!
//! Scaled coordinates: `ω = x · d / (f · ρ)` (ρ the object's RMS radius
//! about its centroid: its outline moves about a pixel), `δ = x · d / f`,
//! `φ = x / r` (r the half diagonal in pixels), `a = a₀ + x_a / 100`,
//! `b = b₀ + x_b / 100 − (x_a / 100)·m`: the gain turns the line about a
//! pivot colour `m` per channel ([`Chart::with_color_pivot`]; 0, the plain
//! offset, unless set) and `x_b` moves the corrected value at `m`. With
//! `m` the mean of the render's colours the two are uncorrelated in a
//! least-squares sense; about 0 a gain and an offset trade along a long
//! valley (correlation −0.96 on the demo), which costs L-BFGS most of its
//! evaluations at full resolution.
//!
//! The gradient in these coordinates comes from the rasterizer's
//! [`CameraGradient`] (dL/dR, dL/dt, dL/dfx, dL/dfy): for the rotation,
//! the left-perturbation gradient `g_φ = vee(M − Mᵀ)` with
//! `M = G_R Rᵀ + G_t (t − δ − q)ᵀ`, then `dL/dω = J_l(ω)ᵀ g_φ` with the left
//! Jacobian of SO(3), `J_l = I + (1 − cos θ)/θ² [ω]× + (θ − sin θ)/θ³ [ω]×²`
//! (Barfoot, *State Estimation for Robotics*, 2017, eq. 7.77a).

use glam::{DMat3, DVec3};

use crate::scene::{Camera, ColorCorrection};
use crate::splat::CameraGradient;

/// What an alignment fits (`--what`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlignWhat {
    /// Rotation and translation (6 parameters).
    pub pose: bool,
    /// One focal length, aspect ratio fixed.
    pub focal: bool,
    /// Gain and offset per channel (6 parameters).
    pub color: bool,
}

impl AlignWhat {
    /// Parses `pose,focal,color` (any non-empty subset, any order).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut what = Self {
            pose: false,
            focal: false,
            color: false,
        };
        for part in s.split(',').map(str::trim) {
            match part {
                "pose" => what.pose = true,
                "focal" => what.focal = true,
                "color" | "colour" => what.color = true,
                other => {
                    return Err(format!(
                        "unknown part '{other}': choose from pose, focal, color (comma-separated)"
                    ))
                }
            }
        }
        Ok(what)
    }

    /// The names, comma-separated, as `--what` spells them.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        for (on, name) in [
            (self.pose, "pose"),
            (self.focal, "focal"),
            (self.color, "color"),
        ] {
            if on {
                parts.push(name);
            }
        }
        parts.join(",")
    }

    /// Coordinates of the chart, in the order of [`Chart::names`].
    pub fn dimension(&self) -> usize {
        6 * usize::from(self.pose) + usize::from(self.focal) + 6 * usize::from(self.color)
    }
}

/// A view's camera and colour correction: what alignment changes.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewState {
    /// The camera.
    pub camera: Camera,
    /// The colour correction.
    pub color: ColorCorrection,
}

/// What the chart's turns pivot about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pivot {
    /// The object's centroid: turns show as parallax, shifts as the object
    /// moving (fine levels, where both are visible and nearly independent).
    Object,
    /// The camera's own centre: turns move the whole image (a shift and a
    /// roll, no parallax), which is what a coarse level can see; the
    /// sideways shifts, nearly the same motion, are held within a pixel,
    /// and the forward shift (a change of scale) stays free.
    Camera,
}

/// The chart around one start (module doc).
#[derive(Clone, Debug)]
pub struct Chart {
    start: ViewState,
    what: AlignWhat,
    /// Pixels per radian (and per distance-relative unit): the start's mean focal.
    focal: f64,
    /// Object distance from the start camera, world units.
    distance: f64,
    /// The object's RMS radius about its centroid, world units.
    radius: f64,
    /// The pivot of turns in the start camera's frame.
    pivot: DVec3,
    /// Which pivot.
    pivot_kind: Pivot,
    /// Half the image diagonal, pixels.
    half_diagonal: f64,
    /// Per channel, the colour the gain turns the correction about.
    color_pivot: [f64; 3],
}

/// One percent, the unit of the scaled colour coordinates.
const COLOR_UNIT: f64 = 0.01;

fn skew(w: DVec3) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(0.0, w.z, -w.y),
        DVec3::new(-w.z, 0.0, w.x),
        DVec3::new(w.y, -w.x, 0.0),
    )
}

/// exp(\[ω\]×) (Rodrigues).
pub fn rotation_exp(w: DVec3) -> DMat3 {
    let theta = w.length();
    if theta < 1e-12 {
        return DMat3::IDENTITY + skew(w);
    }
    DMat3::from_axis_angle(w / theta, theta)
}

/// The left Jacobian of SO(3) at ω (module doc).
fn left_jacobian(w: DVec3) -> DMat3 {
    let theta = w.length();
    let k = skew(w);
    if theta < 1e-6 {
        return DMat3::IDENTITY + 0.5 * k + (1.0 / 6.0) * k * k;
    }
    let t2 = theta * theta;
    DMat3::IDENTITY
        + ((1.0 - theta.cos()) / t2) * k
        + ((theta - theta.sin()) / (t2 * theta)) * k * k
}

/// The camera-frame rotation taking `from`'s orientation to `to`'s, as an
/// angle in degrees.
pub fn rotation_angle_degrees(from: &Camera, to: &Camera) -> f64 {
    let r = to.rotation.as_dmat3() * from.rotation.as_dmat3().transpose();
    let cos = ((r.x_axis.x + r.y_axis.y + r.z_axis.z - 1.0) / 2.0).clamp(-1.0, 1.0);
    cos.acos().to_degrees()
}

impl Chart {
    /// The chart around `start` for `what`, turning about the object
    /// (`centroid`, world units, with RMS radius `radius` > 0).
    pub fn new(start: ViewState, what: AlignWhat, centroid: DVec3, radius: f64) -> Self {
        Self::about(start, what, centroid, radius, Pivot::Object)
    }

    /// [`Chart::new`] with turns about `pivot`.
    pub fn about(
        start: ViewState,
        what: AlignWhat,
        centroid: DVec3,
        radius: f64,
        pivot_kind: Pivot,
    ) -> Self {
        let c = &start.camera;
        let focal = 0.5 * (f64::from(c.fx) + f64::from(c.fy));
        let half_diagonal = 0.5 * f64::from(c.width).hypot(f64::from(c.height));
        let distance = (centroid - c.position().as_dvec3()).length().max(1e-9);
        let (pivot, radius) = match pivot_kind {
            Pivot::Object => (
                c.rotation.as_dmat3() * centroid + c.translation.as_dvec3(),
                radius.max(1e-9 * distance),
            ),
            // About the camera centre a turn of 1/f moves the image by a
            // pixel: the lever is the distance itself.
            Pivot::Camera => (DVec3::ZERO, distance),
        };
        Self {
            start,
            what,
            focal,
            distance,
            radius,
            pivot,
            pivot_kind,
            half_diagonal,
            color_pivot: [0.0; 3],
        }
    }

    /// The same chart with the gain turning the correction about `pivot`
    /// (module doc): the mean of the render's colours decorrelates gain
    /// and offset.
    pub fn with_color_pivot(mut self, pivot: [f64; 3]) -> Self {
        self.color_pivot = pivot;
        self
    }

    /// The object's distance from the start camera, world units.
    pub fn distance(&self) -> f64 {
        self.distance
    }

    /// The start.
    pub fn start(&self) -> &ViewState {
        &self.start
    }

    /// What this chart moves.
    pub fn what(&self) -> AlignWhat {
        self.what
    }

    /// Names of the coordinates, in order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.what.pose {
            names.extend([
                "rotation x",
                "rotation y",
                "rotation z",
                "translation x",
                "translation y",
                "translation z",
            ]);
        }
        if self.what.focal {
            names.push("focal");
        }
        if self.what.color {
            names.extend([
                "gain r", "gain g", "gain b", "offset r", "offset g", "offset b",
            ]);
        }
        names
    }

    /// Bounds per coordinate for one run from this chart's start: the pose
    /// moves at most half the image's shorter side (in this chart's pixels)
    /// in each coordinate, so that a long line-search step cannot take the
    /// object out of view (an empty image can score better than a
    /// misaligned one); the focal length at most ×/÷ 2; gains stay in
    /// [1/4, 4] and the corrected value at the pivot colour `m` in
    /// [−1/2, m + 1/2] (the offset in [−1/2, 1/2] with the pivot at 0).
    pub fn bounds(&self) -> Vec<(f64, f64)> {
        let c = &self.start.camera;
        let reach = 0.5 * f64::from(c.width.min(c.height));
        let mut b = Vec::with_capacity(self.what.dimension());
        if self.what.pose {
            b.extend(std::iter::repeat_n((-reach, reach), 3));
            let sideways = match self.pivot_kind {
                Pivot::Object => reach,
                Pivot::Camera => 1.0,
            };
            b.extend([
                (-sideways, sideways),
                (-sideways, sideways),
                (-reach, reach),
            ]);
        }
        if self.what.focal {
            let r = std::f64::consts::LN_2 * self.half_diagonal;
            b.push((-r, r));
        }
        if self.what.color {
            let base = self.start.color;
            for g in base.gain {
                let g = f64::from(g);
                b.push(((0.25 - g) / COLOR_UNIT, (4.0 - g) / COLOR_UNIT));
            }
            // The corrected value at the pivot within [−½, 1 + ½] (with
            // the pivot at 0: the offset within [−½, ½]).
            for (c, o) in base.offset.iter().enumerate() {
                let m = self.color_pivot[c];
                let at_pivot = f64::from(base.gain[c]) * m + f64::from(*o);
                b.push((
                    (-0.5 - at_pivot) / COLOR_UNIT,
                    (0.5 + m - at_pivot) / COLOR_UNIT,
                ));
            }
        }
        b
    }

    /// The origin (the start).
    pub fn origin(&self) -> Vec<f64> {
        vec![0.0; self.what.dimension()]
    }

    fn split(&self, x: &[f64]) -> (DVec3, DVec3, f64, [f64; 3], [f64; 3]) {
        let mut k = 0;
        let mut take = |n: usize| {
            let s = &x[k..k + n];
            k += n;
            s.to_vec()
        };
        let (mut w, mut d, mut phi) = (DVec3::ZERO, DVec3::ZERO, 0.0);
        let (mut gain, mut offset) = ([0.0; 3], [0.0; 3]);
        if self.what.pose {
            let p = take(6);
            w = DVec3::new(p[0], p[1], p[2]) * (self.distance / (self.focal * self.radius));
            d = DVec3::new(p[3], p[4], p[5]) * (self.distance / self.focal);
        }
        if self.what.focal {
            phi = take(1)[0] / self.half_diagonal;
        }
        if self.what.color {
            let c = take(6);
            gain = [c[0], c[1], c[2]].map(|v| v * COLOR_UNIT);
            offset = std::array::from_fn(|i| (c[3 + i] - c[i] * self.color_pivot[i]) * COLOR_UNIT);
        }
        (w, d, phi, gain, offset)
    }

    /// The camera and colour correction at `x`.
    pub fn state(&self, x: &[f64]) -> ViewState {
        let (w, d, phi, gain, offset) = self.split(x);
        let c = &self.start.camera;
        let turn = rotation_exp(w);
        let rotation = turn * c.rotation.as_dmat3();
        let translation = turn * (c.translation.as_dvec3() - self.pivot) + self.pivot + d;
        let scale = phi.exp();
        let base = self.start.color;
        ViewState {
            camera: Camera {
                rotation: rotation.as_mat3(),
                translation: translation.as_vec3(),
                fx: (f64::from(c.fx) * scale) as f32,
                fy: (f64::from(c.fy) * scale) as f32,
                ..c.clone()
            },
            color: ColorCorrection {
                gain: std::array::from_fn(|i| (f64::from(base.gain[i]) + gain[i]) as f32),
                offset: std::array::from_fn(|i| (f64::from(base.offset[i]) + offset[i]) as f32),
            },
        }
    }

    /// The gradient at `x` in the chart's coordinates, from the
    /// rasterizer's camera gradient at `state(x)` and dL/d(gain, offset).
    pub fn gradient(
        &self,
        x: &[f64],
        camera: &CameraGradient,
        gain: [f64; 3],
        offset: [f64; 3],
    ) -> Vec<f64> {
        let (w, d, _, _, _) = self.split(x);
        let state = self.state(x);
        let mut g = Vec::with_capacity(self.what.dimension());
        if self.what.pose {
            let r = state.camera.rotation.as_dmat3();
            let t = state.camera.translation.as_dvec3();
            let gr = DMat3::from_cols_array_2d(&camera.rotation).transpose();
            let gt = DVec3::from_array(camera.translation);
            let lever = t - d - self.pivot;
            // M = G_R Rᵀ + G_t (t − δ − q)ᵀ.
            let m = gr * r.transpose() + DMat3::from_cols(gt * lever.x, gt * lever.y, gt * lever.z);
            let e = |i: usize, j: usize| m.col(j)[i];
            let g_phi = DVec3::new(e(2, 1) - e(1, 2), e(0, 2) - e(2, 0), e(1, 0) - e(0, 1));
            let g_w =
                left_jacobian(w).transpose() * g_phi * (self.distance / (self.focal * self.radius));
            g.extend(g_w.to_array());
            g.extend((gt * (self.distance / self.focal)).to_array());
        }
        if self.what.focal {
            let c = &state.camera;
            let dphi = camera.focal[0] * f64::from(c.fx) + camera.focal[1] * f64::from(c.fy);
            g.push(dphi / self.half_diagonal);
        }
        if self.what.color {
            g.extend((0..3).map(|i| (gain[i] - self.color_pivot[i] * offset[i]) * COLOR_UNIT));
            g.extend(offset.map(|v| v * COLOR_UNIT));
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Mat3, Vec3};

    fn camera() -> Camera {
        let rotation = Mat3::from_rotation_y(0.3) * Mat3::from_rotation_x(-0.2);
        Camera {
            width: 64,
            height: 48,
            fx: 50.0,
            fy: 52.0,
            cx: 32.0,
            cy: 24.0,
            rotation,
            translation: -(rotation * Vec3::new(0.5, -1.0, -4.0)),
            near: 0.01,
        }
    }

    fn everything() -> AlignWhat {
        AlignWhat {
            pose: true,
            focal: true,
            color: true,
        }
    }

    #[test]
    fn the_origin_is_the_start() {
        let start = ViewState {
            camera: camera(),
            color: ColorCorrection::IDENTITY,
        };
        let chart = Chart::new(start.clone(), everything(), DVec3::new(0.0, 0.0, 0.0), 0.5);
        assert_eq!(chart.names().len(), 13);
        assert_eq!(chart.state(&chart.origin()), start);
    }

    #[test]
    fn a_turn_keeps_the_object_in_place_and_a_shift_moves_the_camera() {
        let start = ViewState {
            camera: camera(),
            color: ColorCorrection::IDENTITY,
        };
        let centroid = DVec3::new(0.2, -0.1, 0.3);
        let chart = Chart::new(start.clone(), everything(), centroid, 0.5);
        let d = chart.distance();
        let project = |c: &Camera| {
            let p = c.rotation.as_dmat3() * centroid + c.translation.as_dvec3();
            (p.x / p.z, p.y / p.z, p.length())
        };
        let mut x = chart.origin();
        x[1] = 3.0; // 3 px at the object's outline, about y
        let turned = chart.state(&x).camera;
        let (a, b) = (project(&start.camera), project(&turned));
        assert!(
            (a.0 - b.0).abs() < 1e-5 && (a.1 - b.1).abs() < 1e-5 && (a.2 - b.2).abs() < 1e-4,
            "{a:?} vs {b:?}"
        );
        let expected = (3.0 * d / (51.0 * 0.5)).to_degrees();
        assert!((rotation_angle_degrees(&start.camera, &turned) - expected).abs() < 1e-3);
        x[1] = 0.0;
        x[3] = 51.0; // δx = d
        let moved = chart.state(&x).camera;
        assert!(((moved.position() - start.camera.position()).length() as f64 - d).abs() < 1e-4);
    }

    /// The chart's gradient of a function of (R, t, f) agrees with its
    /// finite differences away from the origin (the SO(3) left Jacobian).
    #[test]
    fn the_chart_gradient_matches_differences() {
        let start = ViewState {
            camera: camera(),
            color: ColorCorrection::IDENTITY,
        };
        // A colour pivot: the gain's coordinate moves the offset too.
        let chart = Chart::new(start, everything(), DVec3::new(0.1, 0.2, -0.3), 0.7)
            .with_color_pivot([0.3, 0.6, 0.8]);
        // f(R, t, fx, fy) = Σ A∘R + b·t + c·fx + e·fy, gradient known.
        let a = DMat3::from_cols_array(&[0.3, -0.2, 0.5, 0.1, 0.7, -0.4, 0.2, 0.9, -0.6]);
        let b = DVec3::new(0.4, -0.3, 0.8);
        let f = |s: &ViewState| {
            let r = s.camera.rotation.as_dmat3();
            let mut v = 0.0;
            for j in 0..3 {
                v += a.col(j).dot(r.col(j));
            }
            v + b.dot(s.camera.translation.as_dvec3())
                + 0.01 * f64::from(s.camera.fx)
                + 0.02 * f64::from(s.camera.fy)
                + 0.5 * f64::from(s.color.gain[1])
                - 0.25 * f64::from(s.color.offset[2])
        };
        let mut grad = CameraGradient::default();
        for i in 0..3 {
            for j in 0..3 {
                grad.rotation[i][j] = a.col(j)[i];
            }
        }
        grad.translation = b.to_array();
        grad.focal = [0.01, 0.02];
        let x: Vec<f64> = vec![
            20.0, -15.0, 10.0, 5.0, -8.0, 12.0, 10.0, 3.0, -2.0, 1.0, 2.0, 0.5, -1.0,
        ];
        let g = chart.gradient(&x, &grad, [0.0, 0.5, 0.0], [0.0, 0.0, -0.25]);
        for k in 0..x.len() {
            let h = 1e-3;
            let mut xp = x.clone();
            xp[k] += h;
            let mut xm = x.clone();
            xm[k] -= h;
            let fd = (f(&chart.state(&xp)) - f(&chart.state(&xm))) / (2.0 * h);
            assert!(
                (fd - g[k]).abs() < 2e-4 * (1.0 + fd.abs()),
                "{}: chart gradient {} vs FD {fd}",
                chart.names()[k],
                g[k]
            );
        }
    }
}
