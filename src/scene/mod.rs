//! Scene input: 3DGS splats (`ply`), cameras (`camera`, `view`,
//! `nerfstudio`), colliders (`collider`), reference frames (`frames`), their loss masks (`masks`)
//! and each view's colour correction (`color_correction`), and
//! `scene.toml` (`config` for the schema, `scene` for [`Scene::load`] and
//! its validation).

pub mod camera;
pub mod collider;
pub mod color_correction;
pub mod config;
pub mod error;
pub mod fit_field;
pub mod frames;
pub mod gaussians;
pub mod inputs;
pub mod masks;
pub mod nerfstudio;
pub mod ply;
pub mod region;
#[allow(clippy::module_inception)]
pub mod scene;
pub mod sim_box;
mod validate;
pub mod view;

pub use camera::Camera;
pub use color_correction::ColorCorrection;
pub use config::SceneConfig;
pub use error::SceneError;
pub use fit_field::{FieldSetting, NamedRegion, UNCOVERED_REGION};
pub use gaussians::Gaussians;
pub use scene::{
    DriverCount, Drivers, FitSettings, FitStage, Material, Scene, Simulation, Stability,
};
pub use sim_box::SimBox;
pub use view::{FrameSet, View};
