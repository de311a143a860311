//! What `physfit fit` says at its end about its discretisation: how far E
//! moved when refitted at finer substeps (the discretisation's error bar,
//! src/fit/discretisation_check.rs), or that it was not measured and how
//! to measure it.

use physfit::fit::FitSummary;

/// The end-of-fit line on the discretisation (module doc).
pub(super) fn discretisation_line(summary: &FitSummary) -> String {
    let Some(d) = &summary.discretisation else {
        return if summary.settings.fit.check_discretisation {
            "discretisation: not checked (it refits a `global` or `regions` E after a stiffness \
             stage: a per-driver field's values are pinned by the regulariser as much as by the \
             frames)"
                .to_string()
        } else {
            "discretisation: not checked; `fit.check_discretisation = true` refits E at twice \
             the substeps to measure how far the time step still moves it"
                .to_string()
        };
    };
    let shifts: Vec<String> = summary
        .youngs_parameters
        .iter()
        .zip(&d.shift)
        .map(|(p, s)| format!("{} {s:+.3}", p.name))
        .collect();
    let verdict = if d.converged {
        format!("converged (every shift below {} decades)", d.tolerance)
    } else {
        format!(
            "not converged: E still depends on the time step by up to {:.2} decades (tolerance {})",
            d.largest_shift, d.tolerance
        )
    };
    format!(
        "discretisation: E refitted at {} substeps per frame (fitted at {}) moves by {} decades; {verdict}",
        d.refined_substeps,
        d.substeps,
        shifts.join(", ")
    )
}
