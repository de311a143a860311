//! The fit problem (docs/design.md § Loss, parameters, fit): one call
//! from material parameters to the loss against the reference video and its
//! exact gradient, chaining drivers → MPM → deformation → rasterizer → image
//! loss forward and back on the GPU. `physfit fit` (the optimiser) is a loop
//! around [`FitProblem::evaluate`].
//!
//! - the parameterisations ([`params`]) (per driver, global, per region,
//!   rigid), as sparse linear maps onto the drivers, and Poisson's ratio's
//!   sigmoid ([`poisson`]);
//! - their transposes on the GPU ([`param_gather`]) (per-driver gradients →
//!   parameter gradients);
//! - [`FitProblem`] itself ([`problem`]);
//! - the fit as planned ([`plan`]), its state ([`state`], a checkpoint's
//!   content, with the records of [`record`] and the scan's points of
//!   [`scan_state`]), each stage as an objective ([`objective`]) and the
//!   stages run in order by the solvers of [`crate::solve`] ([`stages`],
//!   the coarse [`scan`]), telling one [`FitObserver`] ([`observer`]);
//! - the parameterisations a scene's `field` settings choose, with their
//!   region assignment ([`field_setting`]);
//! - the fit from a scene to its outputs as a library session
//!   ([`session`]: preflight, [`camera_check`], [`truth_check`], the
//!   stages with checkpoints, the result in memory ([`result`]),
//!   [`outputs`] with the typed `fit.json`, [`summary`]), which
//!   `physfit fit` only prints around;
//! - the error bars of the fitted values from the curvature of the loss
//!   at the optimum ([`uncertainty_estimate`], [`uncertainty`],
//!   [`residual_count`]), and the Newton step in E they give, tried last
//!   ([`exact_step`]);
//! - the errors, [`FitError`] ([`mod@error`]) and [`SessionError`].

internal_mods! {
    camera_check;
    checkpoint;
    discretisation;
    discretisation_carry;
    discretisation_check;
    discretisation_grid;
    discretisation_refit;
    discretisation_round;
    error;
    evaluation;
    exact_step;
    exact_step_record;
    field_setting;
    live_loss;
    material_answer;
    objective;
    observer;
    options;
    output_plan;
    outputs;
    param_gather;
    params;
    plan;
    poisson;
    preflight;
    problem;
    profile;
    record;
    recovery;
    residual_count;
    result;
    scan;
    scan_state;
    session;
    session_error;
    session_options;
    stages;
    state;
    summary;
    summary_build;
    truth_check;
    uncertainty;
    uncertainty_estimate;
}

pub use checkpoint::CheckpointError;
pub use discretisation::{
    at_range_end, first_order_limit_factor, DiscretisationCheck, LevelFit, RefinementEnd,
    Resolution, YoungsStatistic, DISCRETISATION_TOLERANCE, POISSON_DISCRETISATION_TOLERANCE,
};
pub use discretisation_grid::{level_resolution, level_scene, scene_resolution};
pub use discretisation_round::{MIN_E_REFITS, ROUND_SHARE_OF_TOLERANCE};
pub use exact_step::MAX_NEWTON_STEPS;
pub use output_plan::{COMPARE_DIR, OUTPUT_FILES};
pub use record::mean_quality;
pub use session::{TruthSource, CHECKPOINT_FILE};
pub use stages::evaluations_so_far;
pub use summary::Solver;
pub use summary_build::{solver_for, stage_solver};
mod held_velocity;
mod session_discretisation;
mod session_observer;
mod session_prepare;
mod stages_adam;
mod stages_count;
mod stages_lbfgs;

/// The drivers a scene is simulated with, and E in world units.
pub use crate::drive::DriverSet;
pub use crate::mpm::GradientFlow;
pub use crate::output::youngs_world;
pub use crate::stop::StopSignal;
/// PSNR (dB) of frame 0 below which the camera check flags a view
/// ([`camera_check`]): a caller that prints the check names it.
pub use camera_check::CAMERA_CHECK_DB;
pub use error::FitError;
pub use evaluation::{Evaluation, HostGradients, ImageTerms, LossReport, Parameters, Selection};
pub use field_setting::{ChosenField, RegionAssignment};
pub use observer::{
    Control, EvaluationDone, EvaluationHook, EvaluationPurpose, FinishedStage, FitObserver,
};
pub use options::FitProblemOptions;
pub use params::{MapEntry, ParamMap, VelocityField, YoungsField};
pub use plan::{
    plan_stages, poisson_candidates, StageChoice, StageKind, StagePlan, LBFGS_MAX_PARAMETERS,
};
pub use problem::{FitProblem, RolloutValues};
pub use profile::FitTimings;
pub use record::IterationRecord;
pub use result::{DriverValues, FitResult};
/// The fraction a round's stiffness loss must fall below the previous
/// round's for the fit to go on ([`stages`]): a caller that reports the
/// rounds' convergence names it.
pub use scan::cold_velocity_evaluations;
pub use session::{EarlierFit, FitSession, RunEnd, SessionOptions};
pub use session_error::SessionError;
pub use stages::ROUND_TOLERANCE;
pub use stages::{run_fit, FitEnd};
pub use state::FitState;
pub use summary::{FitSummary, PoissonParameter};
pub use uncertainty::{CurvatureMethod, FitUncertainty};
