//! Where `physfit synth` puts what it writes, so that the writer and the
//! readers (the fit, which measures the recovery of frames that synth made)
//! agree on the names:
//!
//! ```text
//! DIR/<view>/frame_NNNN.png   the frames, frame 0 the rest state
//! DIR/truth.toml              the truth file as given
//! DIR/synth.json              what was run (SynthSummary)
//! ```

use std::path::{Path, PathBuf};

use crate::scene::Scene;

/// The copy of the truth file.
pub const TRUTH_FILE: &str = "truth.toml";
/// The record of the run.
pub const SUMMARY_FILE: &str = "synth.json";

/// Frame `k`'s file name inside a view's folder.
pub fn frame_file(k: usize) -> String {
    format!("frame_{k:04}.png")
}

/// Frame `k` of view `view` under `dir`.
pub fn frame_path(dir: &Path, view: &str, k: usize) -> PathBuf {
    dir.join(view).join(frame_file(k))
}

/// The truth file beside the frames of `scene`, when they were written by
/// `physfit synth`: the folder above the first view's frames holds both
/// [`SUMMARY_FILE`] and [`TRUTH_FILE`].
pub fn truth_beside_frames(scene: &Scene) -> Option<PathBuf> {
    let frames = scene.views.iter().find_map(|v| v.frames.as_ref())?;
    let dir = frames.paths.first()?.parent()?.parent()?;
    let truth = dir.join(TRUTH_FILE);
    (dir.join(SUMMARY_FILE).is_file() && truth.is_file()).then_some(truth)
}
