//! What `physfit fit` says of the values it fitted, each with its error
//! bars (docs/design.md § Error bars): the frames' standard error and,
//! where the discretisation was checked, how far the value lies from its
//! discretisation's limit (the check's shift extrapolated at first order). A field of more values than a line holds (per driver) is named
//! with where its values are.

use physfit::fit::{at_range_end, CurvatureMethod, FitSummary, FitUncertainty, YoungsStatistic};

/// At most this many values of one field are printed; more are a
/// per-driver field, kept in fit.json, fitted.ply and drivers.safetensors.
const LISTED: usize = 16;

/// The line (module doc).
pub(super) fn fitted_line(summary: &FitSummary) -> String {
    let errors = summary.uncertainty.as_ref();
    // A check that ran no level (the first did not fit the memory, or
    // changed the regions) measured no shift, and has no error.
    let measured = summary
        .discretisation
        .as_ref()
        .is_some_and(|d| d.measured_a_shift());
    let youngs = &summary.youngs_parameters;
    let range = summary.settings.material.log10_youngs_range;
    let mut parts = Vec::new();
    if youngs.len() <= LISTED {
        let values: Vec<String> = youngs
            .iter()
            .map(|p| {
                let bars = match range_end_words(p.log10_normalised, range) {
                    Some(words) => words.to_string(),
                    None => bars(p.log10_std, p.discretisation_error),
                };
                format!("{} 10^{:.3}{bars}", p.name, p.log10_normalised)
            })
            .collect();
        parts.push(format!("E (normalised) {}", values.join(", ")));
    } else {
        // The discretisation check of a per-driver field measured its
        // median.
        let median = summary
            .discretisation
            .as_ref()
            .filter(|d| d.youngs_statistic == YoungsStatistic::FreeDriverMedian)
            .and_then(|d| {
                Some((
                    d.fitted_log10_youngs.first()?,
                    d.own_error()?.first()?.abs(),
                ))
            })
            .map(|(m, e)| {
                format!(
                    "; their median 10^{m:.3} ± {} from the discretisation",
                    short(e)
                )
            })
            .unwrap_or_default();
        let pinned = errors.and_then(pinned_words).unwrap_or_default();
        parts.push(format!(
            "E per driver ({} values: fitted.ply, with each splat's youngs_log10_std{pinned}{median})",
            youngs.len()
        ));
    }
    let velocity = &summary.velocity_parameters;
    let velocity_std = errors.map_or(&[][..], |u| u.velocity_std.as_slice());
    if velocity.len() <= LISTED {
        let values: Vec<String> = velocity
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let std = velocity_std.get(i).copied().flatten();
                let error = summary.velocity_discretisation_error.get(i).copied();
                format!("{v:.4}{}", bars(std, error))
            })
            .collect();
        if !values.is_empty() {
            parts.push(format!("v0 ({})", values.join(", ")));
        }
    } else {
        parts.push(format!(
            "v0 per driver ({} values: drivers.safetensors)",
            velocity.len()
        ));
    }
    for p in &summary.poisson_parameters {
        let bars = bars(p.std, p.discretisation_error);
        parts.push(format!("ν {} {:.3}{bars}", p.name, p.poisson_ratio));
    }
    let legend = match measured {
        true => {
            "± the frames' standard error, then the discretisation's (the check's shift \
             extrapolated to the limit)"
        }
        false => "± the frames' standard error",
    };
    format!("fitted: {} ({legend})", parts.join("; "))
}

/// How many per-driver values the frames pin against the regulariser
/// (docs/design.md § Error bars: the TV term's largest pull moves the
/// value by less than its standard error), where the diagonal estimate
/// that decides it ran: the others' E is the regulariser's guess, which a
/// user of a per-driver field must know before reading it.
fn pinned_words(errors: &FitUncertainty) -> Option<String> {
    if errors.youngs_method != Some(CurvatureMethod::Diagonal) {
        return None;
    }
    let pinned = errors.youngs_constrained.iter().filter(|&&c| c).count();
    Some(format!(
        "; the frames pin {pinned} of them, the rest is the regulariser's guess"
    ))
}

/// What stands for the error bars of a log10 E held at an end of the
/// scene's range: the bound, not the frames, decided it, so neither bar
/// means anything there (the data's curvature is cut by the bound, and a
/// discretisation level held at the same end moves it by nothing). The
/// frames put the value beyond the end; the fix is the range.
fn range_end_words(log10: f64, range: [f64; 2]) -> Option<&'static str> {
    if !at_range_end(&[log10], range) {
        return None;
    }
    Some(match (log10 - range[0]).abs() < (range[1] - log10).abs() {
        true => " (held at the bottom of `material.log10_youngs_range`: the frames put it lower; widen the range)",
        false => " (held at the top of `material.log10_youngs_range`: the frames put it higher; widen the range)",
    })
}

/// " ± σ" for the frames' standard error (" (unpinned)" where the frames
/// do not constrain the value), then " ± error" for the discretisation's
/// when the check measured one.
fn bars(data: Option<f64>, discretisation: Option<f64>) -> String {
    let data = match data {
        Some(s) => format!(" ± {}", short(s)),
        None => " (unpinned)".to_string(),
    };
    match discretisation {
        Some(d) => format!("{data} ± {}", short(d.abs())),
        None => data,
    }
}

/// Two significant digits: fixed from 0.01 up, else scientific.
fn short(x: f64) -> String {
    if x >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value has the frames' error bar, or says the frames do not pin
    /// it; a checked discretisation's error follows, without its sign.
    #[test]
    fn each_value_carries_its_error_bars() {
        assert_eq!(bars(Some(8.7e-4), None), " ± 8.7e-4");
        assert_eq!(bars(Some(0.0123), Some(-0.107)), " ± 0.012 ± 0.107");
        assert_eq!(bars(None, None), " (unpinned)");
        assert_eq!(bars(None, Some(0.02)), " (unpinned) ± 0.020");
    }

    /// A value the range's bound held has no bars: it says which end held
    /// it and what to change; one inside the range keeps its bars.
    #[test]
    fn a_value_held_at_an_end_of_the_range_says_so_instead_of_bars() {
        let range = [3.0, 5.0];
        let bottom = range_end_words(3.0, range).unwrap();
        assert!(
            bottom.contains("bottom") && bottom.contains("widen the range"),
            "{bottom}"
        );
        let top = range_end_words(5.0 - 1e-6, range).unwrap();
        assert!(top.contains("top") && top.contains("higher"), "{top}");
        assert_eq!(range_end_words(3.7, range), None);
    }

    /// A per-driver field's line counts the drivers the frames pin, from
    /// the diagonal estimate's flags; a Hessian's flags mean "has a bar"
    /// and are not counted as pinned against the regulariser.
    #[test]
    fn a_per_driver_field_says_how_many_values_the_frames_pin() {
        let diagonal: FitUncertainty = serde_json::from_value(serde_json::json!({
            "frames": [1, 2], "residuals": 100, "image_loss": 0.01, "scale": 1e-4,
            "evaluations": 3, "youngs_method": "diagonal",
            "youngs_log10_std": [0.1, 0.577, 0.2], "youngs_constrained": [true, false, true],
            "velocity_std": [],
        }))
        .unwrap();
        assert_eq!(
            pinned_words(&diagonal).as_deref(),
            Some("; the frames pin 2 of them, the rest is the regulariser's guess")
        );
        let hessian = FitUncertainty {
            youngs_method: Some(CurvatureMethod::Hessian),
            ..diagonal
        };
        assert_eq!(pinned_words(&hessian), None);
    }
}
