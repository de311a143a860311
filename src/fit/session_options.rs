//! How a fit session is asked to fit ([`super::session`]): its output
//! directory, stages, the velocity a stiffness-only fit holds, what to do
//! with an earlier fit there, and where a twin experiment's truth comes
//! from.

use std::path::{Path, PathBuf};

use super::plan::StageChoice;

/// What to do with an earlier fit in the output directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EarlierFit {
    /// Refuse to start ([`super::SessionError::EarlierFit`]).
    Refuse,
    /// Continue it from its checkpoint.
    Resume,
    /// Start over, removing its files (only the fit's own, by name and
    /// pattern: [`super::output_plan`]) just before this fit writes its
    /// first file there ([`super::session`]), so that a refusal or a stop before
    /// then keeps them.
    Replace,
}

/// How a session is asked to fit.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionOptions {
    /// The output directory.
    pub out: PathBuf,
    /// The stages to run.
    pub choice: StageChoice,
    /// For a stiffness-only fit: the drivers file whose velocity to hold
    /// (default: the output directory's).
    pub velocity_from: Option<PathBuf>,
    /// An earlier fit in `out`.
    pub earlier: EarlierFit,
    /// A twin experiment's truth file (default: the one `physfit synth`
    /// left beside the frames, if any).
    pub truth: Option<PathBuf>,
}

/// Where the truth of a twin experiment comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum TruthSource {
    /// Given by the caller.
    Given(PathBuf),
    /// Left beside the frames by `physfit synth`.
    BesideFrames(PathBuf),
}

impl TruthSource {
    /// The truth file.
    pub fn path(&self) -> &Path {
        match self {
            Self::Given(p) | Self::BesideFrames(p) => p,
        }
    }
}
