//! Scene input: 3DGS splats (`ply`), cameras (`camera`, `view`,
//! `nerfstudio`), colliders (`collider`), reference frames (`frames`), their loss masks (`masks`)
//! and each view's colour correction (`color_correction`), and
//! `scene.toml`: `config` for the schema, `load` for [`Scene::load`], the
//! resolved sections (`material`, `simulation`, `selection` for
//! `[regions]`, `drivers`, `fit_settings`), `validated_scene` for the
//! [`Scene`] itself, `derived_settings` for what the simulator derives
//! from it and `fall` for where the object goes when it falls from rest.

pub mod camera;
pub mod collider;
pub mod color_correction;
pub mod config;
pub mod derived_settings;
pub mod drivers;
pub mod error;
pub mod fall;
pub mod fit_field;
pub mod fit_settings;
pub mod frames;
pub mod gaussians;
pub mod inputs;
mod load;
pub mod masks;
pub mod material;
pub mod nerfstudio;
pub mod ply;
pub mod region;
pub mod selection;
pub mod sim_box;
pub mod simulation;
mod toml_location;
mod validate;
pub mod validated_scene;
pub mod view;

pub use camera::Camera;
pub use color_correction::ColorCorrection;
pub use config::SceneConfig;
pub use derived_settings::Stability;
pub use drivers::{DriverCount, Drivers, AUTO_DRIVERS_PER_CELL, MIN_DRIVERS_PER_CELL};
pub use error::SceneError;
pub use fall::Fall;
pub use fit_field::{FieldSetting, NamedRegion, PoissonSetting, UNCOVERED_REGION};
pub use fit_settings::{FitSettings, FitStage, ScanSettings};
pub use gaussians::Gaussians;
pub use material::Material;
pub use sim_box::SimBox;
pub use simulation::Simulation;
pub use validated_scene::Scene;
pub use view::{FrameSet, View};
