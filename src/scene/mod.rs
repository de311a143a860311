//! Scene input: 3DGS splats (`ply`), cameras (`camera`, `view`,
//! `nerfstudio`), colliders (`collider`), reference frames (`frames`), their loss masks (`masks`)
//! and each view's colour correction (`color_correction`), and
//! `scene.toml`: `config` for the schema, `load` for [`Scene::load`], the
//! resolved sections (`material`, `simulation`, `selection` for
//! `[regions]`, `drivers`, `fit_settings`), `validated_scene` for the
//! [`Scene`] itself, `derived_settings` for what the simulator derives
//! from it and `fall` for where the object goes when it falls from rest.

internal_mods! {
    camera;
    collider;
    color_correction;
    config;
    derived_settings;
    drivers;
    error;
    fall;
    fit_field;
    fit_settings;
    frames;
    gaussians;
    inputs;
    masks;
    material;
    nerfstudio;
    ply;
    region;
    selection;
    sim_box;
    simulation;
    validated_scene;
    view;
}

pub use frames::write_png;
pub use inputs::scene_inputs;
pub use ply::load_gaussians;
mod load;
mod toml_location;
mod validate;

/// How a substep's grid-to-particle transfer sets the particle velocity.
pub use crate::mpm_rules::config::Transfer;
/// What the simulation box's walls do.
pub use crate::mpm_rules::WallMode;
pub use camera::Camera;
pub use color_correction::ColorCorrection;
pub use config::{DiscretisationRefinement, SceneConfig, DEFAULT_PIC_TIME};
pub use derived_settings::Stability;
pub use drivers::{DriverCount, Drivers, AUTO_DRIVERS_PER_CELL, MIN_DRIVERS_PER_CELL};
pub use error::SceneError;
pub use fall::Fall;
pub use fit_field::{FieldSetting, NamedRegion, PoissonRange, PoissonSetting, UNCOVERED_REGION};
pub use fit_settings::{
    BudgetRule, DiscretisationBudget, FitSettings, FitStage, ScanSettings,
    AUTO_DISCRETISATION_SHARE,
};
pub use gaussians::Gaussians;
pub use material::Material;
pub use sim_box::SimBox;
pub use simulation::Simulation;
pub use validated_scene::Scene;
pub use view::{FrameSet, View};
