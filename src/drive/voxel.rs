//! Cells of the simulation grid that the material occupies, and the
//! interior filling of closed objects (DESIGN.md § Drivers and the
//! deformation of Gaussians; PhysGaussian § 3.3).
//!
//! A 3DGS object is a shell of splats on its surface. The driver count
//! follows the occupied cells (4 drivers per cell by default, since MPM
//! tears the material numerically with too few particles per cell), and a
//! solid object can be filled: the cells the splats occupy are voxelised,
//! the outside is flood-filled from the box boundary, and the cells
//! reached neither way are the interior, sampled with points.
//!
//! Cells are those of the simulation grid (`grid_res` per side, cell
//! `floor(x · grid_res)` of a normalised point `x`), indexed
//! `(i · n + j) · n + k`. The flood fill walks faces (6-connectivity), so a
//! shell closes when its occupied cells share faces or edges; a coarser grid
//! closes a sparser shell. Filling on the simulation grid rather than the
//! finer half-cell voxels of the volume rule keeps the gaps between surface
//! splats (a splat covers an area, its centre a point) from letting the
//! outside leak in.

/// Fill points per interior cell along each axis: 2³ = 8 points at the
/// centres of the cell's half-cell voxels, so each fill point is one voxel
/// of the volume rule ([`crate::mpm::config::occupied_volume`]) and an
/// interior cell counts as fully occupied. The fox's surface has about 13
/// splats per occupied cell, so K-Means sees a similar density inside.
pub const FILL_POINTS_PER_AXIS: u32 = 2;

/// The cell of normalised point `p`, clamped into the grid.
pub fn cell_of(p: [f32; 3], grid_res: u32) -> [u32; 3] {
    p.map(|c| ((c as f64 * grid_res as f64).floor().max(0.0) as u32).min(grid_res - 1))
}

/// Dense index of a cell.
pub fn cell_index(c: [u32; 3], grid_res: u32) -> usize {
    let n = grid_res as usize;
    (c[0] as usize * n + c[1] as usize) * n + c[2] as usize
}

/// Occupancy of every cell: true where at least one of `points`
/// (normalised) lies.
pub fn occupied_cells(points: &[[f32; 3]], grid_res: u32) -> Vec<bool> {
    let n = grid_res as usize;
    let mut occupied = vec![false; n * n * n];
    for p in points {
        occupied[cell_index(cell_of(*p, grid_res), grid_res)] = true;
    }
    occupied
}

/// Number of occupied cells.
pub fn count(cells: &[bool]) -> usize {
    cells.iter().filter(|c| **c).count()
}

/// The interior: cells that are not occupied and that the outside, flood
/// filled through unoccupied cells from every boundary cell of the box,
/// does not reach. Empty for an open shell.
pub fn interior_cells(occupied: &[bool], grid_res: u32) -> Vec<bool> {
    let n = grid_res as usize;
    assert_eq!(occupied.len(), n * n * n, "occupancy of another grid");
    let mut outside = vec![false; n * n * n];
    let mut stack = Vec::new();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let on_boundary = [i, j, k].iter().any(|&c| c == 0 || c == n - 1);
                let idx = (i * n + j) * n + k;
                if on_boundary && !occupied[idx] {
                    outside[idx] = true;
                    stack.push([i, j, k]);
                }
            }
        }
    }
    while let Some(c) = stack.pop() {
        for axis in 0..3 {
            for step in [-1isize, 1] {
                let v = c[axis] as isize + step;
                if v < 0 || v >= n as isize {
                    continue;
                }
                let mut d = c;
                d[axis] = v as usize;
                let idx = (d[0] * n + d[1]) * n + d[2];
                if !occupied[idx] && !outside[idx] {
                    outside[idx] = true;
                    stack.push(d);
                }
            }
        }
    }
    occupied
        .iter()
        .zip(&outside)
        .map(|(&o, &out)| !o && !out)
        .collect()
}

/// Fill points of the interior cells (normalised): [`FILL_POINTS_PER_AXIS`]³
/// per cell on a regular lattice at the centres of its sub-cells, in cell
/// index order. Deterministic: no randomness, so the drivers of a scene
/// depend only on its seed.
pub fn fill_points(interior: &[bool], grid_res: u32) -> Vec<[f32; 3]> {
    let n = grid_res as usize;
    let m = FILL_POINTS_PER_AXIS as usize;
    let h = 1.0 / (n * m) as f64;
    let mut points = Vec::new();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                if !interior[(i * n + j) * n + k] {
                    continue;
                }
                for a in 0..m {
                    for b in 0..m {
                        for c in 0..m {
                            points.push([
                                (((i * m + a) as f64 + 0.5) * h) as f32,
                                (((j * m + b) as f64 + 0.5) * h) as f32,
                                (((k * m + c) as f64 + 0.5) * h) as f32,
                            ]);
                        }
                    }
                }
            }
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells on the faces of the cube `[lo, hi]³` of cells.
    fn shell(grid_res: u32, lo: u32, hi: u32) -> Vec<bool> {
        let n = grid_res as usize;
        let mut occ = vec![false; n * n * n];
        for i in lo..=hi {
            for j in lo..=hi {
                for k in lo..=hi {
                    if [i, j, k].iter().any(|&c| c == lo || c == hi) {
                        occ[cell_index([i, j, k], grid_res)] = true;
                    }
                }
            }
        }
        occ
    }

    #[test]
    fn a_closed_shell_has_its_inside_as_interior() {
        let occ = shell(16, 4, 10);
        let interior = interior_cells(&occ, 16);
        // 5³ cells strictly inside the 7³ shell.
        assert_eq!(count(&interior), 125);
        let pts = fill_points(&interior, 16);
        assert_eq!(pts.len(), 125 * 8);
        assert!(pts
            .iter()
            .all(|p| interior[cell_index(cell_of(*p, 16), 16)]));
    }

    #[test]
    fn an_open_shell_has_no_interior() {
        let mut occ = shell(16, 4, 10);
        occ[cell_index([7, 7, 10], 16)] = false;
        assert_eq!(count(&interior_cells(&occ, 16)), 0);
    }
}
