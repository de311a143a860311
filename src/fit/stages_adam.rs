//! A stage of more than [`super::plan::LBFGS_MAX_PARAMETERS`] parameters
//! (a per-driver field), solved by Adam ([`crate::solve::adam`]), one
//! record per step (docs/design.md § Loss, parameters, fit).

use std::cell::RefCell;

use super::error::FitError;
use super::evaluation::Parameters;
use super::objective::{Remember, StageObjective, Unknowns};
use super::observer::{EvaluationDone, EvaluationPurpose, FitObserver};
use super::plan::StagePlan;
use super::problem::FitProblem;
use super::record::{record, stage_losses, stage_records, IterationRecord};
use super::stages_count::{evaluations_so_far, Counted, StageEnd};
use super::state::FitState;
use crate::gpu::GpuContext;
use crate::solve::adam::{AdamError, AdamObjective};
use crate::solve::{execute, AdamSolver, Ending};

/// Halvings of the rate an Adam step may need before the fit gives up.
pub const MAX_REJECTIONS: u32 = 8;

/// The Adam solver of `stage` (its schedule, clipping and tolerance) from
/// `params`, named `label` in its warnings: E clamped to `range`, ν's `z`
/// after it free (its sigmoid bounds ν), the velocity unbounded.
pub(super) fn adam_solver(
    stage: &StagePlan,
    params: &Parameters,
    range: [f64; 2],
    label: String,
) -> AdamSolver {
    let bounds = match Unknowns::of(stage.kind) {
        Unknowns::Velocity => Vec::new(),
        Unknowns::Youngs => vec![(range[0], range[1]); params.log10_youngs.len()],
    };
    AdamSolver {
        schedule: stage.schedule(),
        grad_clip: stage.settings.grad_clip,
        bounds,
        tolerance: stage.settings.tolerance,
        max_rejections: MAX_REJECTIONS,
        label,
    }
}

/// A large stage by Adam ([`crate::solve::adam`]): one record per step,
/// the loss at the point it started from; rejected steps (a blown-up
/// simulation) retried at half the rate, at most [`MAX_REJECTIONS`]
/// times. A resumed stage re-evaluates the checkpointed point and keeps
/// the checkpointed moments.
pub(super) fn run_adam_stage(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    state: &mut FitState,
    range: [f64; 2],
    observer: &mut dyn FitObserver,
) -> Result<StageEnd, FitError> {
    let unknowns = Unknowns::of(stage.kind);
    let base = state.parameters();
    let x0 = unknowns.get(&base);
    let mut solver = adam_solver(stage, &base, range, stage.label());
    let observer = RefCell::new(observer);
    let hook = |done: &EvaluationDone| observer.borrow_mut().evaluation_done(stage, done);
    let mut objective = StageObjective::of_stage(ctx, problem, stage, base, Remember::Last)
        .reporting(&hook, EvaluationPurpose::Stage);
    let losses = stage_losses(&state.records, stage);
    let started = solver.start(
        &mut objective,
        x0,
        state.adam.clone(),
        state.iteration,
        losses,
    )?;
    let Some(mut run) = started else {
        return Err(FitError::StartBlewUp {
            stage: stage.label(),
        });
    };
    // The report at the point the next step starts from.
    let mut report = objective
        .first_seen()
        .map(|(_, r, _)| r.clone())
        .expect("a usable start is kept");
    let ending = execute(
        &mut solver,
        &mut AdamObjective(&mut objective),
        &mut run,
        |objective, run| {
            let step = run.last_step.expect("an iteration takes a step");
            state.records.push(IterationRecord {
                learning_rate: step.rate,
                rejected: step.rejected,
                ..record(stage, state.iteration, &report, step.grad_norm)
            });
            let (_, now, _) = objective.0.seen(&run.x).expect("the step's point is kept");
            report = now.clone();
            state.adam = run.moments.clone();
            let mut p = state.parameters();
            unknowns.set(&mut p, &run.x);
            (state.velocity, state.log10_youngs, state.poisson) =
                (p.velocity, p.log10_youngs, p.poisson);
            state.iteration = run.iteration;
            observer.borrow_mut().iteration_done(stage, state)
        },
    )
    .map_err(|e| match e {
        AdamError::Objective(e) => e,
        AdamError::Rejected(r) => FitError::StepRejected {
            stage: stage.label(),
            iteration: r.iteration,
            halvings: r.halvings,
        },
    })?;
    let converged = match ending {
        Ending::Stopped => return Ok(None),
        Ending::Ended { converged } => converged,
    };
    let counted = Counted {
        steps: stage_records(&state.records, stage).count() as u32,
        evaluations: evaluations_so_far(stage, state),
    };
    Ok(Some((report, converged, counted)))
}
