//! A fit's stages run in order around [`FitProblem::evaluate`]
//! (docs/design.md § Loss, parameters, fit): each stage is its group of
//! parameters as an objective ([`super::objective`]) under one of the
//! solvers of [`crate::solve`], run by its executor: the coarse scan
//! ([`super::scan`]), L-BFGS for a field of at most
//! [`LBFGS_MAX_PARAMETERS`] parameters, Adam for a larger one. After each
//! iteration the [`FitState`] is whole (parameters, the solver's state,
//! the records), and the observer is told: a checkpoint written then
//! continues as an uninterrupted fit would.
//!
//! A round whose stiffness loss gained less than [`ROUND_TOLERANCE`] over
//! the previous round's ends the fit: the stages left are skipped.

use std::time::Instant;

use super::error::FitError;
use super::evaluation::LossReport;
use super::objective::{Remember, Seen, StageObjective, Unknowns};
use super::observer::{FinishedStage, FitObserver};
use super::plan::{StageKind, StagePlan, LBFGS_MAX_PARAMETERS, STIFFNESS_FIRST_STEP};
use super::problem::FitProblem;
use super::record::{record, stage_losses, IterationRecord};
use super::scan::run_scan;
use super::state::{FitState, LbfgsCheckpoint};
use crate::gpu::GpuContext;
use crate::solve::adam::{AdamError, AdamObjective};
use crate::solve::{execute, Adam, AdamSolver, Ending, Lbfgs, LbfgsSettings, LbfgsStart};

/// Halvings of the rate an Adam step may need before the fit gives up.
pub const MAX_REJECTIONS: u32 = 8;

/// Further rounds stop when a round's final stiffness loss is less than
/// this fraction below the previous round's.
pub const ROUND_TOLERANCE: f64 = 2e-2;

/// How [`run_fit`] ended.
#[derive(Clone, Debug, PartialEq)]
pub enum FitEnd {
    /// Every stage ran; the loss of the final parameters on the last stage.
    Finished(Option<LossReport>),
    /// The observer stopped it.
    Stopped,
}

/// How one stage ended: its final report and whether it converged; `None`
/// when the observer stopped it.
type StageEnd = Option<(LossReport, bool)>;

/// Runs the fit from `state` through the end of `plan` (module doc),
/// telling `observer` as it goes. `bounds` is `material.log10_youngs_range`.
pub fn run_fit(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    plan: &[StagePlan],
    state: &mut FitState,
    bounds: [f64; 2],
    observer: &mut dyn FitObserver,
) -> Result<FitEnd, FitError> {
    match run_stages(ctx, problem, plan, state, bounds, observer) {
        // A stop asked during an evaluation: `state` holds the last
        // complete iteration (every stage updates it only once an
        // iteration is whole).
        Err(FitError::Stopped) => Ok(FitEnd::Stopped),
        other => other,
    }
}

fn run_stages(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    plan: &[StagePlan],
    state: &mut FitState,
    bounds: [f64; 2],
    observer: &mut dyn FitObserver,
) -> Result<FitEnd, FitError> {
    let mut last_report = None;
    while let Some(stage) = plan.get(state.stage) {
        problem.set_stage(&stage.settings)?;
        observer.stage_started(stage, state);
        let started = Instant::now();
        let stage_len = Unknowns::of(stage.kind).get(&state.parameters()).len();
        let end = if stage.kind == StageKind::Scan {
            let mut step = |s: &FitState| observer.iteration_done(stage, s);
            run_scan(ctx, problem, stage, state, &mut step)?.map(|report| (report, true))
        } else if stage_len <= LBFGS_MAX_PARAMETERS {
            run_lbfgs_stage(ctx, problem, stage, state, bounds, observer)?
        } else {
            run_adam_stage(ctx, problem, stage, state, bounds, observer)?
        };
        let Some((report, converged)) = end else {
            return Ok(FitEnd::Stopped);
        };
        let index = state.converged.len();
        finish_stage(plan, stage, state, converged, &report);
        let finished = FinishedStage {
            final_loss: &report,
            seconds: started.elapsed().as_secs_f64(),
            iterations: stage_losses(&state.records, stage).len() as u32,
            converged,
            rounds_converged: state.converged.len() > index + 1,
            recovery: None,
        };
        observer.stage_finished(stage, state, &finished);
        last_report = Some(report);
    }
    Ok(FitEnd::Finished(last_report))
}

/// Ends `stage` in `state`: the next stage's Adam, the stage's outcome and,
/// when a round gained too little over the previous one, the rounds left
/// skipped (they count as converged).
fn finish_stage(
    plan: &[StagePlan],
    stage: &StagePlan,
    state: &mut FitState,
    converged: bool,
    report: &LossReport,
) {
    state.stage += 1;
    state.iteration = 0;
    state.lbfgs = None;
    state.adam = Adam::new(state.stage_params(plan).map_or(0, <[f64]>::len));
    state.converged.push(converged);
    state.stage_losses.push(report.loss);
    if stage.kind == StageKind::Stiffness && stage.round > 1 {
        let previous = plan[..state.stage - 1]
            .iter()
            .zip(&state.stage_losses)
            .rev()
            .find(|(p, _)| p.kind == StageKind::Stiffness && p.round == stage.round - 1)
            .map(|(_, &l)| l);
        if previous.is_some_and(|p| p - report.loss <= ROUND_TOLERANCE * p.abs()) {
            while state.stage < plan.len() {
                state.stage += 1;
                state.converged.push(true);
                state.stage_losses.push(report.loss);
            }
        }
    }
}

/// A large stage by Adam ([`crate::solve::adam`]): one record per step,
/// the loss at the point it started from; rejected steps (a blown-up
/// simulation) retried at half the rate, at most [`MAX_REJECTIONS`]
/// times. A resumed stage re-evaluates the checkpointed point and keeps
/// the checkpointed moments.
fn run_adam_stage(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    state: &mut FitState,
    range: [f64; 2],
    observer: &mut dyn FitObserver,
) -> Result<StageEnd, FitError> {
    let unknowns = Unknowns::of(stage.kind);
    let base = state.parameters();
    let x0 = unknowns.get(&base).to_vec();
    let mut objective = StageObjective::of_stage(ctx, problem, stage, base, Remember::Last);
    let mut solver = AdamSolver {
        schedule: stage.schedule(),
        grad_clip: stage.settings.grad_clip,
        bounds: match unknowns {
            Unknowns::Velocity => None,
            Unknowns::Youngs => Some((range[0], range[1])),
        },
        tolerance: stage.settings.tolerance,
        max_rejections: MAX_REJECTIONS,
        label: stage.label(),
    };
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
            match unknowns {
                Unknowns::Velocity => state.velocity.clone_from(&run.x),
                Unknowns::Youngs => state.log10_youngs.clone_from(&run.x),
            }
            state.iteration = run.iteration;
            observer.iteration_done(stage, state)
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
    if stage.kind == StageKind::Stiffness {
        state.youngs_gradient_rms = Some(state.adam.gradient_scale());
    }
    Ok(Some((report, converged)))
}

/// A low-dimensional stage by L-BFGS ([`LBFGS_MAX_PARAMETERS`]): one record
/// and one observer call per accepted step, the stage's `iterations` a cap
/// on evaluations (line-search trials included), in the scaled
/// coordinates of [`super::objective`]. A checkpoint taken inside the
/// stage continues its solver exactly ([`LbfgsCheckpoint`]).
fn run_lbfgs_stage(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    state: &mut FitState,
    range: [f64; 2],
    observer: &mut dyn FitObserver,
) -> Result<StageEnd, FitError> {
    let unknowns = Unknowns::of(stage.kind);
    let base = state.parameters();
    let n = unknowns.get(&base).len();
    let (scale, bounds) = match unknowns {
        Unknowns::Velocity => (stage.first_step, (f64::NEG_INFINITY, f64::INFINITY)),
        Unknowns::Youngs => (STIFFNESS_FIRST_STEP, (range[0], range[1])),
    };
    let x0 = unknowns.get(&base).to_vec();
    let mut objective =
        StageObjective::of_stage(ctx, problem, stage, base, Remember::All).scaled(vec![scale; n]);
    let z0 = objective.to_solver(&x0);
    let mut solver = Lbfgs {
        settings: LbfgsSettings {
            max_evaluations: stage.settings.iterations.max(2),
            first_step: 1.0,
            relative_tolerance: stage.settings.tolerance / 2.0,
            bounds: vec![(bounds.0 / scale, bounds.1 / scale); n],
            ..LbfgsSettings::default()
        },
    };
    let resumed = state
        .lbfgs
        .take()
        .filter(|c| state.iteration > 0 && c.squares.len() == n);
    // Per parameter, the sum of squared gradients at the recorded points.
    let mut squares = resumed
        .as_ref()
        .map_or_else(|| vec![0.0; n], |c| c.squares.clone());
    let mut start_recorded = resumed.is_some();
    let start = match resumed {
        Some(c) => LbfgsStart::Resume(c.solver),
        None => LbfgsStart::At(&z0),
    };
    let Some(mut run) = solver.start(&mut objective, start)? else {
        return Err(FitError::StartBlewUp {
            stage: stage.label(),
        });
    };
    let ending = execute(&mut solver, &mut objective, &mut run, |objective, run| {
        if !start_recorded {
            let start = objective.seen(&z0);
            push_record(start, stage, state, &mut squares);
            start_recorded = true;
        }
        push_record(objective.seen(&run.x), stage, state, &mut squares);
        let p = objective.parameters(&run.x);
        state.velocity = p.velocity;
        state.log10_youngs = p.log10_youngs;
        state.lbfgs = Some(LbfgsCheckpoint {
            solver: run.clone(),
            squares: squares.clone(),
        });
        observer.iteration_done(stage, state)
    })?;
    let converged = match ending {
        Ending::Stopped => return Ok(None),
        Ending::Ended { converged } => converged,
    };
    log::debug!(
        "{}: {} evaluations ({} line-search trials), {} gradients never used",
        stage.label(),
        run.evaluations,
        run.evaluations.saturating_sub(1),
        run.unused_gradients
    );
    if !start_recorded {
        // No step was taken: the start's record stands for the stage.
        push_record(objective.first_seen(), stage, state, &mut squares);
    }
    let p = objective.parameters(&run.x);
    state.velocity = p.velocity;
    state.log10_youngs = p.log10_youngs;
    let kept = objective.seen(&run.x).map(|(_, r, _)| r.clone());
    drop(objective);
    let report = match kept {
        Some(r) => r,
        None => problem.loss(ctx, &state.parameters(), &stage.selection)?,
    };
    if unknowns == Unknowns::Youngs {
        let n = stage_losses(&state.records, stage).len().max(1) as f64;
        state.youngs_gradient_rms = Some(squares.iter().map(|s| (s / n).sqrt()).collect());
    }
    Ok(Some((report, converged)))
}

/// Records an accepted point of an L-BFGS stage (when its evaluation was
/// kept) and adds its squared gradient to `squares`.
fn push_record(seen: Option<&Seen>, stage: &StagePlan, state: &mut FitState, squares: &mut [f64]) {
    let Some((_, report, grad)) = seen else {
        return;
    };
    let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
    for (s, g) in squares.iter_mut().zip(grad) {
        *s += g * g;
    }
    state
        .records
        .push(record(stage, state.iteration, report, norm));
    state.iteration += 1;
}
