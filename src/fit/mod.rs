//! The fit problem (docs/design.md § Loss, parameters, fit): one call
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
//! - the fit from a scene to its outputs as a library session
//!   ([`session`]: preflight, [`camera_check`], [`truth_check`], the
//!   stages with checkpoints, [`outputs`] with the typed `fit.json`,
//!   [`summary`]), which `physfit fit` only prints around;
//! - the errors, [`FitError`] ([`mod@error`]) and [`SessionError`].

pub mod adam;
pub mod camera_check;
pub mod checkpoint;
pub mod error;
pub mod evaluation;
pub mod field_setting;
pub mod fitter;
pub mod lbfgs;
pub mod options;
pub mod output_plan;
pub mod outputs;
pub mod param_gather;
pub mod params;
pub mod preflight;
pub mod problem;
pub mod profile;
pub mod recovery;
pub mod scan;
pub mod session;
pub mod session_error;
pub mod summary;
pub mod truth_check;

pub use crate::mpm::GradientFlow;
pub use adam::{Adam, Schedule};
pub use error::FitError;
pub use evaluation::{Evaluation, HostGradients, ImageTerms, LossReport, Parameters, Selection};
pub use field_setting::{ChosenField, RegionAssignment};
pub use fitter::{
    plan_stages, run_fit, Control, FitEnd, FitObserver, FitState, IterationRecord, StageChoice,
    StageKind, StagePlan, StopSignal,
};
pub use options::FitProblemOptions;
pub use params::{MapEntry, ParamMap, VelocityField, YoungsField};
pub use problem::FitProblem;
pub use profile::FitTimings;
pub use session::{EarlierFit, FitProgress, FitSession, SessionOptions};
pub use session_error::SessionError;
pub use summary::FitSummary;
