//! `[drivers]`: how many driving particles, chosen by which rule, and the
//! grid cells the material occupies (docs/design.md § Drivers and the
//! deformation of Gaussians).

use super::config::{CountConfig, DriversConfig, DRIVERS_PER_GAUSSIAN};
use super::error::SceneError;
use super::simulation::Simulation;
use super::validate::Validator;
use crate::mpm_rules::voxel;

/// Drivers per occupied grid cell of `drivers.count = "auto"` (the
/// default): MPM wants several particles per cell (PhysDreamer's author:
/// about 10) and tears the material numerically with too few (docs/design.md §
/// Drivers and the deformation of Gaussians). 8, not 4: the optimum of the
/// fit's loss in E stops moving at about 8 per cell (16, or one driver per
/// splat, move it by less than 0.03 decades more), while 4 leaves the
/// demo's tail at least 0.23 decades and the other engine's stem 0.04
/// further from the truth (docs/benchmarks.md, "What moves E: the
/// discretisation"); the MPM is a few percent of a fit's evaluation.
pub const AUTO_DRIVERS_PER_CELL: usize = 8;

/// Below this many drivers per occupied cell `physfit check` warns: MPM
/// tears the material numerically (docs/design.md § Drivers).
pub const MIN_DRIVERS_PER_CELL: f64 = 2.0;

/// How `drivers.count` was chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DriverCount {
    /// `"auto"` (the default): [`AUTO_DRIVERS_PER_CELL`] per occupied cell.
    Auto,
    /// An integer.
    Given(usize),
    /// `drivers.fraction` of the simulated splats.
    Fraction(f64),
}

/// Resolved `[drivers]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Drivers {
    /// Number of driving particles, capped at the points K-Means runs over
    /// (the simulated splats, plus the fill points with `fill`).
    pub count: usize,
    /// How the count was chosen.
    pub rule: DriverCount,
    /// Cells of the simulation grid the material occupies: those holding at
    /// least one simulated splat (anchored ones included), plus the interior
    /// cells with `fill` ([`crate::mpm_rules::voxel`]).
    pub occupied_cells: usize,
    /// Interior cells filled with points (0 without `fill`).
    pub interior_cells: usize,
    /// Fill points (0 without `fill`): in every half-cell voxel of the
    /// interior cells and in the inner empty voxels of the surface cells, as
    /// many per voxel as the splats have ([`crate::mpm_rules::voxel::fill`]).
    pub fill_points: usize,
    /// Fill closed objects before K-Means.
    pub fill: bool,
    /// Nearest drivers per Gaussian.
    pub k: usize,
    /// K-Means seed.
    pub seed: u64,
}

impl Drivers {
    /// Drivers per occupied cell.
    pub fn per_occupied_cell(&self) -> f64 {
        self.count as f64 / self.occupied_cells.max(1) as f64
    }

    /// True below [`MIN_DRIVERS_PER_CELL`]: the material would tear.
    pub fn too_sparse(&self) -> bool {
        self.per_occupied_cell() < MIN_DRIVERS_PER_CELL
    }
}

/// `[drivers]`: the cells the simulated splats occupy (and, with `fill`,
/// the interior cells and fill points), the count rule and the count, and
/// the nearest drivers per Gaussian.
pub(crate) fn resolve_drivers(
    v: &Validator,
    d: &DriversConfig,
    simulation: &Simulation,
    means: &[[f32; 3]],
    simulated: &[bool],
) -> Result<Drivers, SceneError> {
    let grid_res = simulation.grid_res;
    let normalised: Vec<[f32; 3]> = means
        .iter()
        .zip(simulated)
        .filter(|(_, s)| **s)
        .map(|(p, _)| simulation.sim_box.to_normalised(*p))
        .collect();
    let n_sim = normalised.len();
    let surface_cells = voxel::count_occupied(&normalised, grid_res);
    let (interior_cells, fill_points) = if d.fill {
        crate::memory::refuse_fill_grid(v.path, grid_res, voxel::fill_host_bytes(grid_res))?;
        let fill = voxel::fill(&normalised, grid_res);
        (fill.interior_count, fill.points.len())
    } else {
        (0, 0)
    };
    let occupied_cells = surface_cells + interior_cells;
    let n_points = n_sim + fill_points;
    let rule = match (&d.count, d.fraction) {
        (Some(_), Some(_)) => {
            return Err(v.invalid(
                "drivers.fraction",
                "given together with `drivers.count`",
                "give one of `count` or `fraction`",
            ))
        }
        (Some(CountConfig::Word(w)), None) if w == "auto" => DriverCount::Auto,
        (Some(CountConfig::Word(w)), None) => {
            return Err(v.invalid(
                "drivers.count",
                format!("\"{w}\" is not a count"),
                format!(
                    "write count = \"auto\" ({AUTO_DRIVERS_PER_CELL} per occupied grid cell) or \
                     an integer ≥ 1"
                ),
            ))
        }
        (Some(CountConfig::Number(n)), None) if *n < 1 => {
            return Err(v.out_of_range("drivers.count", n, "must be ≥ 1 (or \"auto\")"))
        }
        (Some(CountConfig::Number(n)), None) => {
            DriverCount::Given(usize::try_from(*n).unwrap_or(usize::MAX))
        }
        (None, Some(f)) => {
            if !(f > 0.0 && f <= 1.0) {
                return Err(v.out_of_range("drivers.fraction", f, "must be in (0, 1]"));
            }
            DriverCount::Fraction(f)
        }
        (None, None) => DriverCount::Auto,
    };
    let count = match rule {
        DriverCount::Auto => AUTO_DRIVERS_PER_CELL * occupied_cells,
        DriverCount::Given(n) => n,
        DriverCount::Fraction(f) => ((f * n_sim as f64).round() as usize).max(1),
    }
    .min(n_points);
    if d.k != DRIVERS_PER_GAUSSIAN {
        return Err(v.out_of_range(
            "drivers.k",
            d.k,
            format!(
                "must be {DRIVERS_PER_GAUSSIAN}: each deformed Gaussian follows exactly its \
                 {DRIVERS_PER_GAUSSIAN} nearest drivers (the deformation's kernels are built for \
                 that k); fix: set `drivers.k = {DRIVERS_PER_GAUSSIAN}` or remove the line"
            ),
        ));
    }
    if d.k > count {
        return Err(v.invalid(
            "drivers.count",
            format!(
                "gives {count} driver(s), fewer than the {} nearest drivers each Gaussian \
                 follows (`drivers.k`)",
                d.k
            ),
            format!("set `drivers.count` to at least {}", d.k),
        ));
    }
    Ok(Drivers {
        count,
        rule,
        occupied_cells,
        interior_cells,
        fill_points,
        fill: d.fill,
        k: d.k,
        seed: d.seed,
    })
}
