//! Where the simulated object goes when it falls from rest under the
//! scene's gravity ([`Scene::fall_from_rest`], docs/scene.md § Colliders,
//! "The fall"): which it reaches first, a collider or the box's wall
//! margin, and when. A dropped object that leaves the box is held by its
//! walls (sticky walls freeze it), which no material explains; `physfit
//! check` says so before any GPU work.
//!
//! From rest every splat moves along the gravity direction,
//! `x(t) = x₀ + ½ g t²`, so the time to cover a distance `s` along `ĝ` is
//! `t = √(2 s / |g|)`. A splat reaches
//!
//! - the wall margin ([`WALL_MARGIN_CELLS`] cells from a wall, the margin
//!   every simulated splat must keep at rest) on axis `a` when it has moved
//!   `s_a = d_a |g| / |g_a|`, `d_a` its distance to the margin along `a`;
//! - a plane collider (point `p`, unit outward normal `n`, `n·ĝ < 0`) when
//!   `s = n·(x₀ − p) / (−n·ĝ)`;
//! - a box collider where its straight path `x₀ + s ĝ` enters the box
//!   (the slab test).
//!
//! The first splat to arrive decides. The initial velocity is not known
//! before a fit, so this is the fall from rest: a downward push lands it
//! sooner, a sideways one may carry it past a collider's edge.

use super::validated_scene::Scene;
use crate::mpm_rules::config::WALL_MARGIN_CELLS;
use crate::mpm_rules::ColliderShape;

/// What the simulated splats reach first, falling from rest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fall {
    /// The scene has no gravity: nothing falls.
    NoGravity,
    /// Some simulated splats are anchored: the object hangs, it does not
    /// fall freely.
    Anchored,
    /// A collider stops the first splat before any reaches the wall
    /// margin.
    Caught {
        /// Its index in `simulation.colliders`.
        collider: usize,
        /// Seconds after frame 0.
        time: f64,
    },
    /// A splat reaches the wall margin first (no collider, or none in the
    /// way before the wall).
    LeavesBox {
        /// The axis (0 x, 1 y, 2 z) of the wall.
        axis: usize,
        /// True for the wall at the box's upper end of that axis.
        upper: bool,
        /// Seconds after frame 0.
        time: f64,
    },
}

impl Scene {
    /// What the simulated splats reach first when the object falls from
    /// rest under `simulation.gravity` (module doc).
    pub fn fall_from_rest(&self) -> Fall {
        let g = self.simulation.gravity_world;
        // Gravity is finite (checked at load), so only 0 has no direction.
        let g_norm = g.iter().map(|c| c * c).sum::<f64>().sqrt();
        if g_norm == 0.0 {
            return Fall::NoGravity;
        }
        if self.anchored.iter().any(|a| *a) {
            return Fall::Anchored;
        }
        let dir = g.map(|c| c / g_norm);
        let time = |s: f64| (2.0 * s.max(0.0) / g_norm).sqrt();
        let points: Vec<[f64; 3]> = self
            .gaussians()
            .means
            .iter()
            .zip(&self.simulated)
            .filter(|(_, s)| **s)
            .map(|(m, _)| m.map(f64::from))
            .collect();

        let b = &self.simulation.sim_box;
        let margin = WALL_MARGIN_CELLS as f64 * b.side / self.simulation.grid_res as f64;
        let mut first = Fall::NoGravity;
        let mut first_s = f64::INFINITY;
        for axis in 0..3 {
            if dir[axis] == 0.0 {
                continue;
            }
            let upper = dir[axis] > 0.0;
            let wall = if upper {
                b.max()[axis] - margin
            } else {
                b.min[axis] + margin
            };
            let d = points
                .iter()
                .map(|p| (wall - p[axis]).abs())
                .fold(f64::INFINITY, f64::min);
            let s = d / dir[axis].abs();
            if s < first_s {
                first_s = s;
                first = Fall::LeavesBox {
                    axis,
                    upper,
                    time: time(s),
                };
            }
        }
        for (i, c) in self.simulation.colliders.iter().enumerate() {
            let s = points
                .iter()
                .filter_map(|p| reach(&c.shape, *p, dir))
                .fold(f64::INFINITY, f64::min);
            if s < first_s {
                first_s = s;
                first = Fall::Caught {
                    collider: i,
                    time: time(s),
                };
            }
        }
        first
    }
}

/// The distance along `dir` (unit) from `p` to where the straight path
/// `p + s·dir`, `s ≥ 0`, first meets `shape` (world units), if it does.
fn reach(shape: &ColliderShape, p: [f64; 3], dir: [f64; 3]) -> Option<f64> {
    match *shape {
        ColliderShape::Plane { point, normal } => {
            let toward = dot(normal, dir);
            let gap = dot(normal, sub(p, point));
            (toward < 0.0).then(|| gap.max(0.0) / -toward)
        }
        ColliderShape::Box { min, max } => {
            let (mut enter, mut leave) = (0.0f64, f64::INFINITY);
            for a in 0..3 {
                if dir[a] == 0.0 {
                    if p[a] < min[a] || p[a] > max[a] {
                        return None;
                    }
                    continue;
                }
                let (t0, t1) = ((min[a] - p[a]) / dir[a], (max[a] - p[a]) / dir[a]);
                enter = enter.max(t0.min(t1));
                leave = leave.min(t0.max(t1));
            }
            (enter <= leave).then_some(enter)
        }
    }
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plane_is_reached_along_the_fall_and_only_when_it_faces_it() {
        let ground = ColliderShape::Plane {
            point: [0.0, 0.0, 0.0],
            normal: [0.0, 0.0, 1.0],
        };
        let down = [0.0, 0.0, -1.0];
        assert_eq!(reach(&ground, [0.3, 0.1, 0.5], down), Some(0.5));
        assert_eq!(reach(&ground, [0.3, 0.1, 0.5], [0.0, 0.0, 1.0]), None);
        // A tilted fall covers more path to the same height.
        let slanted = [0.6, 0.0, -0.8];
        let s = reach(&ground, [0.0, 0.0, 0.4], slanted).unwrap();
        assert!((s - 0.5).abs() < 1e-12, "{s}");
    }

    #[test]
    fn a_box_is_reached_where_the_path_enters_it_and_missed_beside_it() {
        let block = ColliderShape::Box {
            min: [0.0, 0.0, 0.0],
            max: [1.0, 1.0, 0.2],
        };
        let down = [0.0, 0.0, -1.0];
        let s = reach(&block, [0.5, 0.5, 0.7], down).unwrap();
        assert!((s - 0.5).abs() < 1e-12, "{s}");
        assert_eq!(reach(&block, [1.5, 0.5, 0.7], down), None);
    }
}
