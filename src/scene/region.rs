//! Regions of the scene (`[regions]`): unions of boxes and of balls around
//! the points of a `.ply` point set, in world units.

use std::collections::HashMap;

use super::config::RegionShapeConfig;
use super::error::SceneError;
use super::ply::read_points;
use super::validate::Validator;

/// One part of a region.
#[derive(Clone, Debug, PartialEq)]
pub enum RegionShape {
    /// Points `p` with `min ≤ p ≤ max` (world units).
    Box {
        /// Lower corner.
        min: [f64; 3],
        /// Upper corner.
        max: [f64; 3],
    },
    /// Points within `radius` of any of `points`.
    Points(PointBalls),
}

/// Balls of one radius around a point set, hashed on a grid of cell size
/// `radius` so a query looks at 27 cells.
#[derive(Clone, Debug, PartialEq)]
pub struct PointBalls {
    /// Ball radius, world units.
    pub radius: f64,
    /// Ball centres.
    pub points: Vec<[f32; 3]>,
    cells: HashMap<[i64; 3], Vec<u32>>,
}

impl PointBalls {
    /// Builds the lookup for `points` and `radius > 0`.
    pub fn new(points: Vec<[f32; 3]>, radius: f64) -> PointBalls {
        let mut cells: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
        for (i, p) in points.iter().enumerate() {
            cells
                .entry(Self::cell(p, radius))
                .or_default()
                .push(i as u32);
        }
        PointBalls {
            radius,
            points,
            cells,
        }
    }

    fn cell(p: &[f32; 3], radius: f64) -> [i64; 3] {
        p.map(|c| (c as f64 / radius).floor() as i64)
    }

    /// True when `p` lies within `radius` of a point.
    pub fn contains(&self, p: [f32; 3]) -> bool {
        let c = Self::cell(&p, self.radius);
        let r2 = self.radius * self.radius;
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let Some(list) = self.cells.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) else {
                        continue;
                    };
                    for &i in list {
                        let q = self.points[i as usize];
                        let d2: f64 = (0..3).map(|a| (p[a] as f64 - q[a] as f64).powi(2)).sum();
                        if d2 <= r2 {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }
}

/// A union of shapes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Region {
    /// The shapes.
    pub shapes: Vec<RegionShape>,
}

impl Region {
    /// True when `p` (world units) lies in any shape.
    pub fn contains(&self, p: [f32; 3]) -> bool {
        self.shapes.iter().any(|s| match s {
            RegionShape::Box { min, max } => {
                (0..3).all(|a| (p[a] as f64) >= min[a] && (p[a] as f64) <= max[a])
            }
            RegionShape::Points(balls) => balls.contains(p),
        })
    }

    /// Membership of every point.
    pub fn mask(&self, points: &[[f32; 3]]) -> Vec<bool> {
        points.iter().map(|p| self.contains(*p)).collect()
    }
}

/// Resolves the shapes listed under `field` (e.g. `regions.anchored`).
pub(crate) fn resolve_region(
    v: &Validator,
    field: &str,
    shapes: &[RegionShapeConfig],
) -> Result<Region, SceneError> {
    let mut region = Region::default();
    for (i, s) in shapes.iter().enumerate() {
        let f = format!("{field}[{i}]");
        let shape = match (s.min, s.max, &s.points, s.radius) {
            (Some(min), Some(max), None, None) => {
                let (min, max) = v.aabb(&f, min, max)?;
                RegionShape::Box { min, max }
            }
            (None, None, Some(points), Some(radius)) => {
                let radius = v.positive(&format!("{f}.radius"), radius)?;
                let pf = format!("{f}.points");
                let file = v.existing(&pf, points)?;
                let points = read_points(&file).map_err(|error| SceneError::Ply {
                    path: v.path.to_path_buf(),
                    field: pf.clone(),
                    error: Box::new(error),
                })?;
                if points.is_empty() {
                    return Err(v.invalid(&pf, "the point set is empty", "give a .ply with at least one vertex"));
                }
                RegionShape::Points(PointBalls::new(points, radius))
            }
            _ => {
                return Err(v.invalid(
                    &f,
                    "a region shape needs exactly `min` + `max` (a box) or `points` + `radius` (a point set)",
                    "write `{ min = [x, y, z], max = [x, y, z] }` or `{ points = \"part.ply\", radius = r }`",
                ))
            }
        };
        region.shapes.push(shape);
    }
    Ok(region)
}
