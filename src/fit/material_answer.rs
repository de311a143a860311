//! What `fitted.ply` and `stiffness.png` carry as the material: E (and a
//! fitted ν) and its error bar per driver (docs/design.md § Error bars,
//! "From the discretisation").
//!
//! - **E.** The finest level's when the discretisation check converged
//!   on a `global` or `regions` field, the fit's own otherwise (a
//!   per-driver field's check measures its median).
//!   (`drivers.safetensors` always keeps the fit's own: only it
//!   reproduces the frames at the recorded substeps.)
//! - **Its error bar** (`youngs_log10_std`). The data's standard error
//!   alone when no level of the check ran. Once one has, the data's and
//!   the check's error that belongs with that E
//!   ([`DiscretisationCheck::answer_error`]: the last shift for the finest
//!   level's E, the shift over every level extrapolated to the limit at
//!   first order for the fit's own; a per-driver field's median's, for
//!   every driver) in quadrature, `√(σ_d² + s_d²)` per driver, with `s_d`
//!   that error through the E field's map, capped like the data's at the
//!   spread of a value anywhere in the E range. On the twins the data's
//!   bar alone is tens of its own widths from the truth; the shift is
//!   what covers the discretisation's bias.

use super::discretisation::{DiscretisationCheck, YoungsStatistic};
use super::problem::FitProblem;
use super::session_error::SessionError;
use super::state::FitState;
use super::uncertainty::unconstrained_log10_std;
use crate::output::error_bar_colouring::{COMBINED_ERROR_BAR_CAPTION, ERROR_BAR_CAPTION};
use crate::output::FittedDrivers;
use crate::scene::Scene;

/// The material's values per driver and the captions that say which.
pub struct MaterialAnswer {
    /// E (and ν) per driver, with `youngs_log10_std` the bar described in
    /// the module doc.
    pub drivers: FittedDrivers,
    /// The stiffness panel's caption: which E it shows.
    pub caption: String,
    /// The error-bar panel's caption: which bar it shows.
    pub error_caption: &'static str,
}

/// Each driver's data standard error and discretisation shift in
/// quadrature, capped at `cap`; a driver at the cap (not pinned by the
/// frames) stays there.
pub fn combined_driver_std(data: &[f64], shift: &[f64], cap: f64) -> Vec<f64> {
    data.iter()
        .zip(shift)
        .map(|(&s, &d)| s.hypot(d).min(cap))
        .collect()
}

/// The material's answer of a finished fit (module doc); `fitted` holds
/// the fit's own E, velocity and data error bars per driver, as
/// `drivers.safetensors` has them.
pub fn material_answer(
    scene: &Scene,
    problem: &FitProblem,
    state: &FitState,
    fitted: &FittedDrivers,
) -> Result<MaterialAnswer, SessionError> {
    let check: Option<&DiscretisationCheck> = state.discretisation.as_ref();
    let converged = check.filter(|d| d.end.is_some() && d.answers_with_finest());
    let log10 = match converged {
        Some(d) => problem.youngs_map().apply(&d.answer_log10_youngs)?,
        None => fitted.log10_youngs.clone(),
    };
    let shift = check.and_then(DiscretisationCheck::answer_error);
    let (log10_std, error_caption) = match (&fitted.youngs_log10_std, shift) {
        (Some(data), Some(shift)) => {
            // A per-driver field's check measured its median: that error
            // is every driver's.
            let median = check.map(|d| d.youngs_statistic) == Some(YoungsStatistic::FreeDriverMedian);
            let shift = match (median, shift.first()) {
                (true, Some(&e)) => vec![e; state.log10_youngs.len()],
                _ => shift,
            };
            let per_driver = problem.youngs_map().apply(&shift)?;
            let cap = unconstrained_log10_std(scene.material.log10_youngs_range);
            (
                Some(combined_driver_std(data, &per_driver, cap)),
                COMBINED_ERROR_BAR_CAPTION,
            )
        }
        (data, _) => (data.clone(), ERROR_BAR_CAPTION),
    };
    let mut answer = fitted
        .clone()
        .with_youngs(log10, log10_std)
        .map_err(SessionError::output)?;
    // `fitted` holds the fit's own ν; a converged check's finest ν
    // replaces it (a check that kept none leaves it).
    let finest_poisson = converged.filter(|d| {
        problem.poisson_map().is_some() && d.answer_poisson.len() == state.poisson.len()
    });
    if let Some(d) = finest_poisson {
        let range = scene.fit.stiffness.poisson_range;
        let z: Vec<f64> = d.answer_poisson.iter().map(|&nu| range.z_of(nu)).collect();
        answer = answer
            .with_poisson(problem.driver_poisson(&z)?)
            .map_err(SessionError::output)?;
    }
    let caption = match converged {
        Some(d) => format!(
            "E at grid {}, {} substeps (converged)",
            d.answer_grid_res, d.answer_substeps
        ),
        None => "fitted E".to_string(),
    };
    Ok(MaterialAnswer {
        drivers: answer,
        caption,
        error_caption,
    })
}

#[cfg(test)]
mod tests {
    use super::combined_driver_std;

    #[test]
    fn the_bars_add_in_quadrature_and_stay_under_the_cap() {
        let bars = combined_driver_std(&[0.03, 0.5, 0.0], &[-0.04, 0.3, 0.0], 0.577);
        assert!((bars[0] - 0.05).abs() < 1e-12, "3-4-5: {}", bars[0]);
        assert_eq!(bars[1], 0.577, "a driver the frames do not pin stays at the cap");
        assert_eq!(bars[2], 0.0);
    }
}
