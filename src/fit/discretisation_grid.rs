//! The discretisation of a level of the discretisation check
//! (src/fit/discretisation_check.rs, docs/design.md § Error bars, "From
//! the discretisation"): the scene at a doubled grid, with at least doubled
//! substeps and its drivers rebuilt for that grid by the scene's own
//! `[drivers]` rule.
//!
//! Why the grid and the time step together: the APIC transfers lose a
//! fixed share of the velocity a particle's affine `(v, C)` cannot hold at
//! every substep, so on a fixed grid the damping per unit time grows as the
//! substeps do and the motion does not converge in the time step; refined
//! together it does, the per-transfer loss shrinking about tenfold per
//! grid doubling (docs/benchmarks.md, "The simulator against its own time
//! step, at a fixed E").
//!
//! A level is derived from the scene and its index alone (the checkpoint
//! keeps only the levels' results): level `n`'s grid is the scene's times
//! [`GRID_REFINEMENT`]`^n`, its substeps the larger of twice level
//! `n − 1`'s and the new grid's stability minimum (the explicit bound of
//! docs/design.md § MPM, Stability, at the top of the E range), and its
//! drivers the `[drivers]` rule on the new grid with the same seed:
//! `count = "auto"` gives [`AUTO_DRIVERS_PER_CELL`] per occupied cell of
//! the new grid; an explicit count (or fraction) is scaled by the ratio of
//! the occupied cells, new grid to the scene's, so the drivers per
//! occupied cell stay what the scene chose (a fixed factor 8 would double
//! a thin shell's drivers per cell at every level, since its occupied
//! cells grow about fourfold, and the drivers per cell move E on their
//! own, docs/benchmarks.md "What moves E: the discretisation"). Either is
//! capped at the points K-Means runs over (the simulated splats and the
//! fill points). The simulation box stays the scene's: only the spacing
//! changes.
//!
//! With `fit.discretisation_refine = "fixed_grid"` the grid stays the
//! scene's: level `n` has the substeps as above (twice level `n − 1`'s)
//! and [`DRIVER_REFINEMENT`]`^n` times the scene's drivers (same seed,
//! capped as above). It asks whether E has converged in the time step and
//! the drivers at the scene's grid, which FLIP's motion does and APIC's
//! does not (docs/design.md § MPM, "Transfer"), at the cost of the
//! simulation alone growing; it says nothing of the grid's spacing, which
//! on a part thinner than a few cells moves E most.

pub use super::discretisation::{
    Resolution, DRIVER_REFINEMENT, GRID_REFINEMENT, SUBSTEP_REFINEMENT,
};
use crate::memory::refuse_fill_grid;
use crate::mpm_rules::voxel;
use crate::scene::{DiscretisationRefinement, DriverCount, Drivers, Scene, AUTO_DRIVERS_PER_CELL};

/// The discretisation of `scene` itself.
pub fn scene_resolution(scene: &Scene) -> Resolution {
    Resolution {
        grid_res: scene.simulation.grid_res,
        drivers: scene.drivers.count,
        substeps: scene.simulation.substeps,
    }
}

/// The scene of level `level` of the check (1: the first refined one;
/// 0: the scene itself), as the module doc derives it. `Err` holds why the
/// level cannot be made: a grid or substeps past `u32`, or a fill grid
/// larger than the host memory (the check stops there, as for a level
/// whose problem does not fit).
pub fn level_scene(scene: &Scene, level: u32) -> Result<Scene, String> {
    let refinement = scene.fit.discretisation_refine;
    let grid_factor = match refinement {
        DiscretisationRefinement::Grid => GRID_REFINEMENT,
        DiscretisationRefinement::FixedGrid => 1,
    };
    let mut refined = scene.clone();
    for n in 1..=level {
        let grid_res = grid_factor
            .checked_pow(n)
            .and_then(|f| scene.simulation.grid_res.checked_mul(f))
            .ok_or_else(|| format!("level {n}'s grid overflows"))?;
        let doubled = refined
            .simulation
            .substeps
            .checked_mul(SUBSTEP_REFINEMENT)
            .ok_or_else(|| format!("level {n}'s substeps overflow"))?;
        refined.simulation.grid_res = grid_res;
        refined.simulation.substeps = doubled.max(refined.stability().min_substeps);
    }
    if level > 0 {
        refined.drivers = match refinement {
            DiscretisationRefinement::Grid => drivers_at(scene, refined.simulation.grid_res)?,
            DiscretisationRefinement::FixedGrid => more_drivers(scene, level)?,
        };
    }
    Ok(refined)
}

/// The scene's drivers on its own grid, [`DRIVER_REFINEMENT`]`^level`
/// times as many (an explicit count like `"auto"`'s), capped at the points
/// K-Means runs over (module doc: `fit.discretisation_refine =
/// "fixed_grid"`).
fn more_drivers(scene: &Scene, level: u32) -> Result<Drivers, String> {
    let d = &scene.drivers;
    let points = scene.simulated_indices().len() + d.fill_points;
    let count = DRIVER_REFINEMENT
        .checked_pow(level)
        .and_then(|f| d.count.checked_mul(f as usize))
        .ok_or_else(|| format!("level {level}'s drivers overflow"))?
        .max(d.k)
        .min(points);
    Ok(Drivers {
        count,
        rule: DriverCount::Given(count),
        ..d.clone()
    })
}

/// The discretisation of level `level` of the check ([`level_scene`]).
pub fn level_resolution(scene: &Scene, level: u32) -> Result<Resolution, String> {
    level_scene(scene, level).map(|s| scene_resolution(&s))
}

/// The scene's `[drivers]` rule on a grid of `grid_res` nodes per side
/// (module doc): the occupied cells (and, with `drivers.fill`, the
/// interior cells and fill points) of that grid, and the count.
fn drivers_at(scene: &Scene, grid_res: u32) -> Result<Drivers, String> {
    let d = &scene.drivers;
    let means = scene.normalised_means();
    let normalised: Vec<[f32; 3]> = scene
        .simulated_indices()
        .iter()
        .map(|&i| means[i as usize])
        .collect();
    let surface_cells = voxel::count_occupied(&normalised, grid_res);
    let (interior_cells, fill_points) = match d.fill {
        true => {
            refuse_fill_grid(&scene.path, grid_res, voxel::fill_host_bytes(grid_res))
                .map_err(|e| e.to_string())?;
            let fill = voxel::fill(&normalised, grid_res);
            (fill.interior_count, fill.points.len())
        }
        false => (0, 0),
    };
    let occupied_cells = surface_cells + interior_cells;
    let points = normalised.len() + fill_points;
    let (count, rule) = match d.rule {
        DriverCount::Auto => (AUTO_DRIVERS_PER_CELL * occupied_cells, DriverCount::Auto),
        DriverCount::Given(_) | DriverCount::Fraction(_) => {
            let ratio = occupied_cells as f64 / d.occupied_cells.max(1) as f64;
            let n = (d.count as f64 * ratio).round() as usize;
            (n, DriverCount::Given(n))
        }
    };
    Ok(Drivers {
        count: count.max(d.k).min(points),
        rule,
        occupied_cells,
        interior_cells,
        fill_points,
        ..d.clone()
    })
}
