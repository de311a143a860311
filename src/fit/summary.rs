//! `fit.json`: what a finished fit did and found, typed so that readers
//! (tests, scripts, a later `render`) get fields by name and a version
//! check instead of indexing a JSON blob by strings. Written last by the
//! outputs: its presence marks a complete fit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::camera_check::CameraCheck;
use super::recovery::Recovery;
use crate::io::atomic_write::write_atomic;

/// The `format` field of `fit.json`.
pub const SUMMARY_FORMAT: &str = "physfit.fit";
/// The version this physfit writes and reads.
pub const SUMMARY_VERSION: u32 = 2;

/// Why `fit.json` could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// Reading or writing failed.
    #[error("{}: {error}", crate::io::shown::shown(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// Not a `fit.json` this physfit reads.
    #[error("{}: not a physfit fit.json of version {SUMMARY_VERSION} ({problem}); fix: re-run the fit with this physfit", crate::io::shown::shown(path))]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// The units the summary's values are in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Units {
    /// What normalised E means.
    pub youngs_normalised: String,
    /// What E in world units means.
    pub youngs_world: String,
    /// The simulation cube's side, world units.
    pub box_side: f64,
    /// The velocity's unit.
    pub velocity: String,
}

/// The settings the fit ran with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Every input by its scene.toml name (the checkpoint's fingerprint).
    pub inputs: BTreeMap<String, String>,
    /// `fit.velocity.iterations`.
    #[serde(rename = "fit.velocity.iterations")]
    pub velocity_iterations: u32,
    /// `fit.stiffness.iterations`.
    #[serde(rename = "fit.stiffness.iterations")]
    pub stiffness_iterations: u32,
    /// `fit.checkpoint_every`.
    #[serde(rename = "fit.checkpoint_every")]
    pub checkpoint_every: u32,
    /// Drivers (MPM particles).
    pub drivers: usize,
    /// `simulation.grid_res`.
    pub grid_res: u32,
    /// `simulation.substeps`.
    pub substeps: u32,
    /// `material.log10_youngs_range` (normalised units).
    pub log10_youngs_range: [f64; 2],
    /// `material.youngs_modulus`, the start (normalised units).
    pub start_youngs_modulus: f64,
}

/// The GPU adapter the fit ran on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adapter {
    /// Its name.
    pub name: String,
    /// Its backend.
    pub backend: String,
    /// Its driver.
    pub driver: String,
    /// A software adapter (lavapipe).
    pub software: bool,
}

/// One stage run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    /// Its round (1-based).
    pub round: u32,
    /// `velocity` or `stiffness`.
    pub stage: String,
    /// Its iteration cap.
    pub iterations: u32,
    /// Its learning rate.
    pub learning_rate: f64,
    /// The frames it fitted, as frame indices (1..=N−1 of a stage's
    /// `frames = N`; never the rest frame 0).
    pub frames: Vec<usize>,
    /// Wall seconds (0 for a stage skipped because the rounds converged).
    pub seconds: f64,
    /// Iterations it ran (a scan: candidates scanned; 0 when skipped).
    pub iterations_run: u32,
    /// It stopped because its loss flattened, not at its cap (a skipped
    /// stage counts as converged).
    pub converged: bool,
}

/// The quality of one frame and view of the fitted rollout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameQuality {
    /// The frame.
    pub frame: usize,
    /// The view's name.
    pub view: String,
    /// PSNR (dB).
    pub psnr: f64,
    /// Mean SSIM.
    pub ssim: f64,
    /// Mean |I − Î|.
    pub l1: f64,
}

/// The loss of the fitted parameters over every frame and view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FinalLoss {
    /// The loss.
    pub loss: f64,
    /// Its image part.
    pub image: f64,
    /// TV of log10 E (unweighted).
    pub tv: f64,
    /// Mean PSNR over frames and views.
    pub mean_psnr: f64,
    /// Mean SSIM over frames and views.
    pub mean_ssim: f64,
    /// Per frame and view.
    pub frames: Vec<FrameQuality>,
}

/// One fitted `log10 E` parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct YoungsParameter {
    /// `log10 E`, normalised units.
    pub log10_normalised: f64,
    /// E in world units.
    pub world: f64,
}

/// `fit.json` (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitSummary {
    /// [`SUMMARY_FORMAT`].
    pub format: String,
    /// [`SUMMARY_VERSION`].
    pub version: u32,
    /// The scene file.
    pub scene: String,
    /// The units.
    pub units: Units,
    /// The settings.
    pub settings: Settings,
    /// The adapter.
    pub adapter: Adapter,
    /// The camera check of every view.
    pub camera_check: Vec<CameraCheck>,
    /// The stages, in the order they ran.
    pub stages: Vec<StageSummary>,
    /// The fitted rollout's loss.
    #[serde(rename = "final")]
    pub final_loss: FinalLoss,
    /// The fitted `log10 E` parameters, in parameter order.
    pub youngs_parameters: Vec<YoungsParameter>,
    /// The fitted velocity parameters (world units / s).
    pub velocity_parameters: Vec<f64>,
    /// The recovery of the truth, on a twin experiment.
    pub recovery: Option<Recovery>,
    /// On a twin experiment: the loss of the truth's own parameters on the
    /// same frames, views and weights as [`FitSummary::final_loss`].
    pub truth_loss: Option<FinalLoss>,
}

impl FitSummary {
    /// On a twin experiment: whether the fitted loss is at or below the
    /// truth's (the optimiser did its job; the truth's PSNR is then the
    /// ceiling the model's mismatch with the frames leaves).
    pub fn reached_the_truths_loss(&self) -> Option<bool> {
        self.truth_loss
            .as_ref()
            .map(|t| self.final_loss.loss <= t.loss)
    }

    /// Writes it to `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), SummaryError> {
        let json = serde_json::to_string_pretty(self).map_err(|e| SummaryError::Format {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        write_atomic(path, json.as_bytes()).map_err(|error| SummaryError::Io {
            path: path.to_path_buf(),
            error,
        })
    }

    /// Reads `path`, refusing another format or version.
    pub fn read(path: &Path) -> Result<Self, SummaryError> {
        let bytes = std::fs::read(path).map_err(|error| SummaryError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let format = |problem: String| SummaryError::Format {
            path: path.to_path_buf(),
            problem,
        };
        let s: Self = serde_json::from_slice(&bytes).map_err(|e| format(e.to_string()))?;
        if s.format != SUMMARY_FORMAT || s.version != SUMMARY_VERSION {
            return Err(format(format!("format {} version {}", s.format, s.version)));
        }
        Ok(s)
    }
}
