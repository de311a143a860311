//! The second panel of `stiffness.png`: the splats coloured by the
//! standard error of their log10 E ([`SplatMaterial::youngs_log10_std`],
//! docs/design.md § Error bars), so that the fitted E beside it reads as
//! known (dark: a small error bar) or as the regulariser's guess (yellow:
//! the error bar of a value the frames leave anywhere in
//! `material.log10_youngs_range`, [`uniform_std`]).
//!
//! The range is fixed, 0 to that spread, not the fit's own minimum and
//! maximum, so that colours compare across fits of one scene, and a fit
//! whose every value is known is dark everywhere instead of a stretched
//! noise. Static splats are grey, as in the stiffness panel.

use image::RgbImage;

use super::fitted_ply::SplatMaterial;
use crate::report::{recolored, stiffness_colours, with_colorbar, ReportError};
use crate::scene::Gaussians;
use crate::solve::covariance::uniform_std;

/// The colour bar's label.
pub const ERROR_BAR_LABEL: &str = "σ of log10 E (decades)";

/// The caption above the error-bar panel of `stiffness.png`: the bar's top
/// is where the frames do not pin E (the regulariser's guess).
pub const ERROR_BAR_CAPTION: &str = "σ of log10 E; top of the bar: the frames do not pin it";

/// The caption above the error-bar panel once the discretisation check
/// has measured a shift: the panel then shows the data's standard error
/// and the discretisation's error in quadrature (the last shift for a
/// converged check's finest level, the shift extrapolated to the limit for
/// the fit's own E: src/fit/material_answer.rs). Short, so that it is
/// drawn at the size of the panel beside it.
pub const COMBINED_ERROR_BAR_CAPTION: &str = "σ of log10 E with the discretisation's error";

/// Per-splat standard errors and the range they are coloured over.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorBarColouring {
    /// The standard error of log10 E per splat, decades; NaN for static
    /// splats.
    pub values: Vec<f64>,
    /// The colour map's ends.
    pub range: [f64; 2],
}

impl ErrorBarColouring {
    /// The colouring of `material` for a fit over `log10_youngs_range`.
    pub fn new(material: &SplatMaterial, log10_youngs_range: [f64; 2]) -> Self {
        let values = material
            .youngs_log10_std
            .iter()
            .zip(&material.simulated)
            .map(|(&s, &sim)| if sim > 0.0 { f64::from(s) } else { f64::NAN })
            .collect();
        Self {
            values,
            range: [0.0, uniform_std(log10_youngs_range)],
        }
    }

    /// `gaussians` with their colours replaced by the colour map.
    pub fn recoloured(&self, gaussians: &Gaussians) -> Result<Gaussians, ReportError> {
        let [low, high] = self.range;
        recolored(gaussians, &stiffness_colours(&self.values, low, high)?)
    }

    /// `image` with the colour bar of the range beside it.
    pub fn with_colorbar(&self, image: &RgbImage) -> Result<RgbImage, ReportError> {
        let [low, high] = self.range;
        with_colorbar(image, low, high, ERROR_BAR_LABEL)
    }
}
