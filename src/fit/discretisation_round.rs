//! A discretisation check's level refitted (src/fit/discretisation_check.rs)
//! as the fit's own rounds fit: E on the last stiffness stage's frames
//! at the velocity, then the velocity on the last velocity stage's frames
//! at that E, in turn, until an E refit moves E by less than a tenth of
//! the tolerance the check compares levels by
//! ([`ROUND_SHARE_OF_TOLERANCE`]), for at most `fit.rounds` E refits (and
//! at least two: the velocity is refitted at every level); when
//! they did not settle so (their cap, or no velocity to alternate with),
//! Newton steps in E from a measured Hessian follow (src/fit/exact_step.rs).
//!
//! Why E first and why in turn: the velocity carried from the previous
//! level was fitted with that level's E, as a pair; the discretisation
//! moves E much more than it moves the velocity, so E refitted at the
//! carried velocity lands near its new value at once. Fitting the velocity
//! first, at the previous level's E, which is wrong at this level by the
//! very shift the level measures, lets the velocity take up part of that
//! error (a too stiff E explains the frames with too fast a push), which E,
//! fitted at that velocity, then keeps: on the demo's twin refitted at the
//! discretisation that made its frames, one velocity-then-E round left the
//! tail 0.035 decades stiff and the push 0.6% fast, where the fit's own
//! rounds at that discretisation recover the truth to 0.002
//! (docs/benchmarks.md, "A level's rounds").
//!
//! A per-driver E (Adam) alternates too, but exactly twice (E, the
//! velocity, E): its refits move its values by their own noise, so none
//! settles. A held velocity leaves nothing to alternate.

use super::discretisation::{DISCRETISATION_TOLERANCE, POISSON_DISCRETISATION_TOLERANCE};
use super::discretisation_refit::{past, refit_stage, refit_stage_by_adam, StageRefit};
use super::error::FitError;
use super::evaluation::Parameters;
use super::exact_step::{walk_newton, WalkDeadline};
use super::objective::by_lbfgs;
use super::observer::{EvaluationDone, EvaluationHook};
use super::plan::StagePlan;
use super::problem::FitProblem;
use crate::gpu::GpuContext;
use crate::scene::{PoissonRange, Scene};
use crate::solve::lbfgs::CurvaturePair;
use std::cell::Cell;
use std::time::Instant;

/// A level's E refits end once one moves E by less than this share of
/// [`DISCRETISATION_TOLERANCE`] (and a fitted ν by less than this share
/// of [`POISSON_DISCRETISATION_TOLERANCE`]).
pub const ROUND_SHARE_OF_TOLERANCE: f64 = 0.1;

/// What a level refits: E on the last stiffness stage's frames, and the
/// velocity on the last velocity stage's frames and settings when the fit
/// has such a stage and its field is fitted by L-BFGS (a `drivers`
/// velocity field is held at the values carried from the previous level);
/// each from the curvature its previous level or stage ended with.
pub struct LevelStages<'a> {
    /// The velocity stage and its curvature, when the velocity is refitted.
    pub velocity: Option<(&'a StagePlan, &'a [CurvaturePair])>,
    /// The stiffness stage and its curvature.
    pub stiffness: (&'a StagePlan, &'a [CurvaturePair]),
}

/// One level refitted (module doc).
pub struct LevelRun {
    /// The refitted values (the velocity where it is refitted, E and a
    /// fitted ν).
    pub params: Parameters,
    /// The loss at the previous level's values (the first E refit's
    /// start), then at the end (the last E refit's, or after the Newton
    /// steps).
    pub loss: [f64; 2],
    /// Evaluations it took (the velocity's and E's refits and the Newton
    /// steps together).
    pub evaluations: u32,
    /// Newton steps kept after the stiffness refits.
    pub newton_steps: u32,
    /// E refits run, the velocity's between them (module doc).
    pub rounds: u32,
    /// Its wall seconds.
    pub seconds: f64,
    /// The curvature the stiffness refit ended with, for the next level's.
    pub pairs: Vec<CurvaturePair>,
    /// The curvature the velocity refit ended with (the start's when the
    /// velocity is held), for the next level's.
    pub velocity_pairs: Vec<CurvaturePair>,
    /// The deadline stopped the refit before it ended.
    pub stopped_for_budget: bool,
}

/// Refits `level`'s `problem` from `from` (module doc), stopping after
/// the accepted step that passes `deadline`; the level's seconds count
/// from `started` (its problem's building included).
#[allow(clippy::too_many_arguments)]
pub(super) fn refit_alternating(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    level: &Scene,
    stages: &LevelStages<'_>,
    from: &Parameters,
    started: Instant,
    deadline: Option<Instant>,
    hook: EvaluationHook<'_>,
    blew_up: &dyn Fn() -> FitError,
) -> Result<LevelRun, FitError> {
    let range = level.material.log10_youngs_range;
    let (stage, stage_pairs) = stages.stiffness;
    let lbfgs = by_lbfgs(stage.kind, from);
    let rounds = e_refits(level, stages.velocity.is_some(), lbfgs);
    let refit = match lbfgs {
        true => refit_stage,
        false => refit_stage_by_adam,
    };
    let mut at = from.clone();
    let mut pairs = stage_pairs.to_vec();
    let mut velocity_pairs = stages.velocity.map(|(_, p)| p.to_vec()).unwrap_or_default();
    let mut evaluations = 0;
    let mut stopped = false;
    let mut first_loss = None;
    let mut round = 0;
    let (last_loss, seconds_per_gradient, settled) = loop {
        round += 1;
        // The refit's gradients, counted: what the walk's Hessians will
        // cost is the refit's time per gradient (its loss-only trials
        // counted in it, so the estimate errs long).
        let gradients = Cell::new(0u32);
        let counting = |done: &EvaluationDone| {
            gradients.set(gradients.get() + u32::from(done.with_gradient));
            hook(done)
        };
        let refit_started = Instant::now();
        let run: StageRefit = refit(ctx, problem, stage, &at, &pairs, range, deadline, &counting)?
            .ok_or_else(blew_up)?;
        let seconds_per_gradient =
            refit_started.elapsed().as_secs_f64() / f64::from(gradients.get().max(1));
        evaluations += run.evaluations;
        stopped |= run.stopped;
        first_loss.get_or_insert(run.loss[0]);
        let moved = round_movement(&at, &run.params, &level.fit.stiffness.poisson_range);
        at = run.params;
        pairs = run.pairs;
        let settled = round > 1 && moved.settled();
        let ended = (run.loss[1], seconds_per_gradient, settled);
        let Some((velocity_stage, _)) = stages.velocity else {
            break ended;
        };
        if stopped || settled || round >= rounds || past(deadline) {
            break ended;
        }
        let velocity = refit_stage(
            ctx,
            problem,
            velocity_stage,
            &at,
            &velocity_pairs,
            range,
            deadline,
            hook,
        )?
        .ok_or_else(blew_up)?;
        evaluations += velocity.evaluations;
        stopped |= velocity.stopped;
        at = velocity.params;
        velocity_pairs = velocity.pairs;
        if stopped || past(deadline) {
            // The E refit after the velocity's is not run: the loss at the
            // end is that of E fitted at the velocity before.
            break ended;
        }
    };
    // Newton steps from a measured Hessian, from where L-BFGS's model
    // ended the last E refit; not when the budget stopped a refit (its end
    // is not an optimum of any kind) or is spent, and no further one once
    // it is; not after Adam (a per-driver field's Hessian is too large to
    // measure); and not after rounds that settled: the last E refit
    // started where the one before ended, with the exact gradient, and
    // moved E by less than a tenth of the tolerance, which is the check
    // the Newton steps make (on the demo's first level they moved E by
    // 3e-4 decades more, in 42 s, more than the level's refits took).
    let (params, end_loss, newton_steps) = match stopped || past(deadline) || !lbfgs || settled {
        true => (at, last_loss, 0),
        false => {
            let walk_deadline = deadline.map(|at| WalkDeadline {
                at,
                seconds_per_gradient,
            });
            let walk = walk_newton(
                ctx,
                problem,
                stage,
                &at,
                last_loss,
                None,
                range,
                Some(hook),
                walk_deadline,
            )?;
            evaluations += walk.evaluations;
            (walk.at, walk.loss[1], walk.steps)
        }
    };
    Ok(LevelRun {
        params,
        loss: [first_loss.unwrap_or(end_loss), end_loss],
        evaluations,
        newton_steps,
        rounds: round,
        seconds: started.elapsed().as_secs_f64(),
        pairs,
        velocity_pairs,
        stopped_for_budget: stopped,
    })
}

/// The most E refits a level runs when the velocity is refitted:
/// `fit.rounds`, and at least [`MIN_E_REFITS`] (a level refits the
/// velocity whatever the fit's rounds), for E of few values; exactly
/// [`MIN_E_REFITS`] for E by Adam, whose refits move its values by their
/// own noise, so that no refit of it settles; one without a velocity to
/// alternate with.
pub fn e_refits(level: &Scene, velocity_refitted: bool, lbfgs: bool) -> u32 {
    match (velocity_refitted, lbfgs) {
        (true, true) => level.fit.rounds.max(MIN_E_REFITS),
        (true, false) => MIN_E_REFITS,
        (false, _) => 1,
    }
}

/// E, the velocity, E: the fewest refits that refit the velocity at this
/// level and E at that velocity.
pub const MIN_E_REFITS: u32 = 2;

/// How far one E refit moved the stiffness unknowns.
#[derive(Debug)]
struct RoundMovement {
    /// The largest change of a `log10 E` (decades).
    youngs: f64,
    /// The largest change of a fitted ν.
    poisson: f64,
}

impl RoundMovement {
    /// Whether E (and ν) moved by less than [`ROUND_SHARE_OF_TOLERANCE`]
    /// of what the check compares levels by: the alternation has reached
    /// its fixed point for the check's purpose.
    fn settled(&self) -> bool {
        self.youngs < DISCRETISATION_TOLERANCE * ROUND_SHARE_OF_TOLERANCE
            && self.poisson < POISSON_DISCRETISATION_TOLERANCE * ROUND_SHARE_OF_TOLERANCE
    }
}

/// The largest changes of E and ν (from `z` through `range`) between `a`
/// and `b`.
fn round_movement(a: &Parameters, b: &Parameters, range: &PoissonRange) -> RoundMovement {
    let nu = |z: &[f64]| -> Vec<f64> { z.iter().map(|&z| range.poisson_of(z)).collect() };
    let largest = |x: &[f64], y: &[f64]| {
        x.iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max)
    };
    RoundMovement {
        youngs: largest(&a.log10_youngs, &b.log10_youngs),
        poisson: largest(&nu(&a.poisson), &nu(&b.poisson)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(log10_youngs: Vec<f64>, poisson: Vec<f64>) -> Parameters {
        Parameters {
            log10_youngs,
            velocity: vec![0.0, 0.6, 0.0],
            poisson,
        }
    }

    /// The rounds end at a tenth of the check's tolerances: E's largest
    /// move in decades, ν's in ν itself (not in the solver's `z`).
    #[test]
    fn a_round_settles_below_a_tenth_of_the_tolerances() {
        let range = PoissonRange { low: 0.0, high: 0.49 };
        let a = params(vec![3.5, 4.5], Vec::new());
        let moved = |e: Vec<f64>| round_movement(&a, &params(e, Vec::new()), &range);
        assert!(moved(vec![3.504, 4.4961]).settled());
        assert!(!moved(vec![3.5, 4.506]).settled());
        // ν at z = 0 is 0.245, where dν/dz = 0.1225: a z step of 0.01
        // moves ν by 0.0012 (settled), one of 0.02 by 0.0025 (not).
        let z = |z: f64| params(vec![3.5], vec![z]);
        assert!(round_movement(&z(0.0), &z(0.01), &range).settled());
        assert!(!round_movement(&z(0.0), &z(0.02), &range).settled());
    }
}
