//! The fit's last move: Newton's step in E from the exact gradient
//! (docs/design.md § Error bars, "The exact-gradient step"). The
//! stiffness stage follows stage 2's truncated gradient, which is not the
//! gradient of the loss its line search measures: where it stops, the
//! loss's own optimum in E can still be some way off (on the fox-scale
//! case, 0.16 decades in the tail). The error bars then measure the exact
//! gradient and Hessian at the fitted values, which give Newton's step in
//! E (and a fitted ν) with the velocity held
//! ([`super::uncertainty::StiffnessNewtonStep`]). It is tried on the last
//! stiffness stage's loss (its frames, views and weights, smoothness
//! included: the objective the stage minimised), kept when that loss falls,
//! else half of it, else nothing: two or three forwards, no gradient.
//!
//! The error bars stay those of the point before the step: the step is a
//! fraction of the distance over which the curvature changes.

use super::discretisation_check::last_stiffness;
use super::error::FitError;
use super::evaluation::Parameters;
use super::objective::blown_up;
use super::plan::StagePlan;
use super::poisson::Z_BOUND;
use super::problem::FitProblem;
use super::state::FitState;
use crate::gpu::GpuContext;

pub use super::exact_step_record::ExactStep;

/// The fractions of Newton's step tried, in order.
const FRACTIONS: [f64; 2] = [1.0, 0.5];

/// Tries the step (module doc) from `state`'s values, whose error bars
/// hold Newton's step; moves `state` when a fraction of it lowers the
/// loss. `None` when there is no step to try (no error bars, no positive
/// definite E block, an E at an end of its range, no stiffness stage).
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
    let at = state.parameters();
    let Some(before) = blown_up(problem.loss(ctx, &at, &stage.selection))? else {
        return Ok(None);
    };
    let moved = |fraction: f64| Parameters {
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
    };
    let kept = first_lower(before.loss, |fraction| {
        let loss = blown_up(problem.loss(ctx, &moved(fraction), &stage.selection))?;
        Ok::<_, FitError>(loss.map(|r| r.loss))
    })?;
    let step = match kept {
        Some((fraction, after)) => {
            let p = moved(fraction);
            let step = ExactStep {
                log10_youngs: p
                    .log10_youngs
                    .iter()
                    .zip(&at.log10_youngs)
                    .map(|(a, b)| a - b)
                    .collect(),
                poisson_z: p.poisson.iter().zip(&at.poisson).map(|(a, b)| a - b).collect(),
                fraction,
                loss: [before.loss, after],
                predicted_decrease: newton.predicted_decrease,
            };
            state.log10_youngs = p.log10_youngs;
            state.poisson = p.poisson;
            step
        }
        None => ExactStep {
            log10_youngs: vec![0.0; at.log10_youngs.len()],
            poisson_z: vec![0.0; at.poisson.len()],
            fraction: 0.0,
            loss: [before.loss, before.loss],
            predicted_decrease: newton.predicted_decrease,
        },
    };
    Ok(Some(step))
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
