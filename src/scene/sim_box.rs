//! The simulation cube and the world ↔ normalised transform (docs/design.md §
//! Units and frames): the cube `[min, min + side]³` in world units maps to
//! `[0, 1]³` by `x_n = (x_w − min) / side`, a translation and one uniform
//! scale, so lengths scale by `1/side`, velocities and accelerations too
//! (time is unchanged).

use crate::mpm_rules::config::WALL_MARGIN_CELLS;

/// The simulation cube in world units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimBox {
    /// Lower corner.
    pub min: [f64; 3],
    /// Side length (> 0).
    pub side: f64,
}

impl SimBox {
    /// The cube around the bounding box `[lo, hi]` of the simulated splats
    /// (`"auto"`): centred on it, side = largest extent · (1 + 2·padding),
    /// enlarged so the padded box keeps [`WALL_MARGIN_CELLS`] cells from
    /// every wall: `side / (1 − 2·margin/grid_res)`. A zero extent (one
    /// splat) is taken as 1 world unit.
    pub fn auto(lo: [f64; 3], hi: [f64; 3], padding: f64, grid_res: u32) -> SimBox {
        let extent = (0..3).map(|a| hi[a] - lo[a]).fold(0.0, f64::max);
        let extent = if extent > 0.0 { extent } else { 1.0 };
        let padded = extent * (1.0 + 2.0 * padding);
        let side = padded / (1.0 - 2.0 * WALL_MARGIN_CELLS as f64 / grid_res as f64);
        let min = std::array::from_fn(|a| 0.5 * (lo[a] + hi[a]) - 0.5 * side);
        SimBox { min, side }
    }

    /// Upper corner.
    pub fn max(&self) -> [f64; 3] {
        self.min.map(|m| m + self.side)
    }

    /// World point → normalised `[0, 1]³` coordinates.
    pub fn to_normalised(&self, p: [f32; 3]) -> [f32; 3] {
        std::array::from_fn(|a| ((p[a] as f64 - self.min[a]) / self.side) as f32)
    }

    /// Normalised point → world.
    pub fn to_world(&self, p: [f32; 3]) -> [f32; 3] {
        std::array::from_fn(|a| (self.min[a] + p[a] as f64 * self.side) as f32)
    }

    /// A world vector (velocity, acceleration) in normalised units.
    pub fn vector_to_normalised(&self, v: [f64; 3]) -> [f64; 3] {
        v.map(|c| c / self.side)
    }

    /// True when normalised point `n` keeps [`WALL_MARGIN_CELLS`] cells from
    /// every wall at `grid_res`.
    pub fn inside_margin(n: [f32; 3], grid_res: u32) -> bool {
        let m = WALL_MARGIN_CELLS as f64 / grid_res as f64;
        n.iter().all(|&c| (c as f64) >= m && (c as f64) <= 1.0 - m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_box_keeps_the_margin_and_round_trips() {
        let b = SimBox::auto([0.0, -1.0, 2.0], [2.0, 0.0, 2.5], 0.1, 32);
        for p in [[0.0f32, -1.0, 2.0], [2.0, 0.0, 2.5]] {
            let n = b.to_normalised(p);
            assert!(SimBox::inside_margin(n, 32), "{n:?}");
            let w = b.to_world(n);
            assert!((0..3).all(|a| (w[a] - p[a]).abs() < 1e-5));
        }
        // The largest extent (2) plus 10% each side fills 1 − 6/32 of the side.
        assert!((b.side - 2.4 / (1.0 - 6.0 / 32.0)).abs() < 1e-12);
    }
}
