//! Why a fit session ([`super::session`]) refuses or stops. Each names the
//! file or setting at fault; advice about command-line flags is the
//! caller's to add (the library does not know how it was called).

use std::path::PathBuf;

use super::checkpoint::CheckpointError;
use super::error::FitError;
use super::preflight::PreflightError;

/// Why a fit session refuses or stops.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The scene cannot be fitted as it is (no frames, unstable, …).
    #[error(transparent)]
    Preflight(#[from] PreflightError),
    /// The fit would take more memory than the machine has, or a buffer
    /// over an adapter limit (estimated before anything is allocated).
    #[error(transparent)]
    Memory(#[from] Box<crate::memory::MemoryError>),
    /// The output directory holds an earlier fit and the session was
    /// asked neither to continue nor to replace it.
    #[error("{} holds an earlier fit ({})", crate::io::shown::shown(out), files.join(", "))]
    EarlierFit {
        /// The output directory.
        out: PathBuf,
        /// The fit's files found there.
        files: Vec<String>,
    },
    /// The output directory is refused (its place, a link, another run's
    /// lock) or could not be written.
    #[error(transparent)]
    OutputDir(#[from] crate::io::output_error::OutputDirError),
    /// Asked to continue a fit whose checkpoint is missing.
    #[error(
        "{} holds no checkpoint to continue from",
        crate::io::shown::shown(out)
    )]
    NoCheckpoint {
        /// The output directory.
        out: PathBuf,
    },
    /// The checkpoint cannot be used.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The checkpoint is past the stage's iteration cap now.
    #[error("{}: the checkpoint is at iteration {iteration} of {stage}, past its `iterations` = {cap} now; fix: raise it again (iterations may only grow when a fit continues)", crate::io::shown::shown(path))]
    PastIterations {
        /// The checkpoint.
        path: PathBuf,
        /// The stage's label.
        stage: String,
        /// The checkpoint's iteration.
        iteration: u32,
        /// The stage's `iterations` now.
        cap: u32,
    },
    /// The earlier fit whose velocity a stiffness-only fit holds cannot be
    /// read or belongs to another scene.
    #[error("{}: {problem}", crate::io::shown::shown(path))]
    HeldVelocity {
        /// The drivers file.
        path: PathBuf,
        /// What is wrong, with the fix.
        problem: String,
    },
    /// The truth file of a twin experiment cannot be read or simulated.
    #[error("{}: {problem}", crate::io::shown::shown(path))]
    Truth {
        /// The truth file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A file or directory of the outputs could not be written or removed.
    #[error("{}: {error}", crate::io::shown::shown(path))]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// An output could not be made (its error names the file).
    #[error("{0}")]
    Output(String),
    /// The fit itself failed.
    #[error(transparent)]
    Fit(#[from] FitError),
}

impl SessionError {
    /// An [`SessionError::Io`] of `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |error| Self::Io { path, error }
    }

    /// The session stopped because its caller asked ([`super::FitError::Stopped`]):
    /// not a failure.
    pub fn is_stop(&self) -> bool {
        matches!(self, Self::Fit(FitError::Stopped))
    }

    /// An [`SessionError::Output`] from any error that names its file.
    pub fn output(error: impl std::fmt::Display) -> Self {
        Self::Output(error.to_string())
    }
}
