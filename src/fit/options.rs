//! How a [`super::FitProblem`] is parameterised and weighted: its fields
//! (docs/design.md § Loss, parameters, fit) and the weights of its terms.

use super::error::FitError;
use super::field_setting::ChosenField;
use super::params::{VelocityField, YoungsField};
use crate::drive::DriverSet;
use crate::loss::LossWeights;
use crate::scene::{FitStage, PoissonRange, PoissonSetting, Scene};

/// How a [`super::FitProblem`] is parameterised and weighted.
#[derive(Clone, Debug)]
pub struct FitProblemOptions {
    /// The `log10 E` field.
    pub youngs: YoungsField,
    /// The initial-velocity field.
    pub velocity: VelocityField,
    /// Image-loss weights.
    pub weights: LossWeights,
    /// Weight of TV of `log10 E` over the driver graph (0: off).
    pub tv_weight: f64,
    /// Weight of the smoothness term on the initial velocity: TV of the
    /// per-driver `v0` (world units/s, anchored drivers at 0) over the
    /// driver graph, [`crate::loss::tv_vector`] (0, the default: off).
    pub velocity_tv_weight: f64,
    /// Names of the `log10 E` regions in parameter order (empty unless
    /// [`YoungsField::Regions`] came from the scene): labels for reports.
    pub youngs_regions: Vec<String>,
    /// Names of the velocity regions in parameter order (3 parameters
    /// each; empty unless [`VelocityField::Regions`] came from the scene).
    pub velocity_regions: Vec<String>,
    /// The field of Poisson's ratio's `z` ([`super::poisson`]) when ν is
    /// fitted (`[fit.stiffness] poisson`); `None`: ν is not a parameter.
    pub poisson: Option<YoungsField>,
    /// The range a fitted ν stays inside (`[fit.stiffness] poisson_range`;
    /// [`super::poisson`]).
    pub poisson_range: PoissonRange,
}

impl FitProblemOptions {
    /// Per-driver fields with the weights of `stage` (a scene's
    /// `fit.velocity` or `fit.stiffness`).
    pub fn per_driver(stage: &FitStage) -> Self {
        Self {
            youngs: YoungsField::PerDriver,
            velocity: VelocityField::PerDriver,
            weights: LossWeights {
                l1: stage.w_l1 as f32,
                ssim: stage.w_ssim as f32,
            },
            tv_weight: stage.tv_weight,
            velocity_tv_weight: 0.0,
            youngs_regions: Vec::new(),
            velocity_regions: Vec::new(),
            poisson: None,
            poisson_range: stage.poisson_range,
        }
    }

    /// The scene's settings over `drivers`: the `log10 E` field of
    /// `fit.stiffness.field`, the velocity field of `fit.velocity.field`
    /// (regions assigned by [`ChosenField`]), and the weights of `stage`
    /// (one of `scene.fit`'s two; [`super::FitProblem::set_stage`] switches them
    /// later).
    ///
    /// Errors: [`FitError::Parameterisation`] for a field the scene
    /// validation refuses (a rigid stiffness).
    pub fn from_scene(
        scene: &Scene,
        drivers: &DriverSet,
        stage: &FitStage,
    ) -> Result<Self, FitError> {
        let youngs = ChosenField::youngs(&scene.fit.stiffness.field, drivers)?;
        let velocity = ChosenField::velocity(&scene.fit.velocity.field, drivers);
        let poisson = match scene.fit.stiffness.poisson {
            PoissonSetting::Fixed => None,
            PoissonSetting::Global => Some(YoungsField::Global),
            // The scene refuses "regions" unless E has regions: the same
            // partition.
            PoissonSetting::Regions => Some(youngs.field.clone()),
        };
        Ok(Self {
            poisson,
            poisson_range: scene.fit.stiffness.poisson_range,
            youngs: youngs.field,
            velocity: velocity.field,
            velocity_tv_weight: stage.velocity_tv_weight,
            youngs_regions: youngs.regions,
            velocity_regions: velocity.regions,
            ..Self::per_driver(stage)
        })
    }
}
