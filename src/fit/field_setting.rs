//! From a scene's `field` settings ([`FieldSetting`]) to the fit's
//! parameterisations ([`YoungsField`], [`VelocityField`]) over a
//! [`DriverSet`] (docs/design.md § Loss,
//! parameters, fit).
//!
//! `"regions"`: a driver belongs to the FIRST named region holding its rest
//! position (world units, where the regions are written); drivers no region
//! holds form one more region, [`UNCOVERED_REGION`], added only when there
//! are such drivers. Anchored drivers are assigned like the others: they
//! have an E; their velocity is held at zero by the velocity map itself.

use super::error::FitError;
use super::params::{VelocityField, YoungsField};
use crate::drive::DriverSet;
use crate::scene::{FieldSetting, NamedRegion, UNCOVERED_REGION};

/// The region of every driver under a list of named regions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionAssignment {
    /// Region names in parameter order: the named regions in file order,
    /// then [`UNCOVERED_REGION`] when some driver lies in none.
    pub names: Vec<String>,
    /// Region of every driver (an index into `names`).
    pub region: Vec<u32>,
    /// Drivers per region (anchored ones included).
    pub drivers: Vec<usize>,
}

impl RegionAssignment {
    /// Assigns every driver of `drivers` (rest positions) to the first of
    /// `regions` holding it, the rest to one more region.
    pub fn new(regions: &[NamedRegion], drivers: &DriverSet) -> Self {
        let named = regions.len() as u32;
        let region: Vec<u32> = drivers
            .rest
            .iter()
            .map(|&p| {
                let world = drivers.sim_box.to_world(p);
                regions
                    .iter()
                    .position(|r| r.region.contains(world))
                    .map_or(named, |i| i as u32)
            })
            .collect();
        let mut names: Vec<String> = regions.iter().map(|r| r.name.clone()).collect();
        if region.contains(&named) {
            names.push(UNCOVERED_REGION.to_string());
        }
        let mut counts = vec![0usize; names.len()];
        for &r in &region {
            counts[r as usize] += 1;
        }
        Self {
            names,
            region,
            drivers: counts,
        }
    }

    /// Number of regions (`names.len()`).
    pub fn count(&self) -> u32 {
        self.names.len() as u32
    }
}

/// A parameterisation read from a `field` setting, with the names of its
/// regions (empty unless `"regions"`) for reports that label parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChosenField<F> {
    /// The parameterisation.
    pub field: F,
    /// Region names in parameter order (`"regions"` only; a velocity region
    /// has 3 parameters, region-major).
    pub regions: Vec<String>,
}

impl<F> ChosenField<F> {
    /// A field without regions.
    fn plain(field: F) -> Self {
        Self {
            field,
            regions: Vec::new(),
        }
    }
}

impl ChosenField<YoungsField> {
    /// The `log10 E` field of `setting` (`fit.stiffness.field`).
    ///
    /// Errors: [`FitError::Parameterisation`] for `"rigid"`, which the
    /// scene validation already refuses for the stiffness.
    pub fn youngs(setting: &FieldSetting, drivers: &DriverSet) -> Result<Self, FitError> {
        Ok(match setting {
            FieldSetting::Drivers => Self::plain(YoungsField::PerDriver),
            FieldSetting::Global => Self::plain(YoungsField::Global),
            FieldSetting::Regions(regions) => {
                let a = RegionAssignment::new(regions, drivers);
                Self {
                    field: YoungsField::Regions {
                        count: a.count(),
                        region: a.region,
                    },
                    regions: a.names,
                }
            }
            FieldSetting::Rigid => {
                return Err(FitError::Parameterisation(
                    "a rigid motion parameterises the velocity, not log10 E; \
                     fix: set `fit.stiffness.field` to \"drivers\", \"global\" or \"regions\""
                        .into(),
                ))
            }
        })
    }
}

impl ChosenField<VelocityField> {
    /// The initial-velocity field of `setting` (`fit.velocity.field`).
    pub fn velocity(setting: &FieldSetting, drivers: &DriverSet) -> Self {
        match setting {
            FieldSetting::Drivers => Self::plain(VelocityField::PerDriver),
            FieldSetting::Global => Self::plain(VelocityField::Global),
            FieldSetting::Rigid => Self::plain(VelocityField::Rigid),
            FieldSetting::Regions(regions) => {
                let a = RegionAssignment::new(regions, drivers);
                Self {
                    field: VelocityField::Regions {
                        count: a.count(),
                        region: a.region,
                    },
                    regions: a.names,
                }
            }
        }
    }
}
