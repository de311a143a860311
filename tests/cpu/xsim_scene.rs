//! The committed twin from an independent simulator (scenes/xsim, made by
//! tools/xsim/generate.py): the scene loads with the first 7 of its 13
//! committed reference frames in every view (a video short enough to fit
//! from three starts on a CPU) and its generator's anchoring rule, and its
//! truth file loads against the scene's E range.

use std::path::Path;

use physfit::scene::Scene;
use physfit::synth::Truth;

fn scene_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/xsim/xsim.toml")
}

#[test]
fn xsim_scene_loads_with_its_first_7_frames_per_view() {
    let scene = Scene::load(&scene_path()).unwrap();
    assert_eq!(scene.views.len(), 2);
    for view in &scene.views {
        let frames = view.frames.as_ref().expect("every view has frames");
        assert_eq!(frames.paths.len(), 7, "view {}", view.name);
        assert!(frames.paths[6].ends_with("frame_0006.png"));
    }
    assert_eq!(scene.frame_count(), Some(7));
    for view in ["side", "tip"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenes/xsim/frames")
            .join(view);
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            13,
            "13 frames committed"
        );
    }
    assert!(!scene.anchored_indices().is_empty());
    // The generator's anchoring: the floor(x/dx) node of every anchored
    // particle, one per splat.
    assert_eq!(
        scene.simulation.anchoring,
        physfit::mpm_rules::AnchorRule::Splats
    );
}

#[test]
fn xsim_truth_loads_against_the_scene() {
    let scene = Scene::load(&scene_path()).unwrap();
    let truth = Truth::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/xsim/truth.toml"),
        scene.material.log10_youngs_range,
    )
    .unwrap();
    assert_eq!(truth.frames, 13);
}
