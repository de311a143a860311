//! The splats of `stiffness.png`: the object with its
//! colours replaced by the colour map of log10 E, rendered by the lead's
//! existing rasterizer and finished by [`super::with_colorbar`].

use super::colormap::{check_range, map, normalised};
use super::ReportError;
use crate::scene::Gaussians;

/// The degree-0 SH basis constant `1 / (2√π)`: a splat's colour is
/// `0.5 + C0·dc` (+ the view-dependent bands, docs/design.md § Gaussian
/// splatting).
const SH_C0: f64 = 0.282_094_791_773_878_14;

/// `gaussians` with splat `i` coloured `colours[i]` (RGB in render units,
/// [0, 1]) from every direction: its SH DC term set to
/// `(colour − 0.5) / C0`, so that it renders as exactly that colour, and
/// its higher bands zeroed; the SH degree, positions, rotations, scales and
/// opacities are kept, so the result can stand in for the input anywhere
/// (same buffer sizes). [`ReportError::ColourCount`] unless there is one
/// colour per Gaussian.
pub fn recolored(gaussians: &Gaussians, colours: &[[f32; 3]]) -> Result<Gaussians, ReportError> {
    if colours.len() != gaussians.len() {
        return Err(ReportError::ColourCount {
            expected: gaussians.len(),
            found: colours.len(),
        });
    }
    let k = gaussians.coeffs_per_splat();
    let mut sh = vec![[0.0f32; 3]; gaussians.sh.len()];
    for (i, colour) in colours.iter().enumerate() {
        sh[i * k] = colour.map(|c| ((f64::from(c) - 0.5) / SH_C0) as f32);
    }
    Ok(Gaussians {
        sh,
        ..gaussians.clone()
    })
}

/// One render colour per value: the colour map ([`map`]) at
/// `(value − low) / (high − low)` ([`normalised`]; clamped, so values
/// outside the range take its end colours), as the 8-bit colour divided by
/// 255, so that a render written as `round(255·v)` gives back exactly the
/// colour bar's colour. NaN (e.g. a static Gaussian, which has no
/// stiffness) gives the map's grey. [`ReportError::ColourRange`] when
/// `low..=high` is not finite or reversed.
pub fn stiffness_colours(
    values: &[f64],
    low: f64,
    high: f64,
) -> Result<Vec<[f32; 3]>, ReportError> {
    check_range("stiffness.png", low, high)?;
    Ok(values
        .iter()
        .map(|v| map(normalised(*v, low, high)).map(|c| f32::from(c) / 255.0))
        .collect())
}
