//! `field` and `regions` of `[fit.velocity]` / `[fit.stiffness]`: how a
//! stage's unknown is parameterised (docs/design.md
//! § Loss, parameters, fit). Resolved here, mapped onto the drivers by
//! `crate::fit::field_setting`.

use super::config::FitStageConfig;
use super::error::SceneError;
use super::region::{resolve_region, Region};
use super::validate::Validator;

/// The name the fit gives the drivers that no named region holds (one more
/// region of a `field = "regions"` stage); no region may take it.
pub const UNCOVERED_REGION: &str = "rest of the object";

/// A named region of `[fit.<stage>.regions]` (world units).
#[derive(Clone, Debug, PartialEq)]
pub struct NamedRegion {
    /// The key it was written under.
    pub name: String,
    /// The union of its shapes.
    pub region: Region,
}

/// A resolved `field` (with its regions).
#[derive(Clone, Debug, PartialEq, Default)]
pub enum FieldSetting {
    /// One value per driver (PhysDreamer's field; the default).
    #[default]
    Drivers,
    /// One value for the whole object.
    Global,
    /// Linear and angular velocity about the free drivers' centroid
    /// (velocity only).
    Rigid,
    /// One value per named region, in file order; a driver belongs to the
    /// first region holding its rest position, uncovered drivers to one more
    /// region ([`UNCOVERED_REGION`]).
    Regions(Vec<NamedRegion>),
}

/// Which stage a field belongs to: the stiffness has no rigid field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldOf {
    Velocity,
    Stiffness,
}

impl FieldOf {
    fn allowed(self) -> &'static str {
        match self {
            FieldOf::Velocity => {
                "\"drivers\" (one velocity per driver, the default), \"global\" (one velocity), \
                 \"rigid\" (linear + angular velocity) or \"regions\" (one velocity per region \
                 of [fit.velocity.regions])"
            }
            FieldOf::Stiffness => {
                "\"drivers\" (one E per driver, the default), \"global\" (one E) or \"regions\" \
                 (one E per region of [fit.stiffness.regions]); \"rigid\" is for [fit.velocity] only"
            }
        }
    }
}

/// Resolves `field` and `regions` of the stage table `table` (e.g.
/// `fit.stiffness`).
pub(crate) fn resolve_field(
    v: &Validator,
    table: &str,
    of: FieldOf,
    c: &FitStageConfig,
) -> Result<FieldSetting, SceneError> {
    let field = format!("{table}.field");
    let regions_field = format!("{table}.regions");
    let setting = match c.field.as_deref() {
        None | Some("drivers") => FieldSetting::Drivers,
        Some("global") => FieldSetting::Global,
        Some("rigid") if of == FieldOf::Velocity => FieldSetting::Rigid,
        Some("regions") => {
            let Some(named) = c.regions.as_ref().filter(|r| !r.regions.is_empty()) else {
                return Err(v.invalid(
                    &regions_field,
                    "`field = \"regions\"` but no region is named",
                    format!(
                        "add a [{regions_field}] table of `name = [shapes]`, e.g. \
                         `tail = [{{ min = [x, y, z], max = [x, y, z] }}]`"
                    ),
                ));
            };
            let mut regions = Vec::with_capacity(named.regions.len());
            for (name, shapes) in &named.regions {
                let f = format!("{regions_field}.{name}");
                if name == UNCOVERED_REGION {
                    return Err(v.invalid(
                        &f,
                        format!("'{UNCOVERED_REGION}' names the drivers no region holds"),
                        "give this region another name",
                    ));
                }
                if shapes.is_empty() {
                    return Err(v.invalid(
                        &f,
                        "the region has no shape",
                        "list at least one box `{ min, max }` or point set `{ points, radius }`",
                    ));
                }
                regions.push(NamedRegion {
                    name: name.clone(),
                    region: resolve_region(v, &f, shapes)?,
                });
            }
            FieldSetting::Regions(regions)
        }
        Some(other) => {
            return Err(v.invalid(
                &field,
                format!("\"{other}\" is not a field of this stage"),
                format!("write field = {}", of.allowed()),
            ))
        }
    };
    if c.regions.is_some() && !matches!(setting, FieldSetting::Regions(_)) {
        return Err(v.invalid(
            &regions_field,
            format!(
                "given, but `{field}` is \"{}\"",
                c.field.as_deref().unwrap_or("drivers")
            ),
            format!("set `{field} = \"regions\"`, or remove [{regions_field}]"),
        ));
    }
    Ok(setting)
}

/// The largest Poisson's ratio a fitted ν may reach: the default top of
/// `[fit.stiffness] poisson_range` and the largest top it allows
/// (docs/design.md § Loss, parameters, fit). Below 0.5, so that λ stays
/// finite and the time step bounded.
pub const FITTED_POISSON_MAX: f64 = 0.49;

/// The range a fitted Poisson's ratio stays inside, `ν = low + (high −
/// low)·sigmoid(z)` (`[fit.stiffness] poisson_range`; src/fit/poisson.rs):
/// the explicit time-step bound of a scene that fits ν is taken at `high`.
/// A user who knows the material is not rubber-like lowers `high` and
/// with it the substeps (the P-wave speed at ν = 0.49 is 3.57 times that at
/// 0.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonRange {
    /// The bottom, ≥ 0 (never reached).
    pub low: f64,
    /// The top, ≤ [`FITTED_POISSON_MAX`] (never reached).
    pub high: f64,
}

impl Default for PoissonRange {
    /// `[0, 0.49]`.
    fn default() -> Self {
        Self {
            low: 0.0,
            high: FITTED_POISSON_MAX,
        }
    }
}

/// `poisson_range` of the stage table `table`, checked as numbers: finite,
/// `0 ≤ low < high ≤ 0.49`; the default when absent. Whether it may be
/// given at all (a velocity stage, ν not fitted) is
/// [`resolve_poisson`]'s to say; this runs before the substeps are checked,
/// which take the top.
pub(crate) fn resolve_poisson_range(
    v: &Validator,
    table: &str,
    c: &FitStageConfig,
) -> Result<PoissonRange, SceneError> {
    let name = format!("{table}.poisson_range");
    let Some([low, high]) = c.poisson_range else {
        return Ok(PoissonRange::default());
    };
    let fix = || {
        format!(
        "write `poisson_range = [low, high]` with 0 ≤ low < high ≤ {FITTED_POISSON_MAX}, e.g. \
         [0.1, 0.4] for a material known not to be rubber-like"
    )
    };
    if !(low.is_finite() && high.is_finite()) {
        return Err(v.invalid(&name, format!("[{low}, {high}] is not finite"), fix()));
    }
    if low < 0.0 {
        return Err(v.invalid(
            &name,
            format!("the bottom {low} is below 0 (an auxetic material, which physfit does not fit)"),
            fix(),
        ));
    }
    if high > FITTED_POISSON_MAX {
        return Err(v.invalid(
            &name,
            format!(
                "the top {high} is above {FITTED_POISSON_MAX}: near 0.5 λ grows without bound \
                 and so do the substeps"
            ),
            fix(),
        ));
    }
    if low >= high {
        return Err(v.invalid(
            &name,
            format!("the bottom {low} is not below the top {high}"),
            fix(),
        ));
    }
    Ok(PoissonRange { low, high })
}

/// The largest ν a scene's simulation may see: the top of `range` when
/// `[fit.stiffness] poisson` fits ν (any word but `"fixed"`; a wrong word
/// is refused later, by [`resolve_poisson`]), else `material`'s.
pub(crate) fn poisson_bound(stiffness: &FitStageConfig, material: f64, range: PoissonRange) -> f64 {
    match stiffness.poisson.as_deref() {
        None | Some("fixed") => material,
        Some(_) => material.max(range.high),
    }
}

/// `poisson` of `[fit.stiffness]`: whether Poisson's ratio ν is fitted with
/// E, and over which partition (docs/design.md § Loss, parameters, fit).
/// A fitted ν starts at `material.poisson_ratio`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PoissonSetting {
    /// ν held at `material.poisson_ratio` (the default).
    #[default]
    Fixed,
    /// One ν for the whole object.
    Global,
    /// One ν per region of `[fit.stiffness.regions]` (E's partition).
    Regions,
}

impl PoissonSetting {
    /// Whether ν is a fitted unknown.
    pub fn fitted(self) -> bool {
        self != PoissonSetting::Fixed
    }

    /// The values a stiffness stage solves for when E has `youngs` of
    /// them: E's and this setting's ν's (none held, one global, or one per
    /// region of E's). Which solver and gradient flow fit the stage follow
    /// from this count (src/fit/objective.rs `by_lbfgs`).
    pub fn with_youngs(self, youngs: usize) -> usize {
        match self {
            PoissonSetting::Fixed => youngs,
            PoissonSetting::Global => youngs + 1,
            PoissonSetting::Regions => 2 * youngs,
        }
    }
}

/// Resolves `poisson` of the stage table `table` whose `field` resolved
/// to `field`: the velocity stage has no ν, and `"regions"` needs E's
/// regions.
pub(crate) fn resolve_poisson(
    v: &Validator,
    table: &str,
    of: FieldOf,
    c: &FitStageConfig,
    field: &FieldSetting,
) -> Result<PoissonSetting, SceneError> {
    let name = format!("{table}.poisson");
    if c.poisson_range.is_some() {
        let range = format!("{table}.poisson_range");
        if of == FieldOf::Velocity {
            return Err(v.invalid(
                &range,
                "Poisson's ratio is fitted with E, by the stiffness stage",
                "move `poisson_range` to [fit.stiffness]",
            ));
        }
        if matches!(c.poisson.as_deref(), None | Some("fixed")) {
            return Err(v.invalid(
                &range,
                "given, but ν is not fitted (`poisson` is \"fixed\"): ν is \
                 `material.poisson_ratio`",
                format!("set `{name} = \"global\"` (or \"regions\"), or remove `poisson_range`"),
            ));
        }
    }
    let Some(word) = c.poisson.as_deref() else {
        return Ok(PoissonSetting::Fixed);
    };
    if of == FieldOf::Velocity {
        return Err(v.invalid(
            &name,
            "Poisson's ratio is fitted with E, by the stiffness stage",
            "move `poisson` to [fit.stiffness]",
        ));
    }
    match word {
        "fixed" => Ok(PoissonSetting::Fixed),
        "global" => Ok(PoissonSetting::Global),
        "regions" if matches!(field, FieldSetting::Regions(_)) => Ok(PoissonSetting::Regions),
        "regions" => Err(v.invalid(
            &name,
            "\"regions\" fits one ν per region of [fit.stiffness.regions], but the stiffness \
             has no regions",
            format!(
                "set `{table}.field = \"regions\"` with a [{table}.regions] table, or write \
                 `poisson = \"global\"`"
            ),
        )),
        other => Err(v.invalid(
            &name,
            format!("\"{other}\" is not a setting of Poisson's ratio"),
            "write poisson = \"fixed\" (ν held at material.poisson_ratio, the default), \
             \"global\" (one ν) or \"regions\" (one ν per region of [fit.stiffness.regions])",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::PoissonSetting;

    /// A held ν adds nothing, a global one one value, one per region as
    /// many as E has: the count the stage's solver is chosen by.
    #[test]
    fn a_fitted_poisson_ratio_rides_with_youngs_values() {
        assert_eq!(PoissonSetting::Fixed.with_youngs(3), 3);
        assert_eq!(PoissonSetting::Global.with_youngs(3), 4);
        assert_eq!(PoissonSetting::Regions.with_youngs(3), 6);
    }
}
