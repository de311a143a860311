//! Real spherical harmonics up to degree 3 and the view-dependent colour of a
//! splat (docs/design.md § Gaussian splatting): `colour = max(Σ_k Y_k(d) c_k + 0.5, 0)`
//! with `d` the unit direction from the camera centre to the splat mean. The
//! constants and sign conventions are those of 3DGS (`sh_utils.py`) and gsplat
//! (`spherical_harmonics`); on the unit sphere the two polynomial forms agree.

use glam::DVec3;

const C0: f64 = 0.282_094_791_773_878_14;
const C1: f64 = 0.488_602_511_902_919_9;
const C2: [f64; 5] = [
    1.092_548_430_592_079_2,
    -1.092_548_430_592_079_2,
    0.315_391_565_252_520_05,
    -1.092_548_430_592_079_2,
    0.546_274_215_296_039_6,
];
const C3: [f64; 7] = [
    -0.590_043_589_926_643_5,
    2.890_611_442_640_554,
    -0.457_045_799_464_465_8,
    0.373_176_332_590_115_4,
    -0.457_045_799_464_465_8,
    1.445_305_721_320_277,
    -0.590_043_589_926_643_5,
];

/// The 16 basis values `Y_k(d)` and their gradients `∂Y_k/∂d` with respect to
/// the components of `d` (treated as free variables; callers project onto the
/// sphere through the normalisation's Jacobian).
pub fn sh_basis_with_gradient(d: DVec3) -> ([f64; 16], [DVec3; 16]) {
    let (x, y, z) = (d.x, d.y, d.z);
    let (xx, yy, zz) = (x * x, y * y, z * z);
    let v = [
        C0,
        -C1 * y,
        C1 * z,
        -C1 * x,
        C2[0] * x * y,
        C2[1] * y * z,
        C2[2] * (2.0 * zz - xx - yy),
        C2[3] * x * z,
        C2[4] * (xx - yy),
        C3[0] * y * (3.0 * xx - yy),
        C3[1] * x * y * z,
        C3[2] * y * (4.0 * zz - xx - yy),
        C3[3] * z * (2.0 * zz - 3.0 * xx - 3.0 * yy),
        C3[4] * x * (4.0 * zz - xx - yy),
        C3[5] * z * (xx - yy),
        C3[6] * x * (xx - 3.0 * yy),
    ];
    let g = |a: f64, b: f64, c: f64| DVec3::new(a, b, c);
    let grad = [
        DVec3::ZERO,
        g(0.0, -C1, 0.0),
        g(0.0, 0.0, C1),
        g(-C1, 0.0, 0.0),
        C2[0] * g(y, x, 0.0),
        C2[1] * g(0.0, z, y),
        C2[2] * g(-2.0 * x, -2.0 * y, 4.0 * z),
        C2[3] * g(z, 0.0, x),
        C2[4] * g(2.0 * x, -2.0 * y, 0.0),
        C3[0] * g(6.0 * x * y, 3.0 * xx - 3.0 * yy, 0.0),
        C3[1] * g(y * z, x * z, x * y),
        C3[2] * g(-2.0 * x * y, 4.0 * zz - xx - 3.0 * yy, 8.0 * y * z),
        C3[3] * g(-6.0 * x * z, -6.0 * y * z, 6.0 * zz - 3.0 * xx - 3.0 * yy),
        C3[4] * g(4.0 * zz - 3.0 * xx - yy, -2.0 * x * y, 8.0 * x * z),
        C3[5] * g(2.0 * x * z, -2.0 * y * z, xx - yy),
        C3[6] * g(3.0 * xx - 3.0 * yy, -6.0 * x * y, 0.0),
    ];
    (v, grad)
}

/// What the colour's backward pass needs from its forward pass.
#[derive(Clone, Debug)]
pub struct ShColour {
    /// `max(SH + 0.5, 0)` per channel.
    pub colour: [f64; 3],
    /// True where the `≥ 0` clamp is active (zero gradient there).
    clamped: [bool; 3],
    /// Unit view direction.
    dir: DVec3,
    /// Distance camera centre → mean (the normalisation's length).
    dist: f64,
    /// Basis values and gradients.
    basis: [f64; 16],
    basis_grad: [DVec3; 16],
}

/// Colour of a splat with SH `coeffs` (`(degree+1)^2` RGB triples) seen from
/// `camera_centre`.
pub fn eval_colour(coeffs: &[[f64; 3]], mean: DVec3, camera_centre: DVec3) -> ShColour {
    let v = mean - camera_centre;
    let dist = v.length();
    // A mean at the camera centre has no direction; it is culled by the near
    // plane anyway, so any fixed direction keeps the value finite.
    let dir = if dist > 0.0 { v / dist } else { DVec3::Z };
    let (basis, basis_grad) = sh_basis_with_gradient(dir);
    let mut raw = [0.5; 3];
    for (k, c) in coeffs.iter().enumerate() {
        for ch in 0..3 {
            raw[ch] += basis[k] * c[ch];
        }
    }
    ShColour {
        colour: raw.map(|r| r.max(0.0)),
        clamped: raw.map(|r| r < 0.0),
        dir,
        dist,
        basis,
        basis_grad,
    }
}

/// Reverse mode of [`eval_colour`]: adds dL/dcoeffs into `d_coeffs` and
/// returns dL/dmean through the view direction, `∂d/∂v = (I − d dᵀ)/|v|`.
pub fn eval_colour_backward(
    fwd: &ShColour,
    coeffs: &[[f64; 3]],
    d_colour: [f64; 3],
    d_coeffs: &mut [[f64; 3]],
) -> DVec3 {
    let d_raw: [f64; 3] =
        std::array::from_fn(|ch| if fwd.clamped[ch] { 0.0 } else { d_colour[ch] });
    let mut d_dir = DVec3::ZERO;
    for (k, c) in coeffs.iter().enumerate() {
        let mut c_dot = 0.0;
        for ch in 0..3 {
            d_coeffs[k][ch] += fwd.basis[k] * d_raw[ch];
            c_dot += c[ch] * d_raw[ch];
        }
        d_dir += fwd.basis_grad[k] * c_dot;
    }
    if fwd.dist > 0.0 {
        (d_dir - fwd.dir * fwd.dir.dot(d_dir)) / fwd.dist
    } else {
        DVec3::ZERO
    }
}
