//! physfit: recover the material of a 3D Gaussian Splatting object from video.
//!
//! The pipeline (DESIGN.md): scene → drivers → MPM → deform → splat → loss →
//! fit. Each stage is a module named after it; `reference` holds the f64 CPU
//! twins used as test oracles; `report` draws the fit's pictures.

pub mod bench;
pub mod deform;
pub mod drive;
pub mod fit;
pub mod gpu;
pub mod interact;
pub mod io;
pub mod loss;
pub mod mpm;
pub mod output;
pub mod reference;
pub mod report;
pub mod scene;
pub mod splat;
pub mod synth;
