//! What `physfit fit` says at its end about its discretisation: E at the
//! finest level of doubled substeps when the check converged (the
//! material's answer, beside the fit's own), or how far the last level
//! still moved it when it did not (src/fit/discretisation_check.rs), or
//! that it was not measured and how to measure it.

use physfit::fit::FitSummary;
use physfit::fit::RefinementEnd;

/// The end-of-fit line on the discretisation (module doc).
pub(super) fn discretisation_line(summary: &FitSummary) -> String {
    let Some(d) = &summary.discretisation else {
        return if summary.settings.fit.check_discretisation {
            "discretisation: not checked (it refits a `global` or `regions` E after a stiffness \
             stage: a per-driver field's values are pinned by the regulariser as much as by the \
             frames)"
                .to_string()
        } else {
            "discretisation: not checked; `fit.check_discretisation = true` refits E at doubled \
             substeps until it stops moving, to measure how far the time step still moves it"
                .to_string()
        };
    };
    let powers =
        |values: &[f64]| -> Vec<String> { values.iter().map(|v| format!("10^{v:.2}")).collect() };
    let named: Vec<String> = summary
        .youngs_parameters
        .iter()
        .zip(powers(d.finest().1))
        .map(|(p, v)| format!("{} {v}", p.name))
        .collect();
    let own = powers(&d.fitted_log10_youngs).join(", ");
    let (finest, _) = d.finest();
    let last = d.last_shift();
    let levels = d.levels.len();
    match d.end {
        Some(RefinementEnd::Converged) => format!(
            "discretisation: E at {finest} substeps (converged, last shift {last:.2} decades): {}; \
             at the fit's {} substeps {own}. fitted.ply carries E at {finest} substeps",
            named.join(", "),
            d.substeps
        ),
        _ if levels == 0 => format!(
            "discretisation: not checked: a level at {} substeps per frame does not fit the memory \
             left beside the fit; E at the fit's {} substeps {own}",
            2 * d.substeps,
            d.substeps
        ),
        end => {
            let why = match end {
                Some(RefinementEnd::Memory) => format!(
                    "the next level ({} substeps) does not fit the memory left",
                    2 * finest
                ),
                _ => format!(
                    "{levels} level{} (`fit.discretisation_levels`)",
                    if levels == 1 { "" } else { "s" }
                ),
            };
            format!(
                "discretisation: not converged after {why}: the last shift is {last:.2} decades \
                 (tolerance {}); E at {finest} substeps {}; the fit's own E at {} substeps \
                 {own} stands (fitted.ply carries it), uncertain by the shifts",
                d.tolerance,
                named.join(", "),
                d.substeps
            )
        }
    }
}
