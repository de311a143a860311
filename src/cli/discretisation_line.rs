//! What `physfit fit` says at its end about its discretisation: E at the
//! finest level of doubled grid and substeps when the check converged (the
//! material's answer, beside the fit's own), or how far the last level
//! still moved it when it did not (src/fit/discretisation_check.rs), or
//! that it was not measured and how to measure it.

use physfit::fit::FitSummary;
use physfit::fit::{first_order_limit_factor, DiscretisationCheck, RefinementEnd, YoungsStatistic};
use physfit::scene::DiscretisationRefinement;

/// The end-of-fit line on the discretisation (module doc).
pub(super) fn discretisation_line(summary: &FitSummary) -> String {
    let Some(d) = &summary.discretisation else {
        return if summary.settings.fit.check_discretisation {
            "discretisation: not checked (it refits E after a stiffness stage, and the plan has \
             none)"
                .to_string()
        } else {
            "discretisation: not checked (`fit.check_discretisation = false`); the default check \
             refits E after the stages at doubled substeps and drivers on this grid until it stops \
             moving, to measure how far the discretisation still moves it \
             (`fit.discretisation_refine = \"grid\"` doubles the grid too)"
                .to_string()
        };
    };
    let powers =
        |values: &[f64]| -> Vec<String> { values.iter().map(|v| format!("10^{v:.2}")).collect() };
    // A fitted ν follows E's values, and its shift E's.
    let ratios = |values: &[f64]| -> Vec<String> {
        summary
            .poisson_parameters
            .iter()
            .zip(values)
            .map(|(p, v)| format!("ν {} {v:.3}", p.name))
            .collect()
    };
    // A per-driver field's levels measured its median.
    let names: Vec<&str> = match d.youngs_statistic {
        YoungsStatistic::Parameters => summary
            .youngs_parameters
            .iter()
            .map(|p| p.name.as_str())
            .collect(),
        YoungsStatistic::FreeDriverMedian => vec!["the free drivers' median"],
    };
    let named: Vec<String> = names
        .iter()
        .zip(powers(d.finest().1))
        .map(|(name, v)| format!("{name} {v}"))
        .chain(ratios(d.finest_poisson()))
        .collect();
    let own = powers(&d.fitted_log10_youngs)
        .into_iter()
        .chain(ratios(&d.fitted_poisson))
        .collect::<Vec<_>>()
        .join(", ");
    let (finest, _) = d.finest();
    let fit = d.fit_resolution();
    let last = match d.levels.last() {
        Some(l) if !l.poisson.is_empty() => format!(
            "{:.3} decades, ν {:.3}",
            l.largest_shift, l.largest_poisson_shift
        ),
        // Three decimals: a converged shift just under the 0.05 tolerance
        // must not print as 0.05.
        _ => format!("{:.3} decades", d.last_shift()),
    };
    let levels = d.levels.len();
    match d.end {
        Some(RefinementEnd::Converged)
            if d.youngs_statistic == YoungsStatistic::FreeDriverMedian =>
        {
            format!(
                "discretisation: E at {finest} (converged, last shift {last}): {}; at the fit's \
                 {fit} {own}. fitted.ply carries the fit's own per-driver E, each driver's bar \
                 widened by the median's distance from the limit, {:.3} decades",
                named.join(", "),
                d.own_error()
                    .and_then(|e| e.first().copied())
                    .unwrap_or(0.0)
                    .abs()
            )
        }
        Some(RefinementEnd::Converged) => format!(
            "discretisation: E at {finest} (converged, last shift {last}): {}; \
             at the fit's {fit} {own}. fitted.ply carries E at grid {}, {} substeps",
            named.join(", "),
            finest.grid_res,
            finest.substeps
        ),
        Some(RefinementEnd::Memory) if levels == 0 => format!(
            "discretisation: not checked: a level {} does not fit the memory left beside the \
             fit; E at the fit's {fit} {own}",
            next_level(d.refinement, d.grid_res)
        ),
        Some(RefinementEnd::Regions) if levels == 0 => format!(
            "discretisation: not checked: the finer drivers change the E regions (see the \
             warning); E at the fit's {fit} {own}"
        ),
        end => {
            let why = match end {
                Some(RefinementEnd::Memory) => format!(
                    "the next level ({}) does not fit the memory left",
                    next_level(d.refinement, finest.grid_res)
                ),
                Some(RefinementEnd::Regions) => {
                    "the next level's drivers change the E regions (see the warning)".to_string()
                }
                Some(RefinementEnd::Budget) => match d.levels.last() {
                    Some(l) if l.stopped_for_budget => format!(
                        "`fit.discretisation_seconds` ran out inside level {levels} (its refit \
                         stopped before it converged; raise the budget to let it finish)"
                    ),
                    _ => format!(
                        "{levels} level{}: the next one would not finish within \
                         `fit.discretisation_seconds` (raise it to run it)",
                        if levels == 1 { "" } else { "s" }
                    ),
                },
                Some(RefinementEnd::RangeEnd) => format!(
                    "{levels} level{}, the last one's E at an end of \
                     `material.log10_youngs_range` (its optimum lies outside the range; widen it \
                     to measure the shift)",
                    if levels == 1 { "" } else { "s" }
                ),
                _ => format!(
                    "{levels} level{} (`fit.discretisation_levels`)",
                    if levels == 1 { "" } else { "s" }
                ),
            };
            format!(
                "discretisation: not converged after {why}: the last shift is {last} \
                 (tolerance {}{}); E at {finest} {}; the fit's own E at {fit} {own} stands \
                 (fitted.ply carries it), uncertain by {} times the shift over every level, its \
                 distance from the limit at first order: {}",
                d.tolerance,
                match d.fitted_poisson.is_empty() {
                    true => String::new(),
                    false => format!(", ν {}", d.poisson_tolerance),
                },
                named.join(", "),
                first_order_limit_factor(levels).map_or("2".to_string(), factor_words),
                own_errors(&names, summary, d).join(", "),
            )
        }
    }
}

/// Each named value's distance from the discretisation's limit
/// ([`DiscretisationCheck::own_error`]), E's in decades, then a fitted ν's.
fn own_errors(names: &[&str], summary: &FitSummary, d: &DiscretisationCheck) -> Vec<String> {
    let youngs = d.own_error().unwrap_or_default();
    let poisson = d.own_poisson_error().unwrap_or_default();
    let ratios = summary
        .poisson_parameters
        .iter()
        .zip(&poisson)
        .map(|(p, e)| format!("ν {} {:.3}", p.name, e.abs()));
    names
        .iter()
        .zip(&youngs)
        .map(|(n, e)| format!("{n} {:.3} decades", e.abs()))
        .chain(ratios)
        .collect()
}

/// A factor of [`first_order_limit_factor`] in words: "2", "4/3", "8/7".
fn factor_words(factor: f64) -> String {
    // 1 / (1 − 2^−k) = 2^k / (2^k − 1).
    let denominator = (1.0 / (factor - 1.0)).round();
    match denominator {
        d if d <= 1.0 => "2".to_string(),
        d => format!("{}/{}", d + 1.0, d),
    }
}

/// The level after one at `grid_res`, in words.
fn next_level(refinement: DiscretisationRefinement, grid_res: u32) -> String {
    match refinement {
        DiscretisationRefinement::Grid => format!("on a grid of {}", 2 * grid_res),
        DiscretisationRefinement::FixedGrid => {
            format!("at twice the drivers and substeps on grid {grid_res}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first-order factor after one, two and three levels, in words.
    #[test]
    fn the_limit_factor_reads_as_a_fraction() {
        let words = |k| factor_words(first_order_limit_factor(k).unwrap());
        assert_eq!(
            (words(1), words(2), words(3)),
            ("2".into(), "4/3".into(), "8/7".into())
        );
    }
}
