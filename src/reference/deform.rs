//! f64 twin of the deformation of Gaussians by their drivers (docs/design.md §
//! Drivers and the deformation of Gaussians, § Adjoint, § Verification 1–2):
//! the test oracle of [`crate::deform`].
//!
//! Forward, per deformed Gaussian g with drivers j = 1..K (K =
//! [`DRIVERS_PER_GAUSSIAN`]), rest positions `X_j`, current `x_j`
//! (normalised units), unweighted centroids `X̄`, `x̄`:
//! - `A = Σ_j (x_j − x̄)(X_j − X̄)ᵀ`, `R` = rotation of the polar
//!   decomposition `A = R·S` ([`polar_decomposition`], the sign-fixed-SVD
//!   rotation, computed here by Davenport's quaternion eigenproblem);
//! - centre `c = x̄ + R·(X_g − X̄)`, written in world units
//!   `min + side·c` ([`crate::scene::SimBox`]);
//! - rotation `q' = q_R ⊗ q_g` (Hamilton product, `(w, x, y, z)`), `q_R` the
//!   unit quaternion of R with `w ≥ 0` ([`quat_from_rotation`]), `q_g` the
//!   rest quaternion as stored (raw: `|q'| = |q_g|`).
//!
//! Reverse mode ([`deform_adjoint`]), given `∂L/∂(world centre)` and
//! `∂L/∂q'` (raw quaternion, what the rasterizer's backward returns):
//! - `g_c = side·∂L/∂c_world`;
//! - the rotation path without any derivative of the quaternion of a matrix:
//!   a change `dR = R·[ω]×` changes `q_R` by `½ q_R ⊗ (0, ω)`, so
//!   `dq' = ½ (0, Rω) ⊗ q'`, and with `q' = (w', u')`, `g = ∂L/∂q'`:
//!   `∂L/∂(Rω) = ½ (w'·g_u − g_w·u' + u' × g_u)`, `τ = Rᵀ·∂L/∂(Rω)`;
//! - `G = g_c (X_g − X̄)ᵀ + R·[τ/2]×` is a `∂L/∂R` (any G with
//!   `axial(RᵀG − GᵀR)` equal to the torque does: only that reaches A);
//! - `∂L/∂A = R·[h]×`, `h = M⁻¹·axial(RᵀG − GᵀR)` ([`polar_reverse_with`],
//!   guarded where M is singular);
//! - `∂L/∂x_j += g_c/K + ∂L/∂A·(X_j − X̄)` (the `x̄` inside A drops out:
//!   `Σ_j (X_j − X̄) = 0`).
//!
//! A driver listed twice by one Gaussian counts twice (a weighted fit); the
//! GPU does the same.

use super::mpm::mat3::{self, Mat3, Vec3};
use super::mpm::polar::{polar_decomposition, polar_reverse_with, Polar};
use crate::deform::{DeformSetup, DRIVERS_PER_GAUSSIAN};

/// A quaternion `(w, x, y, z)`.
pub type Quat = [f64; 4];

const K: usize = DRIVERS_PER_GAUSSIAN;

/// The rigid fit of one Gaussian's drivers.
#[derive(Clone, Copy, Debug)]
pub struct RigidFit64 {
    /// `X̄`, the rest centroid.
    pub rest_centroid: Vec3,
    /// `x̄`, the current centroid.
    pub centroid: Vec3,
    /// `A = Σ_j (x_j − x̄)(X_j − X̄)ᵀ`.
    pub a: Mat3,
    /// `A = R·S`.
    pub polar: Polar,
    /// Unit quaternion of `R`, `w ≥ 0`.
    pub q: Quat,
}

/// Fits the rigid motion taking the drivers' rest positions `rest` to their
/// current positions `current` (module doc).
pub fn rigid_fit(rest: &[Vec3; K], current: &[Vec3; K]) -> RigidFit64 {
    // Relative to the first driver, as the GPU does: K drivers at one point
    // give A = 0 exactly.
    let mean = |p: &[Vec3; K]| -> Vec3 {
        std::array::from_fn(|a| p[0][a] + p.iter().map(|v| v[a] - p[0][a]).sum::<f64>() / K as f64)
    };
    let rest_centroid = mean(rest);
    let centroid = mean(current);
    let mut a = mat3::ZERO;
    for j in 0..K {
        let d = sub(&current[j], &centroid);
        let e = sub(&rest[j], &rest_centroid);
        a = mat3::add(&a, &mat3::outer(&d, &e));
    }
    let polar = polar_decomposition(&a);
    RigidFit64 {
        rest_centroid,
        centroid,
        a,
        polar,
        q: quat_from_rotation(&polar.r),
    }
}

/// The Gaussians of a setup, moved: per deformed Gaussian (setup order).
#[derive(Clone, Debug)]
pub struct Deformed64 {
    /// Centres in world units.
    pub means: Vec<Vec3>,
    /// Raw rotations `q_R ⊗ q_g`.
    pub rotations: Vec<Quat>,
    /// The rotation `R` of each Gaussian's drivers.
    pub r: Vec<Mat3>,
}

fn sub(a: &Vec3, b: &Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn to64(p: [f32; 3]) -> Vec3 {
    p.map(f64::from)
}

/// Rest and current positions of Gaussian `i`'s drivers.
fn driver_positions(setup: &DeformSetup, i: usize, x: &[Vec3]) -> ([Vec3; K], [Vec3; K]) {
    let d = &setup.drivers[i];
    (
        std::array::from_fn(|s| to64(setup.rest_drivers[d[s] as usize])),
        std::array::from_fn(|s| x[d[s] as usize]),
    )
}

/// The forward deformation of `setup`'s Gaussians for driver positions `x`
/// (normalised units, one per driver).
pub fn deform(setup: &DeformSetup, x: &[Vec3]) -> Deformed64 {
    assert_eq!(x.len(), setup.rest_drivers.len(), "one position per driver");
    let b = &setup.sim_box;
    let mut out = Deformed64 {
        means: Vec::with_capacity(setup.len()),
        rotations: Vec::with_capacity(setup.len()),
        r: Vec::with_capacity(setup.len()),
    };
    for i in 0..setup.len() {
        let (rest, current) = driver_positions(setup, i, x);
        let fit = rigid_fit(&rest, &current);
        let offset = sub(&to64(setup.rest_centres[i]), &fit.rest_centroid);
        let c = mat3::vadd(&fit.centroid, &mat3::mul_vec(&fit.polar.r, &offset));
        out.means
            .push(std::array::from_fn(|a| b.min[a] + b.side * c[a]));
        out.rotations
            .push(quat_mul(&fit.q, &setup.rest_rotations[i].map(f64::from)));
        out.r.push(fit.polar.r);
    }
    out
}

/// Reverse mode of [`deform`] (module doc): given `∂L/∂(world centre)` and
/// `∂L/∂(raw rotation)` per deformed Gaussian (setup order), returns
/// `∂L/∂x_j` per driver (normalised units).
pub fn deform_adjoint(
    setup: &DeformSetup,
    x: &[Vec3],
    grad_means: &[Vec3],
    grad_rotations: &[Quat],
) -> Vec<Vec3> {
    assert_eq!(x.len(), setup.rest_drivers.len(), "one position per driver");
    assert_eq!(grad_means.len(), setup.len());
    assert_eq!(grad_rotations.len(), setup.len());
    let side = setup.sim_box.side;
    let mut out = vec![[0.0; 3]; x.len()];
    for i in 0..setup.len() {
        let (rest, current) = driver_positions(setup, i, x);
        let fit = rigid_fit(&rest, &current);
        let r = &fit.polar.r;
        let gc = grad_means[i].map(|g| side * g);
        let qp = quat_mul(&fit.q, &setup.rest_rotations[i].map(f64::from));
        let torque = rotation_torque(&qp, &grad_rotations[i]);
        let tau = mat3::mul_transpose_vec(r, &torque);
        let offset = sub(&to64(setup.rest_centres[i]), &fit.rest_centroid);
        let g = mat3::add(
            &mat3::outer(&gc, &offset),
            &mat3::mul(r, &mat3::skew(&tau.map(|t| 0.5 * t))),
        );
        let h = polar_reverse_with(&fit.polar, &g);
        for (s, &j) in setup.drivers[i].iter().enumerate() {
            let e = sub(&rest[s], &fit.rest_centroid);
            let he = mat3::mul_vec(&h, &e);
            for a in 0..3 {
                out[j as usize][a] += gc[a] / K as f64 + he[a];
            }
        }
    }
    out
}

/// `∂L/∂ω_s` for `q' ↦ q'` changed by `dq' = ½ (0, ω_s) ⊗ q'` (a spatial
/// angular change ω_s), given `g = ∂L/∂q'`:
/// `½ (w'·g_u − g_w·u' + u' × g_u)`.
pub fn rotation_torque(qp: &Quat, g: &Quat) -> Vec3 {
    let u = [qp[1], qp[2], qp[3]];
    let gu = [g[1], g[2], g[3]];
    let c = mat3::cross(&u, &gu);
    std::array::from_fn(|a| 0.5 * (qp[0] * gu[a] - g[0] * u[a] + c[a]))
}

/// Hamilton product `a ⊗ b` of `(w, x, y, z)` quaternions, so that
/// `R(a ⊗ b) = R(a)·R(b)`.
pub fn quat_mul(a: &Quat, b: &Quat) -> Quat {
    let (aw, av) = (a[0], [a[1], a[2], a[3]]);
    let (bw, bv) = (b[0], [b[1], b[2], b[3]]);
    let c = mat3::cross(&av, &bv);
    [
        aw * bw - mat3::dot(&av, &bv),
        aw * bv[0] + bw * av[0] + c[0],
        aw * bv[1] + bw * av[1] + c[1],
        aw * bv[2] + bw * av[2] + c[2],
    ]
}

/// The rotation of `q` (normalised here), 3DGS's convention (that of the
/// rasterizer's projection).
pub fn rotation_from_quat(q: &Quat) -> Mat3 {
    let n = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    let (w, x, y, z) = (q[0] / n, q[1] / n, q[2] / n, q[3] / n);
    [
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
    ]
}

/// Unit quaternion of a rotation matrix by Shepperd's method (the branch
/// of the largest of `w², x², y², z²`, so no division by a small number),
/// normalised, sign chosen so that `w ≥ 0` (the GPU's rule too).
pub fn quat_from_rotation(r: &Mat3) -> Quat {
    let (m00, m11, m22) = (r[0][0], r[1][1], r[2][2]);
    let tr = m00 + m11 + m22;
    let q = if tr >= m00 && tr >= m11 && tr >= m22 {
        let w = 0.5 * (1.0 + tr).max(0.0).sqrt();
        let f = 0.25 / w;
        [
            w,
            (r[2][1] - r[1][2]) * f,
            (r[0][2] - r[2][0]) * f,
            (r[1][0] - r[0][1]) * f,
        ]
    } else if m00 >= m11 && m00 >= m22 {
        let x = 0.5 * (1.0 + m00 - m11 - m22).max(0.0).sqrt();
        let f = 0.25 / x;
        [
            (r[2][1] - r[1][2]) * f,
            x,
            (r[0][1] + r[1][0]) * f,
            (r[0][2] + r[2][0]) * f,
        ]
    } else if m11 >= m22 {
        let y = 0.5 * (1.0 - m00 + m11 - m22).max(0.0).sqrt();
        let f = 0.25 / y;
        [
            (r[0][2] - r[2][0]) * f,
            (r[0][1] + r[1][0]) * f,
            y,
            (r[1][2] + r[2][1]) * f,
        ]
    } else {
        let z = 0.5 * (1.0 - m00 - m11 + m22).max(0.0).sqrt();
        let f = 0.25 / z;
        [
            (r[1][0] - r[0][1]) * f,
            (r[0][2] + r[2][0]) * f,
            (r[1][2] + r[2][1]) * f,
            z,
        ]
    };
    let n = q.iter().map(|c| c * c).sum::<f64>().sqrt();
    let sign = if q[0] < 0.0 { -1.0 } else { 1.0 };
    q.map(|c| sign * c / n)
}
