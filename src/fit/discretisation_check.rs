//! How far the fitted E still is from its discretisation's limit, and E
//! at that limit (docs/design.md § Error bars, "From the discretisation"):
//! after the stages, E is fitted again on a grid of twice the nodes per
//! side, at twice the substeps per frame (or the finer grid's stability
//! minimum, when larger), with the drivers rebuilt for that grid
//! (src/fit/discretisation_grid.rs), from the fitted values carried onto
//! them (src/fit/discretisation_carry.rs) and the fit's curvature: E on
//! the last stiffness stage's frames (the exact gradient, as the stage)
//! and the velocity on the last velocity stage's (when its field is
//! fitted by L-BFGS; a velocity of the coarser discretisation would bias
//! E) in turn, E first, as the fit's rounds do
//! (src/fit/discretisation_round.rs), and Newton steps from a measured
//! Hessian as after the fit's own stages when the turns did not settle
//! (src/fit/exact_step.rs); then again a
//! level finer, from that level's values,
//! while the largest shift of an E parameter between two consecutive
//! levels is at or above [`DISCRETISATION_TOLERANCE`] (or that of a fitted
//! ν at or above [`POISSON_DISCRETISATION_TOLERANCE`]), for at most
//! `fit.discretisation_levels` levels. When the last shift is below the
//! tolerance the check has converged and the finest level's E is the
//! material's answer (the discretisation no longer moves it); otherwise
//! the fit's own E stands and the shifts are its error bar.
//!
//! Why the grid and the time step together: APIC's transfers lose a fixed
//! share of the velocity a particle's affine `(v, C)` cannot hold at
//! every substep, so on a fixed grid the damping per unit time grows as
//! the substeps do and the motion (and the E that matches the frames)
//! does not converge in the time step alone; refined together the motion
//! converges (docs/benchmarks.md, "The simulator against its own time
//! step, at a fixed E"). A level costs one stiffness stage at its
//! simulation's cost (8× the grid nodes, about 4–8× the drivers and at
//! least 2× the substeps per level); the rendering, most of an evaluation
//! on small grids, is unchanged.
//!
//! Each level builds its own [`FitProblem`] at its discretisation beside
//! the fit's (which the outputs still need), dropped when the level ends:
//! before each, the level's memory estimate ([`crate::budget`], at its
//! grid, drivers and substeps) is checked against the memory left then,
//! and a level that does not fit ends the check there
//! ([`RefinementEnd::Memory`]) rather than the fit.
//!
//! A fitted Poisson's ratio is refitted with E, and its shift counts:
//! on a drop E and ν trade along a curved valley of the loss.
//!
//! A `global` or `regions` field of at most
//! [`LBFGS_MAX_PARAMETERS`](super::plan::LBFGS_MAX_PARAMETERS) values, E's
//! and a fitted ν's together, is refitted by L-BFGS on the exact gradient,
//! a larger one by Adam (the stage's solver), and either is compared value
//! by value. A per-driver field is refitted by its stage's solver (Adam,
//! unless it has few drivers) from the previous level's field carried onto
//! the level's drivers (the nearest coarser driver's value,
//! src/fit/discretisation_carry.rs; src/fit/discretisation_refit.rs), and
//! compared by the median of `log10 E` over the free drivers
//! ([`YoungsStatistic::FreeDriverMedian`]): its values number as the
//! drivers do, and each is pinned by the regulariser as much as by the
//! frames, while the median is the field's level, which the
//! discretisation moves as it moves a global E. Its answer stays the
//! fit's own field (a level's field lives on other drivers), and the
//! median's shift is its error bar.

pub use super::discretisation::{DiscretisationCheck, RefinementEnd, YoungsStatistic};
#[cfg(doc)]
use super::discretisation::{DISCRETISATION_TOLERANCE, POISSON_DISCRETISATION_TOLERANCE};
pub use super::discretisation_round::{LevelRun, LevelStages};
use super::discretisation_round::refit_alternating;
use super::error::FitError;
use super::evaluation::Parameters;
use super::objective::by_lbfgs;
use super::observer::EvaluationHook;
use super::options::FitProblemOptions;
use super::plan::{last_stiffness, StageKind, StagePlan};
use super::problem::FitProblem;
use crate::budget::{estimate, MachineMemory, Workload};
use crate::drive::DriverSet;
use crate::gpu::GpuContext;
use crate::scene::{FieldSetting, Scene};
use std::time::Instant;
use crate::stop::StopSignal;

/// Why a fit's discretisation was not checked, when it was not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotChecked {
    /// The plan fits no stiffness stage.
    NoStiffnessStage,
}

/// The stage whose E the check refits after `plan` (the last stiffness
/// stage), and what it compares from level to level: the median over the
/// free drivers for a per-driver `youngs_field` (whose values number as
/// the drivers do), each E parameter otherwise (module doc). The refit's
/// solver follows the stage's (by the number of values, [`by_lbfgs`]).
pub fn checkable<'a>(
    plan: &'a [StagePlan],
    youngs_field: &FieldSetting,
) -> Result<(&'a StagePlan, YoungsStatistic), NotChecked> {
    let stage = last_stiffness(plan).ok_or(NotChecked::NoStiffnessStage)?;
    let statistic = match youngs_field {
        FieldSetting::Drivers => YoungsStatistic::FreeDriverMedian,
        _ => YoungsStatistic::Parameters,
    };
    Ok((stage, statistic))
}

/// Whether a level's scene (`level`, src/fit/discretisation_grid.rs: its
/// grid, drivers and substeps) fits the memory left now, beside the fit's
/// own problem (module doc): the refusal's text when it does not.
pub fn level_fits_memory(ctx: &GpuContext, level: &Scene) -> Result<(), String> {
    estimate(level, &Workload::Fit)
        .check(&level.path, &MachineMemory::of_context(ctx))
        .map_err(|e| e.to_string())
}

/// The plan's last velocity stage, when a level refits the velocity of a
/// `velocity_field` (module doc: not a per-driver field).
pub fn refitted_velocity<'a>(
    plan: &'a [StagePlan],
    velocity_field: &FieldSetting,
    params: &Parameters,
) -> Option<&'a StagePlan> {
    let per_driver = matches!(velocity_field, FieldSetting::Drivers);
    let stage = plan.iter().rev().find(|p| p.kind == StageKind::Velocity)?;
    match per_driver || !by_lbfgs(stage.kind, params) {
        true => None,
        false => Some(stage),
    }
}

/// Refits a level (module doc): on the level's scene `level` (its grid and
/// substeps) and `drivers` (built for that grid), from `from` (the previous
/// level's values, carried onto `drivers`), E and the velocity in turn as
/// `stages` says (src/fit/discretisation_round.rs); the first refit's loss
/// differs from the previous level's by the discretisation alone. Stops at
/// `stop`, and after the accepted step that passes `deadline` (the check's
/// time budget; no further refit starts once it is spent); `hook` is told
/// of each evaluation.
#[allow(clippy::too_many_arguments)]
pub fn refit_level(
    ctx: &GpuContext,
    level: &Scene,
    drivers: &DriverSet,
    stages: &LevelStages<'_>,
    from: &Parameters,
    stop: Option<&StopSignal>,
    deadline: Option<Instant>,
    hook: EvaluationHook<'_>,
) -> Result<LevelRun, FitError> {
    let started = std::time::Instant::now();
    let options = FitProblemOptions::from_scene(level, drivers, &level.fit.velocity)?;
    let mut problem = FitProblem::from_drivers(ctx, level, drivers.clone(), &options)?;
    if let Some(stop) = stop {
        problem.set_stop(stop.clone());
    }
    let blew_up = || FitError::StartBlewUp {
        stage: format!(
            "the discretisation check at grid {}, {} drivers, {} substeps per frame",
            level.simulation.grid_res,
            drivers.len(),
            level.simulation.substeps
        ),
    };
    refit_alternating(
        ctx, &mut problem, level, stages, from, started, deadline, hook, &blew_up,
    )
}

