//! Scene input: 3DGS splats, cameras, reference frames, scene.toml.

pub mod atomic_write;
pub mod camera;
pub mod gaussians;
pub mod ply;

pub use camera::Camera;
pub use gaussians::Gaussians;
