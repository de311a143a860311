//! The demo's fox moved by another engine (scenes/xfox, made by
//! tools/xfox/generate.py): the scene loads with the first 5 of its 12
//! committed frames per view and the engine's anchoring rule (physfit's
//! default); it is the demo's scene otherwise (splats, cameras, regions,
//! drivers, transfer), and the
//! generator's box, the one its E is normalised by, is physfit's
//! automatic box of that scene to the digits the generator holds; the
//! demo's truth file, its material, loads against the scene.

use std::path::{Path, PathBuf};

use physfit::scene::Scene;
use physfit::synth::Truth;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A numeric constant (`NAME = 1.5` or `NAME = np.array([a, b, c])`) of
/// tools/xfox/generate.py.
fn generator_constant(name: &str) -> Vec<f64> {
    let source = std::fs::read_to_string(repo("tools/xfox/generate.py")).unwrap();
    let line = source
        .lines()
        .find(|l| l.starts_with(&format!("{name} = ")))
        .unwrap_or_else(|| panic!("{name} in tools/xfox/generate.py"));
    let value = line.split('=').nth(1).unwrap().split('#').next().unwrap();
    value
        .trim()
        .trim_start_matches("np.array(")
        .trim_end_matches(')')
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|v| v.trim().parse().unwrap())
        .collect()
}

#[test]
fn xfox_scene_is_the_demos_with_the_engines_frames_and_anchoring() {
    let scene = Scene::load(&repo("scenes/xfox/xfox.toml")).unwrap();
    let demo = Scene::load(&repo("scenes/fox.toml")).unwrap();
    assert_eq!(scene.views.len(), 2);
    for (view, demo_view) in scene.views.iter().zip(&demo.views) {
        assert_eq!(view.name, demo_view.name);
        assert_eq!(view.camera, demo_view.camera);
        let frames = view.frames.as_ref().expect("every view has frames");
        assert_eq!(frames.paths.len(), 5, "view {}", view.name);
        assert!(frames.paths[0].starts_with(repo("scenes/xfox/frames")));
        let dir = repo("scenes/xfox/frames").join(&view.name);
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            12,
            "12 frames committed"
        );
    }
    assert_eq!(scene.gaussians().len(), demo.gaussians().len());
    assert_eq!(scene.anchored_indices(), demo.anchored_indices());
    assert_eq!(
        scene.simulation.anchoring,
        physfit::mpm_rules::AnchorRule::Splats
    );
    assert_eq!(scene.simulation.transfer, demo.simulation.transfer);
    // The engine normalises E by the box physfit chooses for the demo.
    let (min, side) = (
        generator_constant("BOX_MIN"),
        generator_constant("BOX_SIDE")[0],
    );
    let sim_box = &scene.simulation.sim_box;
    assert_eq!(sim_box, &demo.simulation.sim_box);
    assert!(
        (sim_box.side - side).abs() < 1e-4,
        "{} against {side}",
        sim_box.side
    );
    for (a, b) in sim_box.min.iter().zip(&min) {
        assert!((a - b).abs() < 1e-4, "{:?} against {min:?}", sim_box.min);
    }
    let truth = Truth::load(
        &repo("scenes/fox_truth.toml"),
        scene.material.log10_youngs_range,
    )
    .unwrap();
    assert_eq!(truth.frames, 12);
}

/// scenes/xfox/xfox_engine.toml fits the same frames at the engine's own
/// discretisation: the generator's grid, substeps per frame and box (to
/// the digits it holds, so its E means the truth file's) and its anchoring
/// rule, the floor node of every anchored splat, and its APIC transfer;
/// the rest is xfox.toml's.
#[test]
fn xfox_engine_scene_is_xfox_at_the_engines_discretisation() {
    let scene = Scene::load(&repo("scenes/xfox/xfox_engine.toml")).unwrap();
    let xfox = Scene::load(&repo("scenes/xfox/xfox.toml")).unwrap();
    let sim = &scene.simulation;
    assert_eq!(sim.grid_res as f64, generator_constant("GRID")[0]);
    assert_eq!(sim.substeps as f64, generator_constant("SUBSTEPS")[0]);
    assert_eq!(sim.anchoring, physfit::mpm_rules::AnchorRule::Splats);
    assert_eq!(sim.transfer, physfit::mpm_rules::config::Transfer::Apic);
    assert_ne!(sim.transfer, xfox.simulation.transfer);
    let (min, side) = (
        generator_constant("BOX_MIN"),
        generator_constant("BOX_SIDE")[0],
    );
    assert!(
        (sim.sim_box.side - side).abs() < 1e-9,
        "{}",
        sim.sim_box.side
    );
    for ((a, b), c) in sim
        .sim_box
        .min
        .iter()
        .zip(&min)
        .zip(&xfox.simulation.sim_box.min)
    {
        assert!(
            (a - b).abs() < 1e-9 && (a - c).abs() < 1e-4,
            "{:?}",
            sim.sim_box.min
        );
    }
    assert!((sim.sim_box.side - xfox.simulation.sim_box.side).abs() < 1e-4);
    for (view, other) in scene.views.iter().zip(&xfox.views) {
        assert_eq!(view.camera, other.camera);
        assert_eq!(
            view.frames.as_ref().unwrap().paths,
            other.frames.as_ref().unwrap().paths
        );
    }
    assert_eq!(scene.anchored_indices(), xfox.anchored_indices());
    assert_eq!(scene.material, xfox.material);
    assert_eq!(scene.fit.stiffness, xfox.fit.stiffness);
}
