//! Typed errors of `Scene::load`: each names the scene file, the field as a
//! TOML path (`views[0].camera.fx`) and how to fix the problem.

use std::path::PathBuf;

use super::frames::FrameError;
use super::ply::PlyError;

/// Why a scene could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The TOML file could not be read.
    #[error("{path}: cannot read the scene file: {error}")]
    Read {
        /// The scene file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The TOML is malformed or has an unknown or mistyped field.
    #[error("{path}: {message}")]
    Parse {
        /// The scene file.
        path: PathBuf,
        /// The parser's message (with line, column and the offending key).
        message: String,
    },
    /// A field points at a file that does not exist.
    #[error("{path}: `{field}` points at {file}, which does not exist; fix: give a path relative to the scene file's directory")]
    MissingFile {
        /// The scene file.
        path: PathBuf,
        /// The field.
        field: String,
        /// The resolved path.
        file: PathBuf,
    },
    /// The splat or point file is broken.
    #[error("{path}: `{field}`: {error}")]
    Ply {
        /// The scene file.
        path: PathBuf,
        /// The field that named the file.
        field: String,
        /// The PLY error (boxed: it is large and rare).
        error: Box<PlyError>,
    },
    /// Reference frames are missing, unreadable or of the wrong size.
    #[error("{path}: `{field}`: {error}")]
    Frames {
        /// The scene file.
        path: PathBuf,
        /// The field.
        field: String,
        /// The frame error (names the image file and both sizes).
        error: FrameError,
    },
    /// Views have different numbers of reference frames.
    #[error("{path}: `{field}` has {found} frames but `{first_field}` has {expected}; fix: give every view the same number of frames (frame k of every view is time k/fps)")]
    FrameCount {
        /// The scene file.
        path: PathBuf,
        /// The view's frames field.
        field: String,
        /// Frames found there.
        found: usize,
        /// The first view with frames.
        first_field: String,
        /// Its count.
        expected: usize,
    },
    /// A box has `min ≥ max` on some axis.
    #[error("{path}: `{field}`: min {min:?} is not below max {max:?} on every axis; fix: swap the corners or give the box a positive size")]
    InvertedBox {
        /// The scene file.
        path: PathBuf,
        /// The box field.
        field: String,
        /// Its min.
        min: [f64; 3],
        /// Its max.
        max: [f64; 3],
    },
    /// A range `[low, high]` with `low ≥ high`.
    #[error("{path}: `{field}` = [{low}, {high}] is inverted or empty; fix: give [low, high] with low < high")]
    InvertedRange {
        /// The scene file.
        path: PathBuf,
        /// The field.
        field: String,
        /// Low end.
        low: f64,
        /// High end.
        high: f64,
    },
    /// A value outside its allowed range.
    #[error("{path}: `{field}` = {value}: {requirement}")]
    OutOfRange {
        /// The scene file.
        path: PathBuf,
        /// The field.
        field: String,
        /// The value given.
        value: String,
        /// What is allowed (and so the fix).
        requirement: String,
    },
    /// No splat lies in the simulated region.
    #[error("{path}: `{field}`: no splat lies in the simulated region (the splats span {bounds_min:?} to {bounds_max:?}); fix: make the region cover the object, or remove `regions.simulated` to simulate every splat")]
    NothingSimulated {
        /// The scene file.
        path: PathBuf,
        /// The field.
        field: String,
        /// Splat bounds.
        bounds_min: [f32; 3],
        /// Splat bounds.
        bounds_max: [f32; 3],
    },
    /// Every simulated splat is anchored.
    #[error("{path}: `{field}`: all {count} simulated splats are anchored, nothing can move; fix: shrink the anchored region to the part held fixed")]
    NothingFree {
        /// The scene file.
        path: PathBuf,
        /// The field.
        field: String,
        /// Simulated splats.
        count: usize,
    },
    /// Too few substeps for the explicit time-step bound.
    #[error("{path}: `simulation.substeps` = {substeps} gives dt = {dt:.3e} s, above the explicit time-step bound {bound:.3e} s for E = {youngs_max:.3e} (the top of `material.log10_youngs_range`) and ν = {poisson_max} (`material.poisson_ratio`, or the top of `fit.stiffness.poisson_range` when ν is fitted); fix: set `simulation.substeps` to at least {needed} (or omit it), or lower the top of the E range, of a fitted ν's range or `simulation.grid_res`")]
    TooFewSubsteps {
        /// The scene file.
        path: PathBuf,
        /// The substeps given.
        substeps: u32,
        /// The fewest that satisfy the bound.
        needed: u32,
        /// dt with the substeps given.
        dt: f64,
        /// The bound.
        bound: f64,
        /// Largest E.
        youngs_max: f64,
        /// Largest ν.
        poisson_max: f64,
    },
    /// A setting asks for more memory than the machine has.
    #[error(transparent)]
    Memory(#[from] Box<crate::memory::MemoryError>),
    /// Any other invalid setting.
    #[error("{path}: `{field}`: {message}; fix: {fix}")]
    Invalid {
        /// The scene file.
        path: PathBuf,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
}

impl SceneError {
    /// The TOML path of the field at fault, where there is one.
    pub fn field(&self) -> Option<&str> {
        match self {
            SceneError::Read { .. } | SceneError::Parse { .. } => None,
            SceneError::TooFewSubsteps { .. } => Some("simulation.substeps"),
            SceneError::Memory(e) => Some(e.field()),
            SceneError::MissingFile { field, .. }
            | SceneError::Ply { field, .. }
            | SceneError::Frames { field, .. }
            | SceneError::FrameCount { field, .. }
            | SceneError::InvertedBox { field, .. }
            | SceneError::InvertedRange { field, .. }
            | SceneError::OutOfRange { field, .. }
            | SceneError::NothingSimulated { field, .. }
            | SceneError::NothingFree { field, .. }
            | SceneError::Invalid { field, .. } => Some(field),
        }
    }
}
