//! Quadratic B-spline stencil of one particle (Hu et al. 2018, MLS-MPM):
//! base node `floor(x/dx − 0.5)` per axis, 3 nodes per axis, 27 in all.

use super::mat3::Vec3;

/// Weights of one particle over its 3×3×3 nodes and their derivatives with
/// respect to the particle position.
#[derive(Clone, Copy, Debug)]
pub struct Stencil {
    /// Global index of the lowest node per axis, `floor(x/dx − 0.5)`.
    pub base: [i64; 3],
    /// `fx = x/dx − base` per axis, in [0.5, 1.5).
    pub fx: Vec3,
    /// 1-D weights `w[axis][k]`, k = 0, 1, 2.
    pub w: [[f64; 3]; 3],
    /// 1-D weight derivatives `∂w[axis][k]/∂x_axis` (per unit length).
    pub dw: [[f64; 3]; 3],
    /// Grid spacing.
    pub dx: f64,
}

impl Stencil {
    /// Stencil of a particle at `x` on a grid of spacing `dx`.
    pub fn new(x: &Vec3, dx: f64) -> Self {
        let mut base = [0i64; 3];
        let mut fx = [0.0; 3];
        let mut w = [[0.0; 3]; 3];
        let mut dw = [[0.0; 3]; 3];
        for a in 0..3 {
            let scaled = x[a] / dx;
            base[a] = (scaled - 0.5).floor() as i64;
            let f = scaled - base[a] as f64;
            fx[a] = f;
            w[a] = [
                0.5 * (1.5 - f) * (1.5 - f),
                0.75 - (f - 1.0) * (f - 1.0),
                0.5 * (f - 0.5) * (f - 0.5),
            ];
            dw[a] = [-(1.5 - f) / dx, -2.0 * (f - 1.0) / dx, (f - 0.5) / dx];
        }
        Stencil {
            base,
            fx,
            w,
            dw,
            dx,
        }
    }

    /// Weight `w_ip` of node offset `o` (each component 0..3).
    pub fn weight(&self, o: [usize; 3]) -> f64 {
        self.w[0][o[0]] * self.w[1][o[1]] * self.w[2][o[2]]
    }

    /// Gradient `∂w_ip/∂x_p` of node offset `o`.
    pub fn weight_gradient(&self, o: [usize; 3]) -> Vec3 {
        [
            self.dw[0][o[0]] * self.w[1][o[1]] * self.w[2][o[2]],
            self.w[0][o[0]] * self.dw[1][o[1]] * self.w[2][o[2]],
            self.w[0][o[0]] * self.w[1][o[1]] * self.dw[2][o[2]],
        ]
    }

    /// `x_i − x_p` for node offset `o`, computed as `(o − fx)·dx`.
    pub fn node_offset(&self, o: [usize; 3]) -> Vec3 {
        std::array::from_fn(|a| (o[a] as f64 - self.fx[a]) * self.dx)
    }

    /// Global node index of offset `o`.
    pub fn node(&self, o: [usize; 3]) -> [i64; 3] {
        std::array::from_fn(|a| self.base[a] + o[a] as i64)
    }
}

/// The 27 node offsets of a stencil.
pub fn offsets() -> impl Iterator<Item = [usize; 3]> {
    (0..27).map(|n| [n / 9, (n / 3) % 3, n % 3])
}
