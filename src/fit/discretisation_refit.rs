//! One stage of a discretisation check's level refitted on the level's
//! problem (src/fit/discretisation_check.rs): by L-BFGS, warm-started with
//! the curvature the previous level or the fit's stage ended with, for a
//! field of at most [`LBFGS_MAX_PARAMETERS`] values; by Adam, from fresh
//! moments with the stage's own schedule, for a larger one (a per-driver
//! field), whose start, the previous level's field carried onto the
//! level's drivers, is already near its optimum, so the stage's
//! convergence test ends it soon after the warm-up. Either stops after the
//! accepted step that passes the check's deadline.

use super::error::FitError;
use super::evaluation::Parameters;
use super::objective::{Remember, StageObjective, Unknowns};
use super::observer::{EvaluationHook, EvaluationPurpose};
#[cfg(doc)]
use super::plan::LBFGS_MAX_PARAMETERS;
use super::plan::StagePlan;
use super::problem::FitProblem;
use super::stages_adam::adam_solver;
use super::stages_lbfgs::lbfgs_coordinates;
use super::stages_lbfgs::warm_start;
use crate::gpu::GpuContext;
use crate::solve::adam::{Adam, AdamError, AdamObjective};
use crate::solve::lbfgs::CurvaturePair;
use crate::solve::{execute, Control, Ending, Lbfgs, LbfgsSettings, LbfgsStart};
use std::time::Instant;

/// Whether `deadline` has passed.
pub(super) fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// One stage's unknowns refitted by L-BFGS on `problem` from `from`,
/// warm-started with `pairs` (kept when the refit adds none), stopped
/// after the accepted step that passes `deadline`; `None` when the start
/// blew up.
#[allow(clippy::too_many_arguments)]
pub(super) fn refit_stage(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    from: &Parameters,
    pairs: &[CurvaturePair],
    range: [f64; 2],
    deadline: Option<Instant>,
    hook: EvaluationHook<'_>,
) -> Result<Option<StageRefit>, FitError> {
    problem.set_stage(&stage.settings)?;
    let unknowns = Unknowns::of(stage.kind);
    let (scale, bounds) = lbfgs_coordinates(unknowns, stage, from, range);
    let mut objective = StageObjective::of_stage(ctx, problem, stage, from.clone(), Remember::All)
        .scaled(scale)
        .reporting(hook, EvaluationPurpose::Stage);
    let z0 = objective.to_solver(&unknowns.get(from));
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
        return Ok(None);
    };
    warm_start(&mut run, pairs);
    let start_loss = run.loss;
    // Spent before this stage began (the velocity's refit took it): the
    // start's evaluation is all it gets.
    let ending = match past(deadline) {
        true => Ending::Stopped,
        false => execute(&mut solver, &mut objective, &mut run, |_, _| {
            match past(deadline) {
                true => Control::Stop,
                false => Control::Continue,
            }
        })?,
    };
    Ok(Some(StageRefit {
        stopped: ending == Ending::Stopped,
        params: objective.parameters(&run.x),
        loss: [start_loss, run.loss],
        evaluations: run.evaluations,
        pairs: match run.pairs.is_empty() {
            true => pairs.to_vec(),
            false => run.pairs.clone(),
        },
    }))
}

/// What a stage's refit found.
pub(super) struct StageRefit {
    /// The deadline stopped it.
    pub stopped: bool,
    /// The refitted values.
    pub params: Parameters,
    /// The loss at its start, then at its end.
    pub loss: [f64; 2],
    /// Evaluations it took.
    pub evaluations: u32,
    /// The curvature it ended with (L-BFGS's; the start's, unchanged, for
    /// Adam, which keeps none).
    pub pairs: Vec<CurvaturePair>,
}

/// One stage's unknowns refitted by Adam on `problem` from `from` (module
/// doc), stopped after the step that passes `deadline`; `None` when the
/// start blew up. `pairs`, which Adam does not use, are handed on.
#[allow(clippy::too_many_arguments)]
pub(super) fn refit_stage_by_adam(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    from: &Parameters,
    pairs: &[CurvaturePair],
    range: [f64; 2],
    deadline: Option<Instant>,
    hook: EvaluationHook<'_>,
) -> Result<Option<StageRefit>, FitError> {
    problem.set_stage(&stage.settings)?;
    let unknowns = Unknowns::of(stage.kind);
    let x0 = unknowns.get(from);
    let label = format!("the discretisation check's {}", stage.label());
    let mut solver = adam_solver(stage, from, range, label.clone());
    let mut objective = StageObjective::of_stage(ctx, problem, stage, from.clone(), Remember::Last)
        .reporting(hook, EvaluationPurpose::Stage);
    let n = x0.len();
    let Some(mut run) = solver.start(&mut objective, x0, Adam::new(n), 0, Vec::new())? else {
        return Ok(None);
    };
    let start_loss = run.loss;
    let mut evaluations = 1;
    let ending = match past(deadline) {
        true => Ending::Stopped,
        false => execute(
            &mut solver,
            &mut AdamObjective(&mut objective),
            &mut run,
            |_, _| {
                evaluations += 1;
                match past(deadline) {
                    true => Control::Stop,
                    false => Control::Continue,
                }
            },
        )
        .map_err(|e| match e {
            AdamError::Objective(e) => e,
            AdamError::Rejected(r) => FitError::StepRejected {
                stage: label.clone(),
                iteration: r.iteration,
                halvings: r.halvings,
            },
        })?,
    };
    Ok(Some(StageRefit {
        stopped: ending == Ending::Stopped,
        params: objective.parameters(&run.x),
        loss: [start_loss, run.loss],
        evaluations,
        pairs: pairs.to_vec(),
    }))
}
