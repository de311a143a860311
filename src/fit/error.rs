//! Typed errors of the fit problem: each names what to fix (docs/design.md §
//! Loss, parameters, fit). `anyhow` is only for the CLI.

use thiserror::Error;

use crate::deform::DeformError;
use crate::drive::DriveError;
use crate::gpu::GpuError;
use crate::loss::LossError;
use crate::mpm::MpmError;
use crate::scene::frames::FrameError;
use crate::splat::SplatError;

/// Why a fit problem cannot be built or evaluated.
#[derive(Debug, Error)]
pub enum FitError {
    /// The caller asked the fit to stop ([`crate::stop::StopSignal`]);
    /// nothing is wrong.
    #[error("stopped at the caller's request")]
    Stopped,
    /// A selection names a view the scene does not have.
    #[error("view {view} selected but the scene has {views} views (0..{views})")]
    NoSuchView {
        /// The view asked for.
        view: usize,
        /// Views in the scene.
        views: usize,
    },
    /// A selected view has no reference frames.
    #[error(
        "view {view} ('{name}') has no reference frames to fit against; fix: give it \
         `frames = \"...\"` in scene.toml, or leave it out of the selection"
    )]
    NoFrames {
        /// The view.
        view: usize,
        /// Its name.
        name: String,
    },
    /// A selected frame is past the end of a view's reference frames.
    #[error(
        "frame {frame} selected but view {view} ('{name}') has {available} reference frames \
         (0–{}, the rest frame 0 included); fix: select fewer frames (`fit.*.frames`, a count \
         with the rest frame) or add the missing frames",
        available.saturating_sub(1)
    )]
    FrameOutOfRange {
        /// The frame asked for.
        frame: usize,
        /// The view.
        view: usize,
        /// Its name.
        name: String,
        /// Frames the view has.
        available: usize,
    },
    /// A selection without frames or without views.
    #[error("the selection has no {0}: select at least one frame and one view")]
    EmptySelection(&'static str),
    /// Frames listed twice or out of order.
    #[error("selected frames must be strictly increasing, got {0:?}")]
    UnsortedFrames(Vec<usize>),
    /// A parameter vector of the wrong length.
    #[error("{got} {what} parameters given but the parameterisation has {expected}")]
    ParameterCount {
        /// Which parameters.
        what: &'static str,
        /// Length given.
        got: usize,
        /// Length expected.
        expected: usize,
    },
    /// A parameter that is NaN or infinite.
    #[error("{what} parameter {index} is {value}: parameters must be finite")]
    NonFiniteParameter {
        /// Which parameters.
        what: &'static str,
        /// Its index.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// A `log10 E` above the range the simulator was built for.
    #[error(
        "log10 E = {value} on driver {driver} is above the top of `material.log10_youngs_range` \
         ({max}), whose time step the simulator checked; fix: clamp the parameters to the range \
         after each optimiser step"
    )]
    YoungsAboveRange {
        /// The driver.
        driver: usize,
        /// Its log10 E.
        value: f64,
        /// The top of the range.
        max: f64,
    },
    /// A parameterisation that does not fit the drivers.
    #[error("invalid parameterisation: {0}")]
    Parameterisation(String),
    /// The drivers' neighbour count is not the deformation's.
    #[error(
        "the drivers keep {k} neighbours per Gaussian but the deformation needs {needed}; fix: \
         set `drivers.k = {needed}`"
    )]
    NeighbourCount {
        /// Neighbours per Gaussian of the driver set.
        k: usize,
        /// The deformation's.
        needed: usize,
    },
    /// The fit's starting parameters blow the simulation up.
    #[error(
        "{stage}: the starting parameters blow the simulation up (NaN or a particle out of the \
         box) before any step; fix: raise `simulation.substeps`, lower the initial velocity, or \
         start from a softer `material.youngs_modulus`"
    )]
    StartBlewUp {
        /// The stage, e.g. "round 1 velocity".
        stage: String,
    },
    /// Every retry of a step at a halved rate still blew up.
    #[error(
        "{stage} iteration {iteration}: the step blew the simulation up even after {halvings} \
         halvings of the learning rate; fix: lower `learning_rate` or `grad_clip` of that stage, \
         or raise `simulation.substeps`"
    )]
    StepRejected {
        /// The stage.
        stage: String,
        /// The iteration.
        iteration: u32,
        /// Halvings tried.
        halvings: u32,
    },
    /// Drivers could not be made.
    #[error(transparent)]
    Drive(#[from] DriveError),
    /// The simulation failed or was refused.
    #[error(transparent)]
    Mpm(#[from] MpmError),
    /// The deformation failed or was refused.
    #[error(transparent)]
    Deform(#[from] DeformError),
    /// The rasterizer failed.
    #[error(transparent)]
    Splat(#[from] SplatError),
    /// The forward path (simulator, deformation, rasterizer) refused.
    #[error(transparent)]
    Forward(#[from] crate::forward::ForwardError),
    /// The image loss failed.
    #[error(transparent)]
    Loss(#[from] LossError),
    /// A reference frame could not be read.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// A GPU failure.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}
