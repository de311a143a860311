//! The fit problem (DESIGN.md § Loss, parameters, fit; issue 12): one call
//! from material parameters to the loss against the reference video and its
//! exact gradient, chaining drivers → MPM → deformation → rasterizer → image
//! loss forward and back on the GPU. `physfit fit` (the optimiser) is a loop
//! around [`FitProblem::evaluate`].
//!
//! - [`params`]: the parameterisations (per driver, global, per region,
//!   rigid) as sparse linear maps onto the drivers;
//! - [`param_gather`]: their transposes on the GPU (per-driver gradients →
//!   parameter gradients);
//! - [`problem`]: [`FitProblem`] itself;
//! - [`error`]: [`FitError`].

pub mod error;
pub mod param_gather;
pub mod params;
pub mod problem;

pub use crate::mpm::GradientFlow;
pub use error::FitError;
pub use params::{MapEntry, ParamMap, VelocityField, YoungsField};
pub use problem::{
    Evaluation, FitProblem, FitProblemOptions, HostGradients, ImageTerms, LossReport, Parameters,
    Selection,
};
