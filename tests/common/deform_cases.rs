//! Deformation cases shared by the f64 twin's tests (tests/cpu) and the GPU
//! tests (tests/gpu_mpm): drivers on a jittered lattice, Gaussians among
//! them with their 8 nearest drivers (brute force), smooth deformations and
//! rigid motions of the drivers.
#![allow(dead_code)]

use physfit::deform::{DeformSetup, DRIVERS_PER_GAUSSIAN};
use physfit::scene::SimBox;

/// Deterministic generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    pub fn vec3(&mut self) -> [f64; 3] {
        [self.uniform(), self.uniform(), self.uniform()]
    }
    pub fn quat(&mut self) -> [f64; 4] {
        [
            self.uniform(),
            self.uniform(),
            self.uniform(),
            self.uniform(),
        ]
    }
}

/// The box of the cases: world = (−1.5, 0.5, 2) + 3·normalised.
pub fn sim_box() -> SimBox {
    SimBox {
        min: [-1.5, 0.5, 2.0],
        side: 3.0,
    }
}

/// Rotation by `angle` about `axis` (Rodrigues).
pub fn rotation(axis: [f64; 3], angle: f64) -> [[f64; 3]; 3] {
    let n = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]).sqrt();
    let [x, y, z] = axis.map(|a| a / n);
    let (s, c) = angle.sin_cos();
    let t = 1.0 - c;
    [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
    ]
}

pub fn mat_vec(m: &[[f64; 3]; 3], v: &[f64; 3]) -> [f64; 3] {
    std::array::from_fn(|i| m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2])
}

pub fn to64(p: [f32; 3]) -> [f64; 3] {
    p.map(f64::from)
}

/// `n³` drivers on a lattice of spacing `h` around `centre`, each jittered
/// by up to `0.3·h` per axis.
pub fn lattice(n: usize, h: f64, centre: [f64; 3], rng: &mut Rng) -> Vec<[f32; 3]> {
    let half = (n as f64 - 1.0) * 0.5;
    let mut out = Vec::new();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let jitter = rng.vec3();
                let idx = [i, j, k];
                out.push(std::array::from_fn(|a| {
                    (centre[a] + (idx[a] as f64 - half + 0.3 * jitter[a]) * h) as f32
                }));
            }
        }
    }
    out
}

/// The 8 drivers nearest to `p` (brute force, ties by index).
pub fn nearest(drivers: &[[f32; 3]], p: [f32; 3]) -> [u32; DRIVERS_PER_GAUSSIAN] {
    let mut d: Vec<(f64, u32)> = drivers
        .iter()
        .enumerate()
        .map(|(j, q)| {
            let s: f64 = (0..3).map(|a| (q[a] as f64 - p[a] as f64).powi(2)).sum();
            (s, j as u32)
        })
        .collect();
    d.sort_by(|a, b| a.partial_cmp(b).unwrap());
    std::array::from_fn(|s| d[s].1)
}

/// A setup over `drivers`: `count` Gaussians at random points of the
/// drivers' bounding box (shrunk by a quarter), each with its 8 nearest
/// drivers and a random raw rotation of norm 0.5–1.5; Gaussian i is splat
/// `2i + 1`, so even splats are static.
pub fn setup(drivers: Vec<[f32; 3]>, count: usize, rng: &mut Rng) -> DeformSetup {
    let lo: [f64; 3] =
        std::array::from_fn(|a| drivers.iter().map(|p| p[a] as f64).fold(f64::MAX, f64::min));
    let hi: [f64; 3] =
        std::array::from_fn(|a| drivers.iter().map(|p| p[a] as f64).fold(f64::MIN, f64::max));
    let mut s = DeformSetup {
        splat_index: Vec::new(),
        drivers: Vec::new(),
        rest_centres: Vec::new(),
        rest_rotations: Vec::new(),
        rest_drivers: drivers,
        sim_box: sim_box(),
    };
    for i in 0..count {
        let u = rng.vec3();
        let p: [f32; 3] = std::array::from_fn(|a| {
            (0.5 * (lo[a] + hi[a]) + 0.375 * u[a] * (hi[a] - lo[a])) as f32
        });
        s.splat_index.push(2 * i as u32 + 1);
        s.drivers.push(nearest(&s.rest_drivers, p));
        s.rest_centres.push(p);
        s.rest_rotations.push(unit_quat_scaled(rng));
    }
    s
}

/// A random quaternion of norm in [0.5, 1.5) (raw, as 3DGS stores them),
/// with w > 0.3·|q| so that composing it with moderate rotations keeps w
/// away from 0 (no sign flips in finite differences).
pub fn unit_quat_scaled(rng: &mut Rng) -> [f32; 4] {
    loop {
        let q = rng.quat();
        let n = q.iter().map(|c| c * c).sum::<f64>().sqrt();
        if n > 0.2 && n <= 1.0 && q[0].abs() > 0.6 * n {
            let scale = (1.0 + 0.5 * rng.uniform()) / n * q[0].signum();
            return q.map(|c| (c * scale) as f32);
        }
    }
}

/// A smooth non-rigid motion of the drivers: about `centre`, a rotation by
/// `angle` about a random axis after a stretch and shear of size `strain`,
/// a translation, and a wobble of size `wobble` (normalised units).
pub fn deformed(
    rest: &[[f32; 3]],
    centre: [f64; 3],
    angle: f64,
    strain: f64,
    wobble: f64,
    rng: &mut Rng,
) -> Vec<[f64; 3]> {
    let r = rotation(rng.vec3(), angle);
    let f: [[f64; 3]; 3] = std::array::from_fn(|i| {
        std::array::from_fn(|j| if i == j { 1.0 } else { 0.0 } + strain * rng.uniform())
    });
    let t = rng.vec3().map(|c| 0.02 * c);
    rest.iter()
        .map(|p| {
            let d: [f64; 3] = std::array::from_fn(|a| p[a] as f64 - centre[a]);
            let fd = mat_vec(&f, &d);
            let rfd = mat_vec(&r, &fd);
            std::array::from_fn(|a| {
                centre[a] + t[a] + rfd[a] + wobble * (7.0 * d[(a + 1) % 3] + 3.0 * a as f64).sin()
            })
        })
        .collect()
}
