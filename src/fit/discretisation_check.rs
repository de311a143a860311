//! How far the fitted E still is from its discretisation's limit
//! (docs/design.md § Error bars, "From the discretisation"): after the
//! stages, E is fitted again at twice the substeps per frame, from the
//! fitted values, with the velocity held; the shift of each E parameter
//! between the two is the discretisation's error bar, and the fit has
//! converged in its discretisation when every shift is below
//! [`DISCRETISATION_TOLERANCE`].
//!
//! Why substeps: of the discretisation's parts, the time step is the one
//! that moves the loss's optimum in E on the twins (0.1–0.4 decades per
//! doubling, docs/benchmarks.md "What moves E: the discretisation"); the
//! drivers settle at 8 per occupied cell (the default), and a finer grid
//! changes the anchoring, not only the resolution. The check costs one
//! stiffness stage at about twice the simulation's cost; the rendering,
//! most of an evaluation, is unchanged.
//!
//! A fitted Poisson's ratio is refitted with E (its shift is not
//! reported: E's is the question). Only a field of at most
//! [`LBFGS_MAX_PARAMETERS`] E values is checked
//! (global or regions, fitted by L-BFGS): a per-driver field's values are
//! pinned by the regulariser as much as by the frames, and their shift
//! would measure both.

pub use super::discretisation::{
    DiscretisationCheck, DISCRETISATION_TOLERANCE, SUBSTEP_REFINEMENT,
};
use super::error::FitError;
use super::objective::{Remember, StageObjective, Unknowns};
use super::observer::{EvaluationHook, EvaluationPurpose};
use super::options::FitProblemOptions;
use super::plan::{StageKind, StagePlan, LBFGS_MAX_PARAMETERS};
use super::problem::FitProblem;
use super::stages::{lbfgs_coordinates, warm_start};
use super::state::FitState;
use crate::drive::DriverSet;
use crate::gpu::GpuContext;
use crate::scene::Scene;
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

/// Refits E of the fitted `state` at [`SUBSTEP_REFINEMENT`] times `scene`'s substeps
/// (module doc), from the fitted `state`'s values and its last stiffness
/// curvature (the refit's loss differs from the fit's by the time step
/// alone), stopping at
/// `stop`, `hook` told of each evaluation.
pub fn check_discretisation(
    ctx: &GpuContext,
    scene: &Scene,
    drivers: &DriverSet,
    plan: &[StagePlan],
    state: &FitState,
    stop: Option<&StopSignal>,
    hook: EvaluationHook<'_>,
) -> Result<Result<DiscretisationCheck, NotChecked>, FitError> {
    let params = &state.parameters();
    let Some(stage) = last_stiffness(plan) else {
        return Ok(Err(NotChecked::NoStiffnessStage));
    };
    let n = params.log10_youngs.len();
    if n > LBFGS_MAX_PARAMETERS {
        return Ok(Err(NotChecked::PerDriverField));
    }
    let started = std::time::Instant::now();
    let mut refined = scene.clone();
    refined.simulation.substeps = scene.simulation.substeps * SUBSTEP_REFINEMENT;
    let options = FitProblemOptions::from_scene(&refined, drivers, &refined.fit.velocity)?;
    let mut problem = FitProblem::from_drivers(ctx, &refined, drivers.clone(), &options)?;
    problem.set_stage(&stage.settings)?;
    if let Some(stop) = stop {
        problem.set_stop(stop.clone());
    }
    let range = scene.material.log10_youngs_range;
    let (scale, bounds) = lbfgs_coordinates(Unknowns::Youngs, stage, params, range);
    let mut objective =
        StageObjective::of_stage(ctx, &mut problem, stage, params.clone(), Remember::All)
            .scaled(scale)
            .reporting(hook, EvaluationPurpose::Stage);
    let z0 = objective.to_solver(&Unknowns::Youngs.get(params));
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
            stage: "the discretisation check".into(),
        });
    };
    warm_start(&mut run, state.curvature_of(StageKind::Stiffness));
    let start_loss = run.loss;
    execute(&mut solver, &mut objective, &mut run, |_, _| {
        Control::Continue
    })?;
    let refitted = objective.parameters(&run.x).log10_youngs;
    let shift: Vec<f64> = refitted
        .iter()
        .zip(&params.log10_youngs)
        .map(|(r, f)| r - f)
        .collect();
    let largest_shift = shift.iter().fold(0.0f64, |m, s| m.max(s.abs()));
    Ok(Ok(DiscretisationCheck {
        substeps: scene.simulation.substeps,
        refined_substeps: refined.simulation.substeps,
        refined_log10_youngs: refitted,
        shift,
        largest_shift,
        tolerance: DISCRETISATION_TOLERANCE,
        converged: largest_shift < DISCRETISATION_TOLERANCE,
        loss: [start_loss, run.loss],
        evaluations: run.evaluations,
        seconds: started.elapsed().as_secs_f64(),
    }))
}
