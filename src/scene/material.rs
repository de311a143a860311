//! `[material]`: density, Poisson's ratio and the range of Young's
//! modulus, resolved and validated (docs/scene.md).

use super::config::MaterialConfig;
use super::error::SceneError;
use super::validate::{representable, Validator};

/// Resolved `[material]` (normalised units).
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    /// Density ρ.
    pub density: f64,
    /// Poisson's ratio ν ∈ [0, 0.5).
    pub poisson_ratio: f64,
    /// Initial Young's modulus.
    pub youngs_modulus: f64,
    /// `[low, high]` bounds of log10 E.
    pub log10_youngs_range: [f64; 2],
}

/// `[material]`.
pub(crate) fn resolve_material(v: &Validator, m: &MaterialConfig) -> Result<Material, SceneError> {
    let density = v.positive("material.density", m.density)?;
    let nu = m.poisson_ratio;
    if !(0.0..0.5).contains(&nu) {
        return Err(v.out_of_range(
            "material.poisson_ratio",
            nu,
            "must be in [0, 0.5): 0.5 is incompressible (λ → ∞) and negative ratios are not supported; typical solids use 0.2–0.45",
        ));
    }
    let [lo, hi] = m.log10_youngs_range;
    if !(representable(lo) && representable(hi)) {
        return Err(v.out_of_range(
            "material.log10_youngs_range",
            format!("{:?}", m.log10_youngs_range),
            "both ends must be finite",
        ));
    }
    if lo >= hi {
        return Err(SceneError::InvertedRange {
            path: v.path.to_path_buf(),
            field: "material.log10_youngs_range".into(),
            low: lo,
            high: hi,
        });
    }
    let e0 = v.positive("material.youngs_modulus", m.youngs_modulus)?;
    if !(lo..=hi).contains(&e0.log10()) {
        return Err(v.out_of_range(
            "material.youngs_modulus",
            e0,
            format!(
                "must lie in the range 10^{lo} – 10^{hi} given by `material.log10_youngs_range`"
            ),
        ));
    }
    Ok(Material {
        density,
        poisson_ratio: nu,
        youngs_modulus: e0,
        log10_youngs_range: [lo, hi],
    })
}
