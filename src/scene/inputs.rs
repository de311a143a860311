//! The files a command reads through a scene, which its output directory
//! may neither hold nor lie inside ([`crate::io::output_place`]): the
//! scene file, its splats, and the folders of its reference frames and
//! loss masks.

use crate::io::output_place::Input;

use super::Scene;

/// The scene file and its splats; with `frames`, the folders of every
/// view's reference frames and loss masks too (left out for `synth`,
/// which writes the frames a scene names).
pub fn scene_inputs(scene: &Scene, frames: bool) -> Vec<Input> {
    let mut inputs = vec![
        Input::file(&scene.path, "scene file"),
        Input::file(&scene.gaussians_path, "splats (gaussians.path)"),
    ];
    if !frames {
        return inputs;
    }
    for view in &scene.views {
        for (set, what) in [
            (&view.frames, "reference frames"),
            (&view.masks, "loss masks"),
        ] {
            for path in set.iter().flat_map(|s| &s.paths) {
                if let Some(folder) = path.parent() {
                    let input = Input::folder(folder, what);
                    if !inputs.contains(&input) {
                        inputs.push(input);
                    }
                }
            }
        }
    }
    inputs
}
