//! A stage of at most [`super::plan::LBFGS_MAX_PARAMETERS`] parameters, solved by
//! L-BFGS ([`crate::solve::lbfgs`]) in the scaled coordinates of
//! [`super::objective`] (docs/design.md § Loss, parameters, fit); the
//! coordinates and the warm start are shared with the discretisation
//! check ([`super::discretisation_check`]), which refits E the same way.

use std::cell::RefCell;

use super::error::FitError;
use super::evaluation::Parameters;
use super::objective::{Remember, Seen, StageObjective, Unknowns};
use super::observer::{EvaluationDone, EvaluationPurpose, FitObserver};
use super::plan::{StagePlan, STIFFNESS_FIRST_STEP};
use super::poisson::{POISSON_FIRST_STEP, Z_BOUND};
use super::problem::FitProblem;
use super::record::{record, stage_records};
use super::stages_count::{Counted, StageEnd};
use super::state::{FitState, LbfgsCheckpoint};
use crate::gpu::GpuContext;
use crate::solve::lbfgs::CurvaturePair;
use crate::solve::{execute, Ending, Lbfgs, LbfgsSettings, LbfgsStart, LbfgsState};

/// A low-dimensional stage by L-BFGS ([`LBFGS_MAX_PARAMETERS`]): one record
/// and one observer call per accepted step, the stage's `iterations` a cap
/// on evaluations (line-search trials included), in the scaled
/// coordinates of [`super::objective`]. A checkpoint taken inside the
/// stage continues its solver exactly ([`LbfgsCheckpoint`]).
pub(super) fn run_lbfgs_stage(
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
        let fresh = || LbfgsState::started(vec![0.0; 3], 1.0, vec![1.0; 3]);
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
}
