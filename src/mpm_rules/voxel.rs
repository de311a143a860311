//! Cells of the simulation grid that the material occupies, and the
//! interior filling of closed objects (docs/design.md § Drivers and the
//! deformation of Gaussians; PhysGaussian § 3.3).
//!
//! A 3DGS object is a shell of splats on its surface. The driver count
//! follows the occupied cells (8 drivers per cell by default, since MPM
//! tears the material numerically with too few particles per cell), and a
//! solid object can be filled: the cells the splats occupy are voxelised,
//! the outside is flood-filled from the box boundary, and the cells
//! reached neither way are the interior, sampled with points ([`fill`]).
//!
//! Cells are those of the simulation grid (`grid_res` per side, cell
//! `floor(x · grid_res)` of a normalised point `x`), indexed
//! `(i · n + j) · n + k`. The flood fill walks faces (6-connectivity), so a
//! shell closes when its occupied cells share faces or edges; a coarser grid
//! closes a sparser shell. Filling on the simulation grid rather than the
//! finer half-cell voxels of the volume rule keeps the gaps between surface
//! splats (a splat covers an area, its centre a point) from letting the
//! outside leak in.
//!
//! The module sits with the simulator, below both of its users: the scene
//! counts the occupied cells and fill points when it resolves `[drivers]`
//! (the figures `physfit check` prints), and the drivers
//! (`crate::drive`) sample the fill points K-Means runs over.

/// Half-cell voxels per cell along each axis: the fill works on the voxels
/// of the volume rule ([`super::config::occupied_volume`]), 2³ = 8 per
/// cell.
pub const VOXELS_PER_AXIS: u32 = 2;

/// Most fill points per voxel (see [`fill`]).
pub const MAX_FILL_PER_VOXEL: usize = 64;

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

/// Number of cells holding at least one of `points` (normalised), without
/// the dense `grid_res³` occupancy of [`occupied_cells`]: the cell indices
/// are sorted and deduplicated, so the memory follows the points, not the
/// grid, and a scene with a mistyped `simulation.grid_res` (4096 for 64:
/// 64 GiB of flags) is counted, then refused by the memory estimate
/// ([`crate::budget`]), instead of aborting the process on the allocation.
pub fn count_occupied(points: &[[f32; 3]], grid_res: u32) -> usize {
    let n = u64::from(grid_res);
    let mut cells: Vec<u64> = points
        .iter()
        .map(|p| {
            let c = cell_of(*p, grid_res).map(u64::from);
            (c[0] * n + c[1]) * n + c[2]
        })
        .collect();
    cells.sort_unstable();
    cells.dedup();
    cells.len()
}

/// Host bytes [`fill`] takes at its peak for a grid of `grid_res` cells per
/// side: the dense cell occupancy, interior and flood flags (1 byte per
/// cell each) and, on the half-cell voxels ([`VOXELS_PER_AXIS`]³ per cell),
/// the blocked, point-holding and outside flags, plus the flood's stack
/// (at most one 24-byte entry per voxel, counted at a quarter).
pub fn fill_host_bytes(grid_res: u32) -> u64 {
    let cells = u64::from(grid_res).pow(3);
    let voxels = cells * u64::from(VOXELS_PER_AXIS).pow(3);
    3 * cells + 3 * voxels + voxels * 24 / 4
}

/// Number of occupied cells.
pub fn count(cells: &[bool]) -> usize {
    cells.iter().filter(|c| **c).count()
}

/// Marks what a flood fill from every unblocked boundary cell of an
/// `n`-per-side grid reaches through unblocked cells, walking faces.
fn flood_from_boundary(blocked: &[bool], n: usize) -> Vec<bool> {
    let mut reached = vec![false; n * n * n];
    let mut stack = Vec::new();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let on_boundary = [i, j, k].iter().any(|&c| c == 0 || c == n - 1);
                let idx = (i * n + j) * n + k;
                if on_boundary && !blocked[idx] {
                    reached[idx] = true;
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
                if !blocked[idx] && !reached[idx] {
                    reached[idx] = true;
                    stack.push(d);
                }
            }
        }
    }
    reached
}

/// The interior: cells that are not occupied and that the outside, flood
/// filled through unoccupied cells from every boundary cell of the box,
/// does not reach. Empty for an open shell.
pub fn interior_cells(occupied: &[bool], grid_res: u32) -> Vec<bool> {
    let n = grid_res as usize;
    assert_eq!(occupied.len(), n * n * n, "occupancy of another grid");
    let outside = flood_from_boundary(occupied, n);
    occupied
        .iter()
        .zip(&outside)
        .map(|(&o, &out)| !o && !out)
        .collect()
}

/// The filling of the closed shell that `points` (normalised) form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fill {
    /// Interior cells ([`interior_cells`]), dense, [`cell_index`] order.
    pub interior_cells: Vec<bool>,
    /// Number of interior cells.
    pub interior_count: usize,
    /// Points per filled voxel: the splats' mean per voxel they occupy.
    pub per_voxel: usize,
    /// The fill points (normalised), `per_voxel` in every filled half-cell
    /// voxel, in voxel index order.
    pub points: Vec<[f32; 3]>,
}

/// `n` deterministic, evenly spread offsets in the unit cube: the R3
/// low-discrepancy sequence (Roberts 2018, from the plastic number), started
/// at the centre, so one point sits at the voxel's centre.
fn voxel_offsets(n: usize) -> Vec<[f64; 3]> {
    let g = 1.220_744_084_605_759_5f64;
    let alpha = [1.0 / g, 1.0 / (g * g), 1.0 / (g * g * g)];
    (0..n)
        .map(|i| std::array::from_fn(|a| (0.5 + i as f64 * alpha[a]).fract()))
        .collect()
}

/// Fills the closed shell that `points` (normalised) form, in two levels:
///
/// 1. Cells ([`interior_cells`]): every half-cell voxel of an interior cell
///    is filled.
/// 2. Half-cell voxels of the occupied (shell) cells: a cell that the
///    surface crosses is partly inside. Its empty voxels that a second
///    flood fill, from the boundary through empty voxels of the shell and
///    outside cells (never into interior cells), does not reach are filled
///    too. Without this level a gap of up to a cell separates the fill from
///    the surface splats. Where the surface has gaps at the finer level,
///    the flood leaks into the shell cells and they stay as they were; it
///    never reaches the interior cells, which level 1 already settled.
///
/// Each filled voxel gets as many points as the splats have per voxel they
/// occupy, on average (rounded, 1 to [`MAX_FILL_PER_VOXEL`]), spread by
/// the R3 low-discrepancy sequence (`voxel_offsets`). K-Means places
/// centres where its points are dense, and every driver gets the same
/// volume, so the drivers should spread evenly through the material. With one point per voxel inside a shell of
/// 6 splats per voxel, the drivers crowd the surface and a filled sphere
/// sways like a heavy-rimmed one, 9–11% slower than the solid ball sampled
/// through its volume (at 3 and 4 samples per cell side); with matched
/// densities 2–4% (tests/gpu_mpm/fill.rs; its hollow shell: 64–67%).
///
/// Every filled voxel counts in the volume rule
/// ([`super::config::occupied_volume`]), so the filled object counts
/// as solid. Deterministic: no randomness, so the drivers of a scene depend
/// only on its seed. Nothing is filled for an open shell.
pub fn fill(points: &[[f32; 3]], grid_res: u32) -> Fill {
    let n = grid_res as usize;
    let occupied = occupied_cells(points, grid_res);
    let interior = interior_cells(&occupied, grid_res);
    let interior_count = count(&interior);
    if interior_count == 0 {
        return Fill {
            interior_cells: interior,
            interior_count,
            per_voxel: 0,
            points: Vec::new(),
        };
    }
    let m = VOXELS_PER_AXIS as usize;
    let nv = n * m;
    let voxel_res = grid_res * VOXELS_PER_AXIS;
    let cell_of_voxel = |i: usize, j: usize, k: usize| (i / m * n + j / m) * n + k / m;
    let mut blocked = vec![false; nv * nv * nv];
    for p in points {
        blocked[cell_index(cell_of(*p, voxel_res), voxel_res)] = true;
    }
    let holds_point = blocked.clone();
    let per_voxel = ((points.len() as f64 / count(&holds_point) as f64).round() as usize)
        .clamp(1, MAX_FILL_PER_VOXEL);
    for i in 0..nv {
        for j in 0..nv {
            for k in 0..nv {
                if interior[cell_of_voxel(i, j, k)] {
                    blocked[(i * nv + j) * nv + k] = true;
                }
            }
        }
    }
    let outside = flood_from_boundary(&blocked, nv);
    let h = 1.0 / nv as f64;
    let offsets = voxel_offsets(per_voxel);
    let mut fill_points = Vec::new();
    for i in 0..nv {
        for j in 0..nv {
            for k in 0..nv {
                let v = (i * nv + j) * nv + k;
                let cell = cell_of_voxel(i, j, k);
                let inner_shell = occupied[cell] && !holds_point[v] && !outside[v];
                if interior[cell] || inner_shell {
                    let corner = [i, j, k].map(|c| c as f64);
                    for o in &offsets {
                        fill_points.push(std::array::from_fn(|a| ((corner[a] + o[a]) * h) as f32));
                    }
                }
            }
        }
    }
    Fill {
        interior_cells: interior,
        interior_count,
        per_voxel,
        points: fill_points,
    }
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
    }

    #[test]
    fn a_filled_cube_shell_is_solid_to_its_surface() {
        // Points on the faces x, y, z = 0.27 and 0.73 of a cube, every
        // 0.46/64: at grid 16 the surface crosses cells 4 and 11, in their
        // outer voxels (8 and 23 of 32), so the fill takes the interior
        // cells (5..=10, voxels 10..=21) and the inner voxels 9 and 22 of
        // the shell cells: voxels 9..=22, every voxel whose centre is
        // inside.
        let mut pts = Vec::new();
        let steps = 64;
        for a in 0..=steps {
            for b in 0..=steps {
                let u = 0.27 + 0.46 * a as f32 / steps as f32;
                let v = 0.27 + 0.46 * b as f32 / steps as f32;
                for w in [0.27f32, 0.73] {
                    pts.push([w, u, v]);
                    pts.push([u, w, v]);
                    pts.push([u, v, w]);
                }
            }
        }
        let f = fill(&pts, 16);
        assert_eq!(f.interior_count, 6 * 6 * 6);
        // The splats' mean per voxel they occupy.
        let voxels = count(&occupied_cells(&pts, 32));
        assert_eq!(
            f.per_voxel,
            (pts.len() as f64 / voxels as f64).round() as usize
        );
        assert!(f.per_voxel > 1);
        assert_eq!(f.points.len(), 14 * 14 * 14 * f.per_voxel);
        // Each filled voxel holds its points.
        let filled = occupied_cells(&f.points, 32);
        assert_eq!(count(&filled), 14 * 14 * 14);
        assert!(f
            .points
            .iter()
            .all(|p| p.iter().all(|&c| c > 0.27 && c < 0.73)));
    }

    #[test]
    fn an_open_shell_has_no_interior() {
        let mut occ = shell(16, 4, 10);
        occ[cell_index([7, 7, 10], 16)] = false;
        assert_eq!(count(&interior_cells(&occ, 16)), 0);
        assert!(fill(&[[0.5; 3]], 16).points.is_empty());
    }
}
