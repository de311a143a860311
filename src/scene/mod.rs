//! Scene input: 3DGS splats, cameras, reference frames, scene.toml.

pub mod camera;
pub mod gaussians;

pub use camera::Camera;
pub use gaussians::Gaussians;
