//! A fit's stages run in order around [`FitProblem::evaluate`]
//! (docs/design.md § Loss, parameters, fit): each stage is its group of
//! parameters as an objective ([`super::objective`]) under one of the
//! solvers of [`crate::solve`], run by its executor: the coarse scan
//! ([`super::scan`]), L-BFGS for a field of at most
//! [`super::plan::LBFGS_MAX_PARAMETERS`] parameters ([`super::stages_lbfgs`]),
//! Adam for a larger one ([`super::stages_adam`]). After each
//! iteration the [`FitState`] is whole (parameters, the solver's state,
//! the records), and the observer is told: a checkpoint written then
//! continues as an uninterrupted fit would.
//!
//! A round whose stiffness loss gained less than [`ROUND_TOLERANCE`] over
//! the previous round's ends the fit: the stages left are skipped.

use std::cell::RefCell;
use std::time::Instant;

use super::error::FitError;
use super::evaluation::LossReport;
use super::observer::{EvaluationDone, FinishedStage, FitObserver};
use super::plan::{StageKind, StagePlan};
use super::problem::FitProblem;
use super::scan::run_scan;
use super::stages_adam::run_adam_stage;
use super::objective::by_lbfgs;
use super::stages_count::{Counted, StageEnd};
use super::stages_lbfgs::run_lbfgs_stage;
use super::state::{CappedStage, FitState, StageTally};
use crate::gpu::GpuContext;
use crate::solve::Adam;

pub use super::stages_count::evaluations_so_far;

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
            // No stage runs now: its Adam holds nothing (the checkpoint of
            // the finished fit is checked against that on resuming).
            state.adam = Adam::new(state.stage_param_count(plan));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::evaluation::{Parameters, Selection};
    use crate::fit::record::IterationRecord;
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

    /// A round that gains less than [`ROUND_TOLERANCE`] skips the rounds
    /// left, which fit.json and the result then record as never run (no
    /// run record), not as converged runs of no seconds, and leaves no
    /// Adam state of a stage that will not run.
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
        // Sized for the stage that runs, none: a checkpoint of this state
        // (taken during the error bars, say) resumes.
        assert!(state.adam.m.is_empty() && state.adam.v.is_empty());
        let summary = stages(&plan, &state, &[1.0; 4]);
        assert!(summary[..4].iter().all(|s| s.run.is_some()));
        assert!(summary[4..].iter().all(|s| s.run.is_none()), "{summary:?}");
        assert_eq!(state.tallies.len(), 6);
        assert_eq!(state.tallies[5].evaluations, 0);
    }
}
