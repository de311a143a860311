//! The fit problem (DESIGN.md § Loss, parameters, fit; issue 12): one call
//! from material parameters to the loss against the reference video and its
//! exact gradient, chaining drivers → MPM → deformation → rasterizer → image
//! loss forward and back on the GPU. `physfit fit` (the optimiser) is a loop
//! around [`FitProblem::evaluate`].
//!
//! - the parameterisations ([`params`]) (per driver, global, per region,
//!   rigid), as sparse linear maps onto the drivers;
//! - their transposes on the GPU ([`param_gather`]) (per-driver gradients →
//!   parameter gradients);
//! - [`FitProblem`] itself ([`problem`]);
//! - the optimiser, Adam with its schedule ([`adam`]), and the two-stage
//!   loop around the problem ([`fitter`]);
//! - the parameterisations a scene's `field` settings choose, with their
//!   region assignment ([`field_setting`]);
//! - the errors, [`FitError`] ([`mod@error`]).

pub mod adam;
pub mod checkpoint;
pub mod error;
pub mod field_setting;
pub mod fitter;
pub mod param_gather;
pub mod params;
pub mod preflight;
pub mod problem;
pub mod recovery;

pub use crate::mpm::GradientFlow;
pub use adam::{Adam, Schedule};
pub use error::FitError;
pub use field_setting::{ChosenField, RegionAssignment};
pub use fitter::{
    plan_stages, run_fit, Control, FitEnd, FitObserver, FitState, IterationRecord, StageChoice,
    StageKind, StagePlan,
};
pub use params::{MapEntry, ParamMap, VelocityField, YoungsField};
pub use problem::{
    Evaluation, FitProblem, FitProblemOptions, FitTimings, HostGradients, ImageTerms, LossReport,
    Parameters, Selection,
};
