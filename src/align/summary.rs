//! `DIR/align.json`: what `physfit align` did to each view, typed, so that
//! tools and tests read it by field.

use serde::{Deserialize, Serialize};

use super::conditioning::Conditioning;
use super::view_align::{Changes, LevelRun, SilhouetteGuess, ViewAlignment};

/// Version of the file's layout.
pub const ALIGN_SUMMARY_VERSION: u32 = 1;

/// The file name in the output directory.
pub const ALIGN_SUMMARY_FILE: &str = "align.json";

/// A camera as written: world-to-camera rotation rows, translation, focal lengths.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CameraRecord {
    /// Rows of `R`.
    pub rotation: [[f32; 3]; 3],
    /// `t`.
    pub translation: [f32; 3],
    /// Camera centre, world units.
    pub position: [f32; 3],
    /// fx, fy, pixels.
    pub focal: [f32; 2],
}

impl From<&crate::scene::Camera> for CameraRecord {
    fn from(c: &crate::scene::Camera) -> Self {
        Self {
            rotation: [0, 1, 2].map(|i| c.rotation.row(i).to_array()),
            translation: c.translation.to_array(),
            position: c.position().to_array(),
            focal: [c.fx, c.fy],
        }
    }
}

/// One view's alignment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewSummary {
    /// The view's name.
    pub view: String,
    /// PSNR of frame 0 at the start, dB.
    pub psnr_before: f64,
    /// PSNR after alignment, dB.
    pub psnr_after: f64,
    /// Loss at the start.
    pub loss_before: f64,
    /// Loss after alignment.
    pub loss_after: f64,
    /// True when the aligned state scored no better and the start was kept.
    pub kept_start: bool,
    /// True when it scored worse by more than 0.01 dB (the command failed).
    pub worse: bool,
    /// What changed, in readable units.
    pub changes: Changes,
    /// The camera before.
    pub camera_before: CameraRecord,
    /// The camera written.
    pub camera_after: CameraRecord,
    /// The silhouette's first guess of the pose, when one was made.
    #[serde(default)]
    pub silhouette: Option<SilhouetteGuess>,
    /// The pyramid levels, coarsest first.
    pub levels: Vec<LevelRun>,
    /// What one view could not tell apart, when measured.
    pub conditioning: Option<Conditioning>,
    /// The before | after picture, relative to the output directory.
    pub picture: String,
}

impl ViewSummary {
    /// The summary of `a` for view `view`, its picture at `picture`.
    pub fn new(view: &str, a: &ViewAlignment, picture: String) -> Self {
        Self {
            view: view.to_string(),
            psnr_before: a.psnr_before,
            psnr_after: a.psnr_after,
            loss_before: a.loss_before,
            loss_after: a.loss_after,
            kept_start: a.kept_start,
            worse: a.worse,
            changes: a.changes.clone(),
            camera_before: (&a.before.camera).into(),
            camera_after: (&a.after.camera).into(),
            silhouette: a.silhouette.clone(),
            levels: a.levels.clone(),
            conditioning: a.conditioning.clone(),
            picture,
        }
    }
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlignSummary {
    /// [`ALIGN_SUMMARY_VERSION`].
    pub version: u32,
    /// The scene aligned, as given.
    pub scene: String,
    /// What was fitted (`--what`).
    pub what: String,
    /// Per view.
    pub views: Vec<ViewSummary>,
}

impl AlignSummary {
    /// Reads `path`.
    pub fn read(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: {e}", crate::io::shown::shown(path)))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", crate::io::shown::shown(path)))
    }
}
