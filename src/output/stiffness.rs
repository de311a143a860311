//! The one stiffness colouring of splats, shared by the fit's
//! `stiffness.png` and `render --color-by stiffness`, so that two pictures
//! of one fit (or of two fits of one scene) use the same colours for the
//! same E.
//!
//! - **Values**: log10 of each splat's `youngs_modulus` in world units as
//!   [`SplatMaterial`] derives it (followers: the mean of their drivers'
//!   log10 E; anchored splats: their cluster driver's); static splats are
//!   not simulated and drawn grey.
//! - **Range**: the scene's `material.log10_youngs_range` in world units
//!   ([`stiffness_range_world`]), the range the fit could move E in, not
//!   the fitted minimum and maximum: a uniform fit is then one colour
//!   instead of a stretched noise, and colours compare across fits.

use image::RgbImage;

use super::fitted_ply::SplatMaterial;
use super::units::youngs_world;
use crate::report::{recolored, stiffness_colours, with_colorbar, ReportError};
use crate::scene::Gaussians;

/// The colour bar's label.
pub const STIFFNESS_LABEL: &str = "log10 E (world units)";

/// `log10_youngs_range` (normalised units) in world units for a box of side
/// `side` (`E_world = E · side²`, [`youngs_world`]).
pub fn stiffness_range_world(log10_youngs_range: [f64; 2], side: f64) -> [f64; 2] {
    let shift = youngs_world(1.0, side).log10();
    log10_youngs_range.map(|v| v + shift)
}

/// Per-splat values and the range they are coloured over (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct StiffnessColouring {
    /// log10 E in world units per splat; NaN for static splats.
    pub values: Vec<f64>,
    /// The colour map's ends, log10 E in world units.
    pub range: [f64; 2],
}

impl StiffnessColouring {
    /// The colouring of `material` over `range` (world units, from
    /// [`stiffness_range_world`]).
    pub fn new(material: &SplatMaterial, range: [f64; 2]) -> Self {
        let values = material
            .youngs_modulus
            .iter()
            .zip(&material.simulated)
            .map(|(&e, &s)| {
                if s > 0.0 {
                    f64::from(e).log10()
                } else {
                    f64::NAN
                }
            })
            .collect();
        Self { values, range }
    }

    /// `gaussians` with their colours replaced by the colour map.
    pub fn recoloured(&self, gaussians: &Gaussians) -> Result<Gaussians, ReportError> {
        let [low, high] = self.range;
        recolored(gaussians, &stiffness_colours(&self.values, low, high)?)
    }

    /// `image` with the colour bar of the range beside it.
    pub fn with_colorbar(&self, image: &RgbImage) -> Result<RgbImage, ReportError> {
        let [low, high] = self.range;
        with_colorbar(image, low, high, STIFFNESS_LABEL)
    }
}
