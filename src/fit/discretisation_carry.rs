//! The parameters of one level of the discretisation check carried onto
//! the next level's drivers (src/fit/discretisation_grid.rs rebuilds them
//! for a finer grid; docs/design.md § Error bars, "From the
//! discretisation").
//!
//! A global, rigid or per-region value means the same on any drivers and
//! carries as it is (regions by name: the same named region of the scene,
//! whichever drivers it now holds). A per-driver field (`field =
//! "drivers"`) gives each new driver the value of its nearest old driver at
//! rest ([`nearest_drivers`]): the finer drivers sample the same material,
//! and the nearest coarse driver is the one whose cluster held it.
//!
//! The one layout that cannot carry is a region that exists on one set of
//! drivers and not on the other: [`UNCOVERED_REGION`] is a parameter only
//! while some driver lies outside every named region, so finer drivers can
//! add or remove it. [`carry_parameters`] refuses that
//! ([`CarryError::Regions`]) rather than compare an E with one of another
//! parameter.

use super::evaluation::Parameters;
use super::field_setting::RegionAssignment;
use crate::drive::{nearest_drivers, DriverSet};
use crate::scene::{FieldSetting, NamedRegion, PoissonSetting, Scene, UNCOVERED_REGION};

/// Why parameters do not carry onto other drivers (module doc).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CarryError {
    /// The region parameters differ between the two sets of drivers.
    #[error(
        "the finer drivers' regions are {to:?} where the coarser ones' are {from:?} (drivers \
         outside every named region of `fit.{stage}.regions` appear or vanish with the finer \
         drivers); fix: make the named regions cover the whole simulated object"
    )]
    Regions {
        /// `"stiffness"` or `"velocity"`.
        stage: &'static str,
        /// The coarser drivers' region names.
        from: Vec<String>,
        /// The finer drivers' region names.
        to: Vec<String>,
    },
}

/// `params`, a point of the scene's fields over the drivers `from`, as the
/// same point over the drivers `to` (module doc).
pub fn carry_parameters(
    scene: &Scene,
    from: &DriverSet,
    to: &DriverSet,
    params: &Parameters,
) -> Result<Parameters, CarryError> {
    let nearest = nearest_drivers(&from.rest, &to.rest, 1);
    let stiffness = &scene.fit.stiffness.field;
    let log10_youngs = carry_field(stiffness, "stiffness", from, to, &nearest, 1, &params.log10_youngs)?;
    let poisson = match scene.fit.stiffness.poisson {
        PoissonSetting::Fixed | PoissonSetting::Global => params.poisson.clone(),
        PoissonSetting::Regions => {
            carry_field(stiffness, "stiffness", from, to, &nearest, 1, &params.poisson)?
        }
    };
    let velocity = match &scene.fit.velocity.field {
        FieldSetting::Rigid => params.velocity.clone(),
        field => carry_field(field, "velocity", from, to, &nearest, 3, &params.velocity)?,
    };
    Ok(Parameters {
        log10_youngs,
        velocity,
        poisson,
    })
}

/// The `width` values per parameter of a `field` over `from` as values
/// over `to`; `nearest[d]` is new driver d's nearest old driver.
fn carry_field(
    field: &FieldSetting,
    stage: &'static str,
    from: &DriverSet,
    to: &DriverSet,
    nearest: &[u32],
    width: usize,
    values: &[f64],
) -> Result<Vec<f64>, CarryError> {
    Ok(match field {
        FieldSetting::Global | FieldSetting::Rigid => values.to_vec(),
        FieldSetting::Drivers => nearest
            .iter()
            .flat_map(|&d| {
                let d = d as usize;
                values[d * width..(d + 1) * width].iter().copied()
            })
            .collect(),
        FieldSetting::Regions(regions) => {
            same_regions(regions, stage, from, to)?;
            values.to_vec()
        }
    })
}

/// Refuses two sets of drivers whose region parameters differ (module doc).
fn same_regions(
    regions: &[NamedRegion],
    stage: &'static str,
    from: &DriverSet,
    to: &DriverSet,
) -> Result<(), CarryError> {
    let from = RegionAssignment::new(regions, from).names;
    let to = RegionAssignment::new(regions, to).names;
    match from == to {
        true => Ok(()),
        false => {
            debug_assert!(from.iter().chain(&to).any(|n| n == UNCOVERED_REGION));
            Err(CarryError::Regions { stage, from, to })
        }
    }
}
