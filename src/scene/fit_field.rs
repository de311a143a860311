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

/// The largest Poisson's ratio a fitted ν reaches (`ν = 0.49·sigmoid(z)`,
/// docs/design.md § Loss, parameters, fit): the explicit time-step bound of
/// a scene that fits ν is taken there.
pub const FITTED_POISSON_MAX: f64 = 0.49;

/// The largest ν a scene's simulation may see: [`FITTED_POISSON_MAX`]
/// when `[fit.stiffness] poisson` fits it (any word but `"fixed"`; a wrong
/// word is refused later, by [`resolve_poisson`]), else `material`'s.
pub(crate) fn poisson_bound(stiffness: &FitStageConfig, material: f64) -> f64 {
    match stiffness.poisson.as_deref() {
        None | Some("fixed") => material,
        Some(_) => material.max(FITTED_POISSON_MAX),
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
