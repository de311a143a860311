//! physfit: recover the material of a 3D Gaussian Splatting object from video.
//!
//! The pipeline (docs/design.md): scene → drivers → MPM → deform → splat → loss →
//! fit. Each stage is a module named after it, and `solve` holds the
//! minimisers the fit and the view alignment share; `report` draws the fit's
//! pictures and `io` writes files atomically. `reference` holds the f64 CPU
//! twins used as test oracles: it is compiled only with the `reference`
//! feature, which the tests turn on and the released library leaves off.

pub mod align;
pub mod bench;
pub mod budget;
pub mod deform;
pub mod drive;
pub mod fit;
pub mod forward;
pub mod gpu;
pub mod interact;
pub mod io;
pub mod loss;
pub mod memory;
pub mod mpm;
pub mod mpm_rules;
pub mod output;
#[cfg(feature = "reference")]
pub mod reference;
pub mod report;
pub mod scene;
pub mod solve;
pub mod splat;
pub mod stop;
pub mod synth;
