//! How far the fitted E still is from its discretisation's limit, and E
//! at that limit (docs/design.md § Error bars, "From the discretisation"):
//! after the stages, E is fitted again at twice the substeps per frame,
//! from the fitted values and curvature, with the velocity held; then
//! again at twice those, from that level's values and curvature, while
//! the largest shift of an E parameter between two consecutive levels is
//! at or above [`DISCRETISATION_TOLERANCE`], for at most
//! `fit.discretisation_levels` levels. When the last shift is below the
//! tolerance the check has converged and the finest level's E is the
//! material's answer (the time step no longer moves it); otherwise the
//! fit's own E stands and the shifts are its error bar.
//!
//! Why substeps: of the discretisation's parts, the time step is the one
//! that moves the loss's optimum in E on the twins (0.1–0.4 decades per
//! doubling, docs/benchmarks.md "What moves E: the discretisation"); the
//! drivers settle at 8 per occupied cell (the default), and a finer grid
//! changes the anchoring, not only the resolution. Refining only raises
//! the substeps, so the explicit time-step bound the scene's substeps
//! satisfy holds at every level. A level costs one stiffness stage at
//! 2^k times the simulation's cost; the rendering, most of an
//! evaluation, is unchanged.
//!
//! Each level builds its own [`FitProblem`] at its substeps beside the
//! fit's (which the outputs still need), dropped when the level ends:
//! before each, the level's memory estimate ([`crate::budget`]) is
//! checked against the memory left then, and a level that does not fit
//! ends the check there ([`RefinementEnd::Memory`]) rather than the fit.
//!
//! A fitted Poisson's ratio is refitted with E (its shift is not
//! reported: E's is the question). Only a field of at most
//! [`LBFGS_MAX_PARAMETERS`] E values is checked
//! (global or regions, fitted by L-BFGS): a per-driver field's values are
//! pinned by the regulariser as much as by the frames, and their shift
//! would measure both.

pub use super::discretisation::{DiscretisationCheck, RefinementEnd, SUBSTEP_REFINEMENT};
use super::error::FitError;
use super::evaluation::Parameters;
use super::objective::{Remember, StageObjective, Unknowns};
use super::observer::{EvaluationHook, EvaluationPurpose};
use super::options::FitProblemOptions;
use super::plan::{StageKind, StagePlan, LBFGS_MAX_PARAMETERS};
use super::problem::FitProblem;
use super::stages_lbfgs::{lbfgs_coordinates, warm_start};
use crate::budget::{estimate, MachineMemory, Workload};
use crate::drive::DriverSet;
use crate::gpu::GpuContext;
use crate::scene::Scene;
use crate::solve::lbfgs::CurvaturePair;
use crate::solve::{execute, Control, Lbfgs, LbfgsSettings, LbfgsStart};
use crate::stop::StopSignal;

/// Why a fit's discretisation was not checked, when it was not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotChecked {
    /// E is a per-driver field (module doc).
    PerDriverField,
    /// The plan fits no stiffness stage.
    NoStiffnessStage,
}

/// The plan's last stiffness stage: the refit's frames, settings and flow.
pub fn last_stiffness(plan: &[StagePlan]) -> Option<&StagePlan> {
    plan.iter().rev().find(|p| p.kind == StageKind::Stiffness)
}

/// Whether the check can measure `params`' E after `plan` (module doc).
pub fn checkable<'a>(
    plan: &'a [StagePlan],
    params: &Parameters,
) -> Result<&'a StagePlan, NotChecked> {
    let stage = last_stiffness(plan).ok_or(NotChecked::NoStiffnessStage)?;
    match params.log10_youngs.len() > LBFGS_MAX_PARAMETERS {
        true => Err(NotChecked::PerDriverField),
        false => Ok(stage),
    }
}

/// The substeps per frame of the level after one at `substeps`; `None`
/// past `u32`.
pub fn refined(substeps: u32) -> Option<u32> {
    substeps.checked_mul(SUBSTEP_REFINEMENT)
}

/// `scene` at `substeps` per frame.
fn at_substeps(scene: &Scene, substeps: u32) -> Scene {
    let mut refined = scene.clone();
    refined.simulation.substeps = substeps;
    refined
}

/// Whether a level at `substeps` fits the memory left now, beside the
/// fit's own problem (module doc): the refusal's text when it does not.
pub fn level_fits_memory(ctx: &GpuContext, scene: &Scene, substeps: u32) -> Result<(), String> {
    estimate(&at_substeps(scene, substeps), &Workload::Fit)
        .check(&scene.path, &MachineMemory::of_context(ctx))
        .map_err(|e| e.to_string())
}

/// One level refitted (module doc).
pub struct LevelRun {
    /// The refitted values (E and a fitted ν; the velocity held).
    pub params: Parameters,
    /// The loss at the start values, then at the refitted ones.
    pub loss: [f64; 2],
    /// Evaluations it took.
    pub evaluations: u32,
    /// Its wall seconds.
    pub seconds: f64,
    /// The curvature it ended with, for the next level's start.
    pub pairs: Vec<CurvaturePair>,
}

/// Refits E of `from` (the previous level's values) at `substeps` per
/// frame on `stage`'s frames and settings, starting from the curvature
/// `pairs` (the refit's loss differs from the previous level's by the time
/// step alone), stopping at `stop`, `hook` told of each evaluation.
#[allow(clippy::too_many_arguments)]
pub fn refit_level(
    ctx: &GpuContext,
    scene: &Scene,
    drivers: &DriverSet,
    stage: &StagePlan,
    from: &Parameters,
    pairs: &[CurvaturePair],
    substeps: u32,
    stop: Option<&StopSignal>,
    hook: EvaluationHook<'_>,
) -> Result<LevelRun, FitError> {
    let started = std::time::Instant::now();
    let refined = at_substeps(scene, substeps);
    let options = FitProblemOptions::from_scene(&refined, drivers, &refined.fit.velocity)?;
    let mut problem = FitProblem::from_drivers(ctx, &refined, drivers.clone(), &options)?;
    problem.set_stage(&stage.settings)?;
    if let Some(stop) = stop {
        problem.set_stop(stop.clone());
    }
    let range = scene.material.log10_youngs_range;
    let (scale, bounds) = lbfgs_coordinates(Unknowns::Youngs, stage, from, range);
    let mut objective =
        StageObjective::of_stage(ctx, &mut problem, stage, from.clone(), Remember::All)
            .scaled(scale)
            .reporting(hook, EvaluationPurpose::Stage);
    let z0 = objective.to_solver(&Unknowns::Youngs.get(from));
    let mut solver = Lbfgs {
        settings: LbfgsSettings {
            max_evaluations: stage.settings.iterations,
            first_step: 1.0,
            relative_tolerance: stage.settings.tolerance / 2.0,
            bounds,
            eager_gradient: false,
            ..LbfgsSettings::default()
        },
    };
    let Some(mut run) = solver.start(&mut objective, LbfgsStart::At(&z0))? else {
        return Err(FitError::StartBlewUp {
            stage: format!("the discretisation check at {substeps} substeps per frame"),
        });
    };
    warm_start(&mut run, pairs);
    let start_loss = run.loss;
    execute(&mut solver, &mut objective, &mut run, |_, _| {
        Control::Continue
    })?;
    Ok(LevelRun {
        params: objective.parameters(&run.x),
        loss: [start_loss, run.loss],
        evaluations: run.evaluations,
        seconds: started.elapsed().as_secs_f64(),
        pairs: match run.pairs.is_empty() {
            true => pairs.to_vec(),
            false => run.pairs.clone(),
        },
    })
}
