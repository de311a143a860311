//! The fit's last move: Newton's step in E from the exact gradient
//! (docs/design.md § Error bars, "The exact-gradient step"). A stiffness
//! stage of few parameters follows the exact gradient, but L-BFGS ends
//! where its model of the curvature, from a few pairs of steps, expects
//! no more gain; the measured Hessian checks that end. (When the stage
//! followed the truncated gradient, the loss's optimum was still 0.16
//! decades on in the fox-scale tail.) The error bars measure the exact
//! gradient and Hessian at the fitted values, which give Newton's step in
//! E (and a fitted ν) with the velocity held
//! ([`super::uncertainty::StiffnessNewtonStep`]). It is tried on the last
//! stiffness stage's loss (its frames, views and weights, smoothness
//! included: the objective the stage minimised), kept when that loss falls,
//! else half of it, else nothing: two or three forwards, no gradient.
//! When half a step was kept, or a step gained more than 1%, the optimum
//! may lie further on, and another step follows from a fresh Hessian of
//! the stiffness unknowns alone ([`MAX_NEWTON_STEPS`] in all).
//!
//! The error bars stay those of the point before the step: the step is a
//! fraction of the distance over which the curvature changes.

use super::discretisation::at_range_end;
use super::error::FitError;
use super::evaluation::Parameters;
use super::objective::{blown_up, Remember, StageObjective, Unknowns};
use super::observer::{EvaluationDone, EvaluationHook, EvaluationPurpose};
use super::plan::{last_stiffness, StagePlan};
use super::poisson::Z_BOUND;
use super::problem::FitProblem;
use super::stages_lbfgs::lbfgs_coordinates;
use super::state::FitState;
use super::uncertainty::StiffnessNewtonStep;
use super::uncertainty_estimate::HESSIAN_STEP;
use crate::gpu::GpuContext;
use crate::mpm::GradientFlow;
use crate::solve::curvature::hessian_by_differences;
use crate::solve::newton::newton_step;
use crate::solve::Objective;

pub use super::exact_step_record::ExactStep;

/// The fractions of Newton's step tried, in order.
const FRACTIONS: [f64; 2] = [1.0, 0.5];

/// At most this many Newton steps in all: the first from the error bars'
/// Hessian, each further one from a fresh Hessian of the stiffness
/// unknowns alone.
pub const MAX_NEWTON_STEPS: u32 = 4;

/// A kept step is followed by another when only half of it was kept (the
/// quadratic model did not hold along it, so the optimum may lie further
/// on, where the curvature differs) or when it lowered the loss by more
/// than this share. On a drop E and ν lie along a curved valley: at grid
/// 40 half of the first step lowered the loss by 12% and the optimum lay
/// further along (docs/benchmarks.md, "A fit of the drop at twice the
/// grid"); on the demo the first step gains 0.2% and no second is paid
/// for.
const GO_ON_SHARE: f64 = 0.01;

/// Tries the step (module doc) from `state`'s values, whose error bars
/// hold Newton's step; moves `state` when a fraction of it lowers the
/// loss, then tries further steps while [`GO_ON_SHARE`] says the optimum
/// may lie further ([`MAX_NEWTON_STEPS`] in all). `None` when there is no
/// step to try (no error bars, no positive definite E block, an E at an
/// end of its range, no stiffness stage).
pub fn take_exact_step(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    plan: &[StagePlan],
    state: &mut FitState,
    range: [f64; 2],
) -> Result<Option<ExactStep>, FitError> {
    let Some(newton) = state
        .uncertainty
        .as_ref()
        .and_then(|u| u.stiffness_newton_step.clone())
    else {
        return Ok(None);
    };
    let Some(stage) = last_stiffness(plan) else {
        return Ok(None);
    };
    if newton.log10_youngs.len() != state.log10_youngs.len()
        || newton.poisson_z.len() != state.poisson.len()
    {
        return Ok(None);
    }
    problem.set_stage(&stage.settings)?;
    let start = state.parameters();
    let Some(before) = blown_up(problem.loss(ctx, &start, &stage.selection))? else {
        return Ok(None);
    };
    let predicted_decrease = newton.predicted_decrease;
    let walk = walk_newton(
        ctx,
        problem,
        stage,
        &start,
        before.loss,
        Some(newton),
        range,
        None,
        None,
    )?;
    let difference = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x - y).collect();
    let step = ExactStep {
        log10_youngs: difference(&walk.at.log10_youngs, &start.log10_youngs),
        poisson_z: difference(&walk.at.poisson, &start.poisson),
        fraction: walk.first_fraction,
        loss: walk.loss,
        predicted_decrease,
        steps: walk.steps,
    };
    state.log10_youngs = walk.at.log10_youngs;
    state.poisson = walk.at.poisson;
    Ok(Some(step))
}

/// Where Newton steps in the stiffness unknowns from a point ended
/// ([`walk_newton`]).
#[derive(Clone, Debug)]
pub struct NewtonWalk {
    /// The point reached (the start when no step lowered the loss).
    pub at: Parameters,
    /// The stage's loss at the start, then at `at`.
    pub loss: [f64; 2],
    /// Steps kept.
    pub steps: u32,
    /// The fraction of the first step kept (0 when none was).
    pub first_fraction: f64,
    /// Evaluations taken: the trials' losses and the fresh Hessians'
    /// gradients.
    pub evaluations: u32,
}

/// Newton steps in E (and a fitted ν), the velocity held, on the last
/// stiffness `stage`'s loss from `start`, whose loss is `before` (module
/// doc): the first is `first` when given (the error bars' step), else
/// one from a fresh Hessian; each is kept whole or halved when that
/// lowers the loss, and another follows while [`GO_ON_SHARE`] says the
/// optimum may lie further on ([`MAX_NEWTON_STEPS`] in all). The
/// discretisation check's levels walk from their refits' ends the same
/// way (src/fit/discretisation_check.rs). `hook`, when given, is told of
/// every evaluation (the trials' losses and the Hessians' gradients). Past
/// `deadline` (the discretisation check's time budget), or where a fresh
/// Hessian and its first trial are predicted to pass it
/// ([`WalkDeadline::affords`]), no further one is taken: the walk ends at
/// the last step kept (at the start when the first is not affordable).
#[allow(clippy::too_many_arguments)]
pub fn walk_newton(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    start: &Parameters,
    before: f64,
    first: Option<StiffnessNewtonStep>,
    range: [f64; 2],
    hook: Option<EvaluationHook<'_>>,
    mut deadline: Option<WalkDeadline>,
) -> Result<NewtonWalk, FitError> {
    problem.set_stage(&stage.settings)?;
    let mut walk = NewtonWalk {
        at: start.clone(),
        loss: [before, before],
        steps: 0,
        first_fraction: 0.0,
        evaluations: 0,
    };
    let unknowns = start.log10_youngs.len() + start.poisson.len();
    let affords = |deadline: &Option<WalkDeadline>| deadline.is_none_or(|d| d.affords(unknowns));
    let mut newton = match first {
        Some(n) => n,
        None => {
            if !affords(&deadline) {
                return Ok(walk);
            }
            let (fresh, gradients) =
                fresh_newton_step(ctx, problem, stage, start, range, hook, &mut deadline)?;
            walk.evaluations += gradients;
            match fresh {
                Some(n) => n,
                None => return Ok(walk),
            }
        }
    };
    loop {
        let at = walk.at.clone();
        let moved = |fraction: f64| moved_by(&at, &newton, fraction, range);
        let mut trials = 0;
        let kept = first_lower(walk.loss[1], |fraction| {
            trials += 1;
            let loss = blown_up(problem.loss(ctx, &moved(fraction), &stage.selection))?;
            let loss = loss.map(|r| r.loss);
            if let Some(hook) = hook {
                hook(&EvaluationDone {
                    loss,
                    with_gradient: false,
                    counted: true,
                    purpose: EvaluationPurpose::Stage,
                });
            }
            Ok::<_, FitError>(loss)
        })?;
        walk.evaluations += trials;
        let Some((fraction, after)) = kept else {
            break;
        };
        if walk.steps == 0 {
            walk.first_fraction = fraction;
        }
        walk.steps += 1;
        let gained = walk.loss[1] - after;
        walk.at = moved(fraction);
        walk.loss[1] = after;
        let go_on = fraction < 1.0 || gained > GO_ON_SHARE * (after + gained);
        if !go_on || walk.steps >= MAX_NEWTON_STEPS || !affords(&deadline) {
            break;
        }
        let (fresh, gradients) =
            fresh_newton_step(ctx, problem, stage, &walk.at, range, hook, &mut deadline)?;
        walk.evaluations += gradients;
        newton = match fresh {
            Some(n) => n,
            None => break,
        };
    }
    Ok(walk)
}

/// `at` moved by `fraction` of Newton's step `newton`, E inside `range`
/// and ν's `z` inside its box.
fn moved_by(
    at: &Parameters,
    newton: &StiffnessNewtonStep,
    fraction: f64,
    range: [f64; 2],
) -> Parameters {
    Parameters {
        log10_youngs: at
            .log10_youngs
            .iter()
            .zip(&newton.log10_youngs)
            .map(|(e, d)| (e + fraction * d).clamp(range[0], range[1]))
            .collect(),
        velocity: at.velocity.clone(),
        poisson: at
            .poisson
            .iter()
            .zip(&newton.poisson_z)
            .map(|(z, d)| (z + fraction * d).clamp(-Z_BOUND, Z_BOUND))
            .collect(),
    }
}

/// When a Newton walk must stop taking fresh Hessians (the
/// discretisation check's budget), and what a gradient evaluation costs.
#[derive(Clone, Copy, Debug)]
pub struct WalkDeadline {
    /// The budget runs out then.
    pub at: std::time::Instant,
    /// Wall seconds of one evaluation with its gradient on the stage's
    /// frames: the refit's before the walk, then the walk's own Hessians'.
    pub seconds_per_gradient: f64,
}

impl WalkDeadline {
    /// Whether a fresh Hessian of `unknowns` values by forward
    /// differences (`unknowns + 1` gradients, the fewest it takes) and
    /// one trial of its step (at most a gradient's cost) would end before
    /// the budget does.
    pub fn affords(&self, unknowns: usize) -> bool {
        let seconds = self.seconds_per_gradient * (unknowns + 2) as f64;
        std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds.max(0.0)) <= self.at
    }
}

/// Newton's step in the stiffness unknowns (E and ν's `z`) at `at`, the
/// velocity held, from a Hessian of exact gradients (full flow) of the
/// last stiffness `stage`'s loss by differences in the solver's scaled
/// coordinates ([`HESSIAN_STEP`], as the error bars take it): one
/// gradient and one more per unknown (twice that when forward
/// differences do not give a positive definite block). `None` when the
/// block is not positive definite, an E is held at an end of `range`,
/// or a rollout blew up; with the gradients it took either way. Their
/// measured cost per gradient goes into `deadline`, for the next one's
/// prediction.
fn fresh_newton_step(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    at: &Parameters,
    range: [f64; 2],
    hook: Option<EvaluationHook<'_>>,
    deadline: &mut Option<WalkDeadline>,
) -> Result<(Option<StiffnessNewtonStep>, u32), FitError> {
    if at_range_end(&at.log10_youngs, range) {
        return Ok((None, 0));
    }
    let started = std::time::Instant::now();
    let unknowns = Unknowns::Youngs;
    let (scale, bounds) = lbfgs_coordinates(unknowns, stage, at, range);
    let mut objective = StageObjective::new(
        ctx,
        problem,
        &stage.selection,
        GradientFlow::Full,
        at.clone(),
        unknowns,
        Remember::Last,
    )
    .scaled(scale.clone());
    if let Some(hook) = hook {
        objective = objective.reporting(hook, EvaluationPurpose::Stage);
    }
    let z0 = objective.to_solver(&unknowns.get(at));
    let mut gradients = 0u32;
    let mut counted = |z: &[f64]| {
        gradients += 1;
        objective.evaluate(z)
    };
    let first = counted(&z0)?;
    let taken = match &first {
        Some((_, g)) => {
            let steps = vec![HESSIAN_STEP; z0.len()];
            hessian_by_differences(&mut counted, &z0, &steps, &bounds, Some(g), |h| {
                newton_step(h, g).is_some()
            })?
        }
        None => None,
    };
    if let (Some(d), true) = (deadline.as_mut(), gradients > 0) {
        d.seconds_per_gradient = started.elapsed().as_secs_f64() / f64::from(gradients);
    }
    let Some((_, g)) = first else {
        return Ok((None, gradients));
    };
    let step = taken.and_then(|(h, _)| newton_step(&h, &g));
    let Some((step, decrease)) = step else {
        return Ok((None, gradients));
    };
    let e = at.log10_youngs.len();
    let step: Vec<f64> = step.iter().zip(&scale).map(|(s, k)| s * k).collect();
    let newton = StiffnessNewtonStep {
        log10_youngs: step[..e].to_vec(),
        poisson_z: step[e..].to_vec(),
        predicted_decrease: decrease,
    };
    Ok((Some(newton), gradients))
}

/// The first of [`FRACTIONS`] whose loss (`loss_at`, `None` where the
/// simulation blew up) is below `before`, with that loss; `None` when
/// none is.
fn first_lower<E>(
    before: f64,
    mut loss_at: impl FnMut(f64) -> Result<Option<f64>, E>,
) -> Result<Option<(f64, f64)>, E> {
    for fraction in FRACTIONS {
        if let Some(after) = loss_at(fraction)?.filter(|&l| l < before) {
            return Ok(Some((fraction, after)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh Hessian is started only when its fewest gradients and a
    /// trial are predicted to end before the budget does.
    #[test]
    fn a_hessian_that_would_pass_the_deadline_is_not_started() {
        let in_ten_seconds = |seconds_per_gradient| WalkDeadline {
            at: std::time::Instant::now() + std::time::Duration::from_secs(10),
            seconds_per_gradient,
        };
        assert!(in_ten_seconds(1.0).affords(2), "4 s of 10");
        assert!(!in_ten_seconds(3.0).affords(2), "12 s of 10");
        assert!(!in_ten_seconds(0.5).affords(30), "16 s of 10");
    }

    /// The whole step when it lowers the loss; else half of it, tried
    /// only then; else nothing; a blown-up trial counts as no lower.
    #[test]
    fn the_first_fraction_that_lowers_the_loss_is_kept() {
        // The choice from 1.0 with these trial losses, and the fractions tried.
        let run = |losses: [Option<f64>; 2]| {
            let mut tried = Vec::new();
            let kept = first_lower::<()>(1.0, |f| {
                tried.push(f);
                Ok(losses[tried.len() - 1])
            })
            .unwrap();
            (kept, tried)
        };
        assert_eq!(run([Some(0.5), Some(0.1)]), (Some((1.0, 0.5)), vec![1.0]));
        assert_eq!(run([Some(1.5), Some(0.9)]), (Some((0.5, 0.9)), vec![1.0, 0.5]));
        assert_eq!(run([None, Some(0.9)]), (Some((0.5, 0.9)), vec![1.0, 0.5]));
        assert_eq!(run([Some(1.0), Some(1.2)]), (None, vec![1.0, 0.5]));
    }
}
