//! What a fit writes in its output directory and what it reads, for the
//! one writer discipline ([`crate::io::output_dir`]): the outputs, staged
//! and moved in at the end (`fit.json` last); the checkpoint and the
//! camera check's pictures, written in place while the fit runs; and the
//! inputs the directory may neither hold nor lie inside.

use std::path::{Path, PathBuf};

use crate::io::output_dir::OutputPlan;
use crate::io::output_place::Input;
use crate::io::owned::Owned;
use crate::scene::inputs::scene_inputs;
use crate::scene::Scene;

/// The files a fit writes at its end, `fit.json` (moved into place last)
/// first; with the compare frames of every view, an output directory
/// holding any of them holds an earlier fit.
pub const OUTPUT_FILES: [&str; 6] = [
    SUMMARY_FILE,
    "drivers.safetensors",
    "fitted.ply",
    "loss.jsonl",
    "loss.png",
    "stiffness.png",
];

/// `fit.json`, the outputs' summary, moved into place last.
pub const SUMMARY_FILE: &str = "fit.json";

/// The folder of the compare frames, `compare/<view>/frame_NNNN.png`.
pub const COMPARE_DIR: &str = "compare";

/// The checkpoint's file name in the output directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";

/// The folder of the camera check's pictures in the output directory.
pub const CAMERA_CHECK_DIR: &str = "camera_check";

/// The camera check's picture of `view`, relative to the output directory.
pub fn camera_check_picture(view: &str) -> PathBuf {
    Path::new(CAMERA_CHECK_DIR).join(format!("{view}.png"))
}

/// The plan of a fit of `scene`; `extra` are the other files it reads (a
/// truth file, the drivers whose velocity a stiffness-only fit holds).
pub fn fit_output_plan(scene: &Scene, extra: &[(PathBuf, &'static str)]) -> OutputPlan {
    let mut staged: Vec<Owned> = OUTPUT_FILES.iter().map(Owned::file).collect();
    staged.extend(
        scene
            .views
            .iter()
            .map(|v| Owned::frames(Path::new(COMPARE_DIR).join(&v.name), "png")),
    );
    let mut in_place = vec![Owned::file(CHECKPOINT_FILE)];
    in_place.extend(
        scene
            .views
            .iter()
            .map(|v| Owned::File(camera_check_picture(&v.name))),
    );
    let mut inputs = scene_inputs(scene, true);
    inputs.extend(extra.iter().map(|(p, what)| Input::file(p, what)));
    OutputPlan {
        command: "fit".to_string(),
        staged,
        in_place,
        inputs,
        earlier_fix: "--resume to continue it, --force to replace those files (nothing else in \
                      it is touched), or --out another directory"
            .to_string(),
        last: Some(PathBuf::from(OUTPUT_FILES[0])),
    }
}
