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

use std::cell::RefCell;
use std::time::Instant;

use super::error::FitError;
use super::evaluation::{LossReport, Parameters};
use super::objective::{Remember, Seen, StageObjective, Unknowns};
use super::observer::{EvaluationDone, EvaluationPurpose, FinishedStage, FitObserver};
use super::plan::{StageKind, StagePlan, LBFGS_MAX_PARAMETERS, STIFFNESS_FIRST_STEP};
use super::poisson::{POISSON_FIRST_STEP, Z_BOUND};
use super::problem::FitProblem;
use super::record::{record, stage_losses, stage_records, IterationRecord};
use super::scan::run_scan;
use super::state::{CappedStage, FitState, LbfgsCheckpoint, StageTally};
use crate::gpu::GpuContext;
use crate::solve::adam::{AdamError, AdamObjective};
use crate::solve::lbfgs::CurvaturePair;
use crate::solve::{
    execute, Adam, AdamSolver, Ending, Lbfgs, LbfgsSettings, LbfgsStart, LbfgsState,
};

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

/// How one stage ended: its final report, whether it converged, and its
/// accepted steps and evaluations; `None` when the observer stopped it.
type StageEnd = Option<(LossReport, bool, Counted)>;

/// A stage's accepted steps and evaluations ([`StageTally`] less its cap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counted {
    steps: u32,
    evaluations: u32,
}

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
        let lbfgs = by_lbfgs(stage.kind, &state.parameters());
        let end = if stage.kind == StageKind::Scan {
            run_scan_stage(ctx, problem, stage, state, observer)?
        } else if lbfgs {
            run_lbfgs_stage(ctx, problem, stage, state, bounds, observer)?
        } else {
            run_adam_stage(ctx, problem, stage, state, bounds, observer)?
        };
        let Some((report, converged, counted)) = end else {
            return Ok(FitEnd::Stopped);
        };
        let index = state.converged.len();
        let capped = (!converged).then(|| capped_stage(stage, state, lbfgs));
        finish_stage(plan, state, converged, report.loss);
        state.tallies.push(StageTally {
            cap: stage.settings.iterations,
            steps: counted.steps,
            evaluations: counted.evaluations,
        });
        state.capped.extend(capped);
        skip_converged_rounds(plan, stage, state, report.loss);
        let finished = FinishedStage {
            final_loss: &report,
            seconds: started.elapsed().as_secs_f64(),
            steps: counted.steps,
            evaluations: counted.evaluations,
            converged,
            rounds_converged: state.converged.len() > index + 1,
            recovery: None,
        };
        observer.stage_finished(stage, state, &finished);
        last_report = Some(report);
    }
    Ok(FitEnd::Finished(last_report))
}

/// The scan ([`run_scan`]): one iteration per candidate, the observer told
/// of every evaluation within.
fn run_scan_stage(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    state: &mut FitState,
    observer: &mut dyn FitObserver,
) -> Result<StageEnd, FitError> {
    let observer = RefCell::new(observer);
    let hook = |done: &EvaluationDone| observer.borrow_mut().evaluation_done(stage, done);
    let mut step = |s: &FitState| observer.borrow_mut().iteration_done(stage, s);
    let end = run_scan(ctx, problem, stage, state, &hook, &mut step)?;
    Ok(end.map(|report| {
        let counted = Counted {
            steps: state.scan.as_ref().map_or(0, |s| s.points.len() as u32),
            evaluations: evaluations_so_far(stage, state),
        };
        (report, true, counted)
    }))
}

/// The evaluations of the loss the running `stage` has taken by `state`
/// (after an iteration): a scan's candidates' (velocity fits included);
/// Adam's start and each step's, once more per rejection (one record per
/// step); L-BFGS's up to its last accepted step (line-search trials
/// included; the start alone before it).
pub fn evaluations_so_far(stage: &StagePlan, state: &FitState) -> u32 {
    if stage.kind == StageKind::Scan {
        return state
            .scan
            .as_ref()
            .map_or(0, |s| s.points.iter().map(|p| p.evaluations).sum());
    }
    if by_lbfgs(stage.kind, &state.parameters()) {
        return state.lbfgs.as_ref().map_or(1, |c| c.solver.evaluations);
    }
    1 + stage_records(&state.records, stage)
        .map(|r| 1 + r.rejected)
        .sum::<u32>()
}

/// True when a stage of `kind` at `params` is solved by L-BFGS (a field
/// of at most [`LBFGS_MAX_PARAMETERS`] parameters), false for Adam.
fn by_lbfgs(kind: StageKind, params: &Parameters) -> bool {
    Unknowns::of(kind).get(params).len() <= LBFGS_MAX_PARAMETERS
}

/// The running stage, which stopped at its cap, as raising the cap
/// continues it ([`FitState::continue_raised_cap`]): the state after its
/// last iteration. An L-BFGS stage that accepted no step has no solver
/// state to continue; it starts again from its start point (its
/// records dropped), as an uninterrupted run with the higher cap would.
fn capped_stage(stage: &StagePlan, state: &FitState, lbfgs: bool) -> CappedStage {
    let mut kept = state.clone();
    kept.capped.clear();
    if lbfgs && kept.lbfgs.is_none() {
        kept.records
            .retain(|r| !(r.round == stage.round && r.stage == stage.kind));
        kept.iteration = 0;
    }
    CappedStage {
        stage: state.stage,
        state: Box::new(kept),
    }
}

/// Ends `stage` in `state`: the next stage's Adam and the stage's outcome.
fn finish_stage(plan: &[StagePlan], state: &mut FitState, converged: bool, loss: f64) {
    state.stage += 1;
    state.iteration = 0;
    state.lbfgs = None;
    state.adam = Adam::new(state.stage_param_count(plan));
    state.converged.push(converged);
    state.stage_losses.push(loss);
}

/// When a round gained too little over the previous one, the rounds left
/// are skipped: they count as converged and record that they never ran
/// (a tally of no steps and no evaluations, under their planned cap).
fn skip_converged_rounds(plan: &[StagePlan], stage: &StagePlan, state: &mut FitState, loss: f64) {
    if stage.kind == StageKind::Stiffness && stage.round > 1 {
        let previous = plan[..state.stage - 1]
            .iter()
            .zip(&state.stage_losses)
            .rev()
            .find(|(p, _)| p.kind == StageKind::Stiffness && p.round == stage.round - 1)
            .map(|(_, &l)| l);
        if previous.is_some_and(|p| p - loss <= ROUND_TOLERANCE * p.abs()) {
            while let Some(skipped) = plan.get(state.stage) {
                state.stage += 1;
                state.converged.push(true);
                state.stage_losses.push(loss);
                state.tallies.push(StageTally {
                    cap: skipped.settings.iterations,
                    steps: 0,
                    evaluations: 0,
                });
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
    let x0 = unknowns.get(&base);
    // E clamped to its range; ν's `z`, after it, free (its sigmoid bounds ν).
    let bounds = match unknowns {
        Unknowns::Velocity => Vec::new(),
        Unknowns::Youngs => vec![(range[0], range[1]); base.log10_youngs.len()],
    };
    let observer = RefCell::new(observer);
    let hook = |done: &EvaluationDone| observer.borrow_mut().evaluation_done(stage, done);
    let mut objective = StageObjective::of_stage(ctx, problem, stage, base, Remember::Last)
        .reporting(&hook, EvaluationPurpose::Stage);
    let mut solver = AdamSolver {
        schedule: stage.schedule(),
        grad_clip: stage.settings.grad_clip,
        bounds,
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
    let x0 = unknowns.get(&base);
    let n = x0.len();
    let (scale, solver_bounds) = lbfgs_coordinates(unknowns, stage, &base, range);
    let observer = RefCell::new(observer);
    let hook = |done: &EvaluationDone| observer.borrow_mut().evaluation_done(stage, done);
    let mut objective = StageObjective::of_stage(ctx, problem, stage, base, Remember::All)
        .scaled(scale)
        .reporting(&hook, EvaluationPurpose::Stage);
    let z0 = objective.to_solver(&x0);
    let mut solver = Lbfgs {
        settings: LbfgsSettings {
            // The cap exactly, as fit.json records it: with 1, the start
            // alone is evaluated and no step is taken.
            max_evaluations: stage.settings.iterations,
            first_step: 1.0,
            relative_tolerance: stage.settings.tolerance / 2.0,
            bounds: solver_bounds,
            ..LbfgsSettings::default()
        },
    };
    let resumed = state
        .lbfgs
        .take()
        .filter(|c| state.iteration > 0 && c.solver.x.len() == n);
    let mut start_recorded = resumed.is_some();
    let start = match resumed {
        Some(c) => LbfgsStart::Resume(c.solver),
        None => LbfgsStart::At(&z0),
    };
    let fresh = matches!(start, LbfgsStart::At(_));
    let Some(mut run) = solver.start(&mut objective, start)? else {
        return Err(FitError::StartBlewUp {
            stage: stage.label(),
        });
    };
    if fresh {
        warm_start(&mut run, state.curvature_of(stage.kind));
    }
    let ending = execute(&mut solver, &mut objective, &mut run, |objective, run| {
        if !start_recorded {
            let start = objective.seen(&z0);
            push_record(start, stage, state);
            start_recorded = true;
        }
        push_record(objective.seen(&run.x), stage, state);
        let p = objective.parameters(&run.x);
        state.velocity = p.velocity;
        state.log10_youngs = p.log10_youngs;
        state.poisson = p.poisson;
        state.lbfgs = Some(LbfgsCheckpoint {
            solver: run.clone(),
        });
        // Kept after every accepted step: a search that fails later drops
        // the pairs, and a run usually ends with one.
        if !run.pairs.is_empty() {
            state.keep_curvature(stage.kind, run.pairs.clone());
        }
        observer.borrow_mut().iteration_done(stage, state)
    })?;
    let converged = match ending {
        Ending::Stopped => return Ok(None),
        Ending::Ended { converged } => converged,
    };
    log::debug!(
        "{}: {} evaluations ({} line-search trials), {} forwards, {} backwards, {} gradients never used",
        stage.label(),
        run.evaluations,
        run.evaluations.saturating_sub(1),
        run.evaluations + run.reevaluations,
        run.gradients,
        run.unused_gradients
    );
    if !start_recorded {
        // No step was taken: the start's record stands for the stage.
        push_record(objective.first_seen(), stage, state);
    }
    let p = objective.parameters(&run.x);
    state.velocity = p.velocity;
    state.log10_youngs = p.log10_youngs;
    state.poisson = p.poisson;
    let kept = objective.seen(&run.x).map(|(_, r, _)| r.clone());
    drop(objective);
    let report = match kept {
        Some(r) => r,
        None => problem.loss(ctx, &state.parameters(), &stage.selection)?,
    };
    let recorded = stage_records(&state.records, stage).count() as u32;
    // The start's record, then one per accepted step.
    let counted = Counted {
        steps: recorded.saturating_sub(1),
        evaluations: run.evaluations,
    };
    Ok(Some((report, converged, counted)))
}

/// Starts a fresh L-BFGS run from the curvature `pairs` the previous
/// round's stage of its kind ended with (in the same scaled coordinates),
/// when they fit its dimension. Without them the run's first direction is
/// the gradient at the stage's first step, a guess: after round 1 the
/// loss is far more curved along it near the optimum than that step
/// assumes (the velocity once E fits), and the line search spends its
/// evaluations finding the scale the curvature already knows.
pub(super) fn warm_start(run: &mut LbfgsState, pairs: &[CurvaturePair]) {
    if !pairs.is_empty() && pairs.iter().all(|p| p.s.len() == run.x.len()) {
        run.pairs = pairs.to_vec();
        run.first = false;
    }
}

/// Per coordinate of `unknowns` at `base`, the L-BFGS scale (`x = z ·
/// scale`) and the box in the solver's coordinates: a velocity's first
/// step and no box; E's first step and range, then ν's `z`
/// ([`super::poisson`]).
pub(super) fn lbfgs_coordinates(
    unknowns: Unknowns,
    stage: &StagePlan,
    base: &Parameters,
    range: [f64; 2],
) -> (Vec<f64>, Vec<(f64, f64)>) {
    let n = unknowns.get(base).len();
    let (scale, bounds): (Vec<f64>, Vec<(f64, f64)>) = match unknowns {
        Unknowns::Velocity => (
            vec![stage.first_step; n],
            vec![(f64::NEG_INFINITY, f64::INFINITY); n],
        ),
        Unknowns::Youngs => {
            let e = base.log10_youngs.len();
            (0..n)
                .map(|i| match i < e {
                    true => (STIFFNESS_FIRST_STEP, (range[0], range[1])),
                    false => (POISSON_FIRST_STEP, (-Z_BOUND, Z_BOUND)),
                })
                .unzip()
        }
    };
    let solver_bounds = bounds
        .iter()
        .zip(&scale)
        .map(|(&(lo, hi), s)| (lo / s, hi / s))
        .collect();
    (scale, solver_bounds)
}

/// Records an accepted point of an L-BFGS stage (when its evaluation was
/// kept).
fn push_record(seen: Option<&Seen>, stage: &StagePlan, state: &mut FitState) {
    let Some((_, report, grad)) = seen else {
        return;
    };
    let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
    state
        .records
        .push(record(stage, state.iteration, report, norm));
    state.iteration += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::evaluation::Selection;
    use crate::fit::summary_build::stages;
    use crate::scene::FitStage;

    fn planned(round: u32, kind: StageKind) -> StagePlan {
        StagePlan {
            round,
            kind,
            settings: match kind {
                StageKind::Velocity => FitStage::velocity_default(),
                _ => FitStage::stiffness_default(),
            },
            selection: Selection {
                frames: vec![1, 2, 3],
                views: vec![0],
            },
            scan: None,
            first_step: 1.0,
        }
    }

    fn pair(n: usize) -> CurvaturePair {
        CurvaturePair {
            s: vec![0.1; n],
            y: vec![0.2; n],
            rho: 1.0 / (0.02 * n as f64),
        }
    }

    /// A fresh run takes the previous round's pairs when they fit its
    /// dimension (its first direction then has the curvature's scale, and
    /// its first search does not grow), and ignores them otherwise.
    #[test]
    fn a_fresh_run_is_warm_started_only_by_pairs_of_its_dimension() {
        let fresh = || LbfgsState {
            x: vec![0.0; 3],
            loss: 1.0,
            grad: vec![1.0; 3],
            pending: None,
            pairs: Vec::new(),
            evaluations: 1,
            first: true,
            small_steps: 0,
            unused_gradients: 0,
            gradients: 1,
            reevaluations: 0,
        };
        let mut run = fresh();
        warm_start(&mut run, &[pair(3), pair(3)]);
        assert_eq!((run.pairs.len(), run.first), (2, false));
        let mut other = fresh();
        warm_start(&mut other, &[pair(2)]);
        assert_eq!(other, fresh());
        let mut none = fresh();
        warm_start(&mut none, &[]);
        assert_eq!(none, fresh());
    }

    /// A round that gains less than [`ROUND_TOLERANCE`] skips the rounds
    /// left, which fit.json and the result then record as never run (no
    /// run record), not as converged runs of no seconds.
    #[test]
    fn rounds_skipped_after_a_small_gain_are_recorded_as_not_run() {
        let plan: Vec<StagePlan> = (1..=3)
            .flat_map(|round| {
                [StageKind::Velocity, StageKind::Stiffness].map(|kind| planned(round, kind))
            })
            .collect();
        let params = Parameters {
            log10_youngs: vec![4.0],
            velocity: vec![0.0; 3],
            poisson: Vec::new(),
        };
        let mut state = FitState::start(params, &plan);
        let losses = [2e-2, 1e-2, 1.5e-2, 0.995e-2];
        for (i, &loss) in losses.iter().enumerate() {
            state.records.push(IterationRecord {
                round: plan[i].round,
                stage: plan[i].kind,
                iteration: 0,
                loss,
                image: loss,
                l1: 0.0,
                dssim: 0.0,
                tv: 0.0,
                velocity_tv: 0.0,
                psnr: 30.0,
                ssim: 0.9,
                grad_norm: 1.0,
                learning_rate: 0.0,
                rejected: 0,
            });
            finish_stage(&plan, &mut state, true, loss);
            state.tallies.push(StageTally {
                cap: plan[i].settings.iterations,
                steps: 0,
                evaluations: 1,
            });
            skip_converged_rounds(&plan, &plan[i], &mut state, loss);
        }
        assert!(state.done(&plan), "round 3 is skipped");
        let summary = stages(&plan, &state, &[1.0; 4]);
        assert!(summary[..4].iter().all(|s| s.run.is_some()));
        assert!(summary[4..].iter().all(|s| s.run.is_none()), "{summary:?}");
        assert_eq!(state.tallies.len(), 6);
        assert_eq!(state.tallies[5].evaluations, 0);
    }
}
