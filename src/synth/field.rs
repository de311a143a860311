//! The known material and motion of a twin experiment (docs/design.md §
//! Verification 5; docs/truth.md), as functions
//! of a world position: `log10 E` (normalised units, as `[material]`) and
//! the initial velocity (world units/s).
//!
//! The smooth random field ([`RandomField`]) is a sum of random Fourier
//! modes: `f(x) = mean + amplitude · √(2/M) · Σ_m cos(k_m · x + φ_m)` with
//! wave vectors `k_m ~ N(0, I/ℓ²)` and phases `φ_m ~ U[0, 2π)` drawn from
//! the seed (SplitMix64, Box–Muller). Its mean over seeds is `mean`, its
//! standard deviation `amplitude`, and it approximates a Gaussian process
//! with the squared-exponential covariance `amplitude² exp(−r²/(2ℓ²))`
//! (random Fourier features, Rahimi & Recht 2007): smooth on the scale of
//! the length scale `ℓ`, deterministic for a seed, and cheap to evaluate
//! anywhere. Values are clamped into the scene's `log10_youngs_range`.

use crate::drive::kmeans::SplitMix64;

/// An axis-aligned box (world units, inclusive) carrying a value.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueBox<T> {
    /// Lower corner.
    pub min: [f64; 3],
    /// Upper corner (`> min` on every axis).
    pub max: [f64; 3],
    /// The value inside.
    pub value: T,
}

impl<T> ValueBox<T> {
    /// True when `p` lies in the box (faces included).
    pub fn contains(&self, p: [f64; 3]) -> bool {
        (0..3).all(|a| p[a] >= self.min[a] && p[a] <= self.max[a])
    }
}

/// The value of the first box of `boxes` holding `p`, else `default`
/// (first box wins where boxes overlap).
fn first_box<T: Copy>(boxes: &[ValueBox<T>], default: T, p: [f64; 3]) -> T {
    boxes
        .iter()
        .find(|b| b.contains(p))
        .map_or(default, |b| b.value)
}

/// One Fourier mode of a [`RandomField`].
#[derive(Clone, Copy, Debug, PartialEq)]
struct FourierMode {
    /// Wave vector, radians per world unit.
    k: [f64; 3],
    /// Phase, radians.
    phase: f64,
}

/// A smooth random `log10 E` field (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct RandomField {
    /// Mean `log10 E`.
    pub mean: f64,
    /// Standard deviation over seeds, log10 units.
    pub amplitude: f64,
    /// Length scale `ℓ`, world units.
    pub length_scale: f64,
    /// The seed the modes were drawn from.
    pub seed: u64,
    /// Values are clamped into `[range[0], range[1]]`.
    pub range: [f64; 2],
    modes: Vec<FourierMode>,
}

impl RandomField {
    /// The field of `seed` with `modes` Fourier modes (≥ 1), clamped into
    /// `range`.
    pub fn new(
        mean: f64,
        amplitude: f64,
        length_scale: f64,
        seed: u64,
        modes: usize,
        range: [f64; 2],
    ) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut normal = || {
            // Box–Muller; 1 − u keeps the logarithm's argument in (0, 1].
            let u = 1.0 - rng.next_f64();
            let v = rng.next_f64();
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let mut drawn = Vec::with_capacity(modes);
        for _ in 0..modes {
            let k = [normal(), normal(), normal()].map(|g| g / length_scale);
            drawn.push(k);
        }
        let modes = drawn
            .into_iter()
            .map(|k| FourierMode {
                k,
                phase: std::f64::consts::TAU * rng.next_f64(),
            })
            .collect();
        Self {
            mean,
            amplitude,
            length_scale,
            seed,
            range,
            modes,
        }
    }

    /// Number of Fourier modes.
    pub fn modes(&self) -> usize {
        self.modes.len()
    }

    /// The field at `p` (world units), clamped into the range.
    pub fn at(&self, p: [f64; 3]) -> f64 {
        let sum: f64 = self
            .modes
            .iter()
            .map(|m| (m.k[0] * p[0] + m.k[1] * p[1] + m.k[2] * p[2] + m.phase).cos())
            .sum();
        let scale = (2.0 / self.modes.len() as f64).sqrt();
        (self.mean + self.amplitude * scale * sum).clamp(self.range[0], self.range[1])
    }
}

/// The true `log10 E` (normalised units, as `[material]`).
#[derive(Clone, Debug, PartialEq)]
pub enum YoungsTruth {
    /// One value everywhere.
    Constant(f64),
    /// The first box holding a point gives its value, else `default`.
    Boxes {
        /// The value outside every box.
        default: f64,
        /// The boxes, in file order.
        boxes: Vec<ValueBox<f64>>,
    },
    /// A smooth random field.
    Random(RandomField),
}

impl YoungsTruth {
    /// `log10 E` at world point `p`.
    pub fn at(&self, p: [f64; 3]) -> f64 {
        match self {
            YoungsTruth::Constant(v) => *v,
            YoungsTruth::Boxes { default, boxes } => first_box(boxes, *default, p),
            YoungsTruth::Random(field) => field.at(p),
        }
    }
}

/// The true initial velocity (world units/s).
#[derive(Clone, Debug, PartialEq)]
pub enum VelocityTruth {
    /// One velocity everywhere.
    Uniform([f64; 3]),
    /// The first box holding a point gives its velocity, else `default`.
    Boxes {
        /// The velocity outside every box.
        default: [f64; 3],
        /// The boxes, in file order.
        boxes: Vec<ValueBox<[f64; 3]>>,
    },
    /// A rigid rotation about an axis plus a translation:
    /// `v = linear + ω â × (x − point)`.
    Rotation {
        /// A point on the axis (world units).
        point: [f64; 3],
        /// The axis direction, unit length.
        axis: [f64; 3],
        /// Angular speed ω, rad/s (right-hand rule about `axis`).
        angular_speed: f64,
        /// Added linear velocity, world units/s.
        linear: [f64; 3],
    },
}

impl VelocityTruth {
    /// The initial velocity at world point `p`.
    pub fn at(&self, p: [f64; 3]) -> [f64; 3] {
        match self {
            VelocityTruth::Uniform(v) => *v,
            VelocityTruth::Boxes { default, boxes } => first_box(boxes, *default, p),
            VelocityTruth::Rotation {
                point,
                axis,
                angular_speed,
                linear,
            } => {
                let w = axis.map(|a| a * angular_speed);
                let r = [p[0] - point[0], p[1] - point[1], p[2] - point[2]];
                [
                    linear[0] + w[1] * r[2] - w[2] * r[1],
                    linear[1] + w[2] * r[0] - w[0] * r[2],
                    linear[2] + w[0] * r[1] - w[1] * r[0],
                ]
            }
        }
    }

    /// The velocity's gradient at `p`, `G[a][b] = ∂v_a/∂x_b` (1/s): `[ω]×`
    /// for a rotation; 0 for a uniform velocity and inside a box (the
    /// boxes' edges, where the field jumps, have none).
    pub fn gradient_at(&self, _p: [f64; 3]) -> [[f64; 3]; 3] {
        match self {
            VelocityTruth::Uniform(_) | VelocityTruth::Boxes { .. } => [[0.0; 3]; 3],
            VelocityTruth::Rotation {
                axis,
                angular_speed,
                ..
            } => {
                let w = axis.map(|a| a * angular_speed);
                [[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]]
            }
        }
    }
}
