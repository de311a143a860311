//! What `physfit fit` says of the values it fitted, each with its error
//! bars (docs/design.md § Error bars): the frames' standard error and,
//! where the discretisation was checked, how far the value lies from its
//! discretisation's limit (the check's shift extrapolated at first order). A field of more values than a line holds (per driver) is named
//! with where its values are.

use physfit::fit::{FitSummary, YoungsStatistic};

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
    let mut parts = Vec::new();
    if youngs.len() <= LISTED {
        let values: Vec<String> = youngs
            .iter()
            .map(|p| {
                let bars = bars(p.log10_std, p.discretisation_error);
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
        parts.push(format!(
            "E per driver ({} values: fitted.ply, with each splat's youngs_log10_std{median})",
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
}
