//! What `physfit fit` says of its exact-gradient step
//! (src/fit/exact_step.rs): how far Newton's step from the exact gradient
//! and its measured Hessian moved E after the stiffness stage's L-BFGS had
//! stopped, whether that says the stage had ended at the loss's optimum,
//! and what it gained; or that the loss did not fall along it.

use physfit::fit::{FitSummary, PoissonParameter, POISSON_DISCRETISATION_TOLERANCE};
use physfit::scene::PoissonRange;

/// The line, when a step was tried (module doc).
pub(super) fn exact_step_line(summary: &FitSummary) -> Option<String> {
    let step = summary.exact_step.as_ref()?;
    let [before, after] = step.loss;
    if step.fraction == 0.0 {
        return Some(format!(
            "exact-gradient step: none kept (neither Newton's step in E from the exact gradient \
             nor half of it lowered the loss {before:.4e}; the stiffness stage's E stands)"
        ));
    }
    let moved: Vec<String> = summary
        .youngs_parameters
        .iter()
        .zip(&step.log10_youngs)
        .map(|(p, d)| {
            // Rounded first: no "−0.000" for a step under half a
            // thousandth of a decade.
            let d = (d * 1000.0).round() / 1000.0 + 0.0;
            format!("{} {d:+.3}", p.name)
        })
        .collect();
    Some(format!(
        "exact-gradient step: E moved by {} decades{} ({} from the exact gradient's measured \
         Hessian; {}), loss {before:.4e} → {after:.4e}",
        moved.join(", "),
        poisson_moves(
            summary.settings.fit.stiffness.poisson_range,
            &summary.poisson_parameters,
            &step.poisson_z
        ),
        newton_steps(step.steps, step.fraction),
        where_the_stage_ended(
            &step.log10_youngs,
            &poisson_shifts(
                summary.settings.fit.stiffness.poisson_range,
                &summary.poisson_parameters,
                &step.poisson_z
            )
        )
    ))
}

/// A move of E under this (decades) says the stiffness stage had ended at
/// the loss's optimum: a tenth of the 0.1 decades a fit is judged by, a
/// fifth of the discretisation check's tolerance.
const AT_THE_OPTIMUM_DECADES: f64 = 0.01;

/// The same for a fitted ν: half the discretisation check's tolerance on
/// ν ([`POISSON_DISCRETISATION_TOLERANCE`]).
const AT_THE_OPTIMUM_POISSON: f64 = 0.5 * POISSON_DISCRETISATION_TOLERANCE;

/// What the step's moves of log10 E (`youngs`) and of a fitted ν
/// (`poisson`) say of where the stiffness stage had ended: at the loss's
/// optimum, or short of it.
fn where_the_stage_ended(youngs: &[f64], poisson: &[f64]) -> String {
    let largest = |moves: &[f64]| moves.iter().fold(0.0_f64, |m, d| m.max(d.abs()));
    if largest(youngs) < AT_THE_OPTIMUM_DECADES && largest(poisson) < AT_THE_OPTIMUM_POISSON {
        let nu = match poisson.is_empty() {
            true => String::new(),
            false => format!(" and ν within {AT_THE_OPTIMUM_POISSON}"),
        };
        format!(
            "the stiffness stage had ended with E within {AT_THE_OPTIMUM_DECADES} decades{nu} of \
             the loss's optimum"
        )
    } else {
        "the stiffness stage had stopped short of the loss's optimum".to_string()
    }
}

/// Each fitted Poisson's ratio before the step (`fitted` is after it; the
/// step moved its `z` by `steps`), through the fit's `poisson_range`;
/// empty when ν was held.
fn poisson_before(range: Option<[f64; 2]>, fitted: &[PoissonParameter], steps: &[f64]) -> Vec<f64> {
    let Some([low, high]) = range else {
        return Vec::new();
    };
    let range = PoissonRange { low, high };
    fitted
        .iter()
        .zip(steps)
        .map(|(p, dz)| range.poisson_of(range.z_of(p.poisson_ratio) - dz))
        .collect()
}

/// How far the step moved each fitted Poisson's ratio ([`poisson_before`]'s
/// arguments); empty when ν was held.
fn poisson_shifts(range: Option<[f64; 2]>, fitted: &[PoissonParameter], steps: &[f64]) -> Vec<f64> {
    fitted
        .iter()
        .zip(poisson_before(range, fitted, steps))
        .map(|(p, before)| p.poisson_ratio - before)
        .collect()
}

/// How much of Newton's step was taken, and in how many steps: "all of
/// Newton's step", "half Newton's step", or "3 Newton steps, the first
/// halved," (`steps` 0 in a file of an earlier physfit, which took one).
fn newton_steps(steps: u32, first_fraction: f64) -> String {
    let first = if first_fraction == 1.0 {
        "whole"
    } else {
        "halved"
    };
    match steps {
        0 | 1 if first_fraction == 1.0 => "all of Newton's step".to_string(),
        0 | 1 => "half Newton's step".to_string(),
        n => format!("{n} Newton steps, the first {first},"),
    }
}

/// ", ν 0.300 → 0.293" per fitted Poisson's ratio `fitted` that the step
/// moved (its `z` by `steps`), through the fit's `poisson_range`; empty
/// when ν was held.
fn poisson_moves(range: Option<[f64; 2]>, fitted: &[PoissonParameter], steps: &[f64]) -> String {
    let named = fitted.len() > 1;
    fitted
        .iter()
        .zip(poisson_before(range, fitted, steps))
        .map(|(p, before)| {
            let name = if named {
                format!(" of {}", p.name)
            } else {
                String::new()
            };
            format!(", ν{name} {before:.3} → {:.3}", p.poisson_ratio)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fitted(name: &str, poisson_ratio: f64) -> PoissonParameter {
        PoissonParameter {
            name: name.into(),
            poisson_ratio,
            std: None,
            discretisation_shift: None,
            discretisation_error: None,
            error_bar: None,
        }
    }

    /// One step says how much of it was taken; several say how many.
    #[test]
    fn the_line_counts_the_newton_steps() {
        assert_eq!(newton_steps(1, 1.0), "all of Newton's step");
        assert_eq!(newton_steps(0, 0.5), "half Newton's step");
        assert_eq!(newton_steps(3, 0.5), "3 Newton steps, the first halved,");
        assert_eq!(newton_steps(2, 1.0), "2 Newton steps, the first whole,");
    }

    /// A step of less than a hundredth of a decade in every E says the
    /// stage had ended at the optimum; a larger one in any, short of it.
    /// A fitted ν that moved by 0.01 or more says the same.
    #[test]
    fn the_line_says_whether_the_stage_had_stopped_short() {
        let at = "the stiffness stage had ended with E within 0.01 decades of the loss's optimum";
        let short = "the stiffness stage had stopped short of the loss's optimum";
        assert_eq!(where_the_stage_ended(&[-0.002, 0.0], &[]), at);
        assert_eq!(where_the_stage_ended(&[], &[]), at);
        assert_eq!(where_the_stage_ended(&[0.001, -0.165], &[]), short);
        assert_eq!(where_the_stage_ended(&[0.01], &[]), short);
        assert_eq!(
            where_the_stage_ended(&[0.003], &[-0.004]),
            "the stiffness stage had ended with E within 0.01 decades and ν within 0.01 of the \
             loss's optimum"
        );
        assert_eq!(where_the_stage_ended(&[0.003], &[-0.007, 0.012]), short);
        let range = PoissonRange {
            low: 0.0,
            high: 0.4,
        };
        let dz = range.z_of(0.294) - range.z_of(0.301);
        let shifts = poisson_shifts(Some([0.0, 0.4]), &[fitted("object", 0.294)], &[dz]);
        assert!((shifts[0] + 0.007).abs() < 1e-12, "{shifts:?}");
        assert!(poisson_shifts(None, &[], &[]).is_empty());
    }

    /// The line gives ν before and after the step, through the range's
    /// map (the step is in `z`), naming regions only when there are
    /// several, and says nothing of a ν that was held.
    #[test]
    fn the_exact_steps_line_gives_nu_before_and_after() {
        let range = PoissonRange {
            low: 0.0,
            high: 0.4,
        };
        let dz = range.z_of(0.293) - range.z_of(0.3);
        assert_eq!(
            poisson_moves(Some([0.0, 0.4]), &[fitted("object", 0.293)], &[dz]),
            ", ν 0.300 → 0.293"
        );
        assert_eq!(
            poisson_moves(
                Some([0.0, 0.4]),
                &[fitted("tail", 0.293), fitted("rest", 0.2)],
                &[dz, 0.0]
            ),
            ", ν of tail 0.300 → 0.293, ν of rest 0.200 → 0.200"
        );
        assert_eq!(poisson_moves(None, &[], &[]), "");
    }
}
