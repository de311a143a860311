//! Typed errors of `physfit synth` and of the truth file (docs/truth.md):
//! each names the file, the field (a TOML path such as `youngs.boxes[1].log10`)
//! and the fix. `anyhow` is only for the CLI.

use std::path::PathBuf;

use thiserror::Error;

/// Why a truth file cannot be used.
#[derive(Debug, Error)]
pub enum TruthError {
    /// The file cannot be read.
    #[error(
        "{}: cannot read the truth file: {error}",
        crate::io::shown::shown(path)
    )]
    Read {
        /// The truth file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// Not TOML, an unknown field, a missing field or a value of the wrong type.
    #[error(
        "{}: in `{field}`: {message}; fix: see docs/truth.md for the fields of each table",
        crate::io::shown::shown(path)
    )]
    Parse {
        /// The truth file.
        path: PathBuf,
        /// The table (or `(top level)`).
        field: String,
        /// The parser's message.
        message: String,
    },
    /// A `kind` that is not one of the table's.
    #[error(
        "{}: `{field}` = \"{kind}\" is not a kind of this table; fix: write one of {expected}",
        crate::io::shown::shown(path)
    )]
    UnknownKind {
        /// The truth file.
        path: PathBuf,
        /// The field (`youngs.kind` or `velocity.kind`).
        field: String,
        /// The kind given.
        kind: String,
        /// The kinds allowed.
        expected: &'static str,
    },
    /// A log10 E outside the scene's `material.log10_youngs_range`.
    #[error(
        "{}: `{field}` = {value} is outside the scene's `material.log10_youngs_range` \
         [{low}, {high}] (log10 of E in normalised units, as `[material]`); its top sets the \
         substeps' stability bound; fix: give a value in the range, or widen the range in the \
         scene",
        crate::io::shown::shown(path)
    )]
    OutOfRange {
        /// The truth file.
        path: PathBuf,
        /// The field.
        field: String,
        /// The value given.
        value: f64,
        /// Bottom of the range.
        low: f64,
        /// Top of the range.
        high: f64,
    },
    /// Any other bad value.
    #[error("{}: `{field}`: {problem}; fix: {fix}", crate::io::shown::shown(path))]
    Invalid {
        /// The truth file.
        path: PathBuf,
        /// The field.
        field: String,
        /// What is wrong.
        problem: String,
        /// How to fix it.
        fix: String,
    },
}

/// Why `physfit synth` cannot make its frames.
#[derive(Debug, Error)]
pub enum SynthError {
    /// The truth file is unusable.
    #[error(transparent)]
    Truth(#[from] TruthError),
    /// Fewer than two frames asked for.
    #[error(
        "{frames} frame(s) asked for; fix: ask for at least 2 (the rest frame 0 and one \
         after it) with `frames` in the truth file or `--frames`"
    )]
    TooFewFrames {
        /// Frames asked for.
        frames: usize,
    },
    /// A frame past the end of the rollout.
    #[error("frame {frame} asked for but {frames} frames were simulated (0..{frames})")]
    NoSuchFrame {
        /// The frame asked for.
        frame: usize,
        /// Frames simulated.
        frames: usize,
    },
    /// A view past the scene's.
    #[error("view {view} asked for but the scene has {views} views")]
    NoSuchView {
        /// The view asked for.
        view: usize,
        /// Views in the scene.
        views: usize,
    },
    /// The drivers could not be built from the scene.
    #[error(transparent)]
    Drive(#[from] crate::drive::DriveError),
    /// The simulation or a render failed (a blow-up names its frame).
    #[error(transparent)]
    Forward(#[from] crate::forward::ForwardError),
    /// The caller stopped the rollout between frames: not a failure, and
    /// nothing of it is kept.
    #[error("stopped after {simulated} of {frames} frames were simulated")]
    Stopped {
        /// Frames simulated when it stopped, the rest frame 0 included.
        simulated: usize,
        /// Frames asked for.
        frames: usize,
    },
}
