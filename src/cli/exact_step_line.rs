//! What `physfit fit` says of its exact-gradient step
//! (src/fit/exact_step.rs): how far Newton's step from the exact gradient
//! moved E after the stiffness stage's truncated gradient had stopped, and
//! what it gained; or that the loss did not fall along it.

use physfit::fit::FitSummary;

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
        "exact-gradient step: E moved by {} decades ({} Newton's step from the exact gradient; \
         the stiffness stage's truncated gradient had stopped short of the loss's optimum), \
         loss {before:.4e} → {after:.4e}",
        moved.join(", "),
        if step.fraction == 1.0 {
            "all of"
        } else {
            "half"
        }
    ))
}
