//! The committed drop twin from an independent simulator (scenes/xdrop,
//! made by tools/xdrop/generate.py): the scene loads with its 21 reference
//! frames in each of its four views, the whole object simulated and nothing
//! anchored, under gravity onto its ground (which catches it before the
//! box's walls would); the frames on disk are those the
//! scene lists, at the cameras' size; and the truth file loads against the
//! scene's E range with the generator's frame count and spin.

use std::path::{Path, PathBuf};

use physfit::mpm::{ColliderShape, ContactRule};
use physfit::scene::{Fall, FieldSetting, PoissonSetting, Scene};
use physfit::synth::{Truth, VelocityTruth, YoungsTruth};

const VIEWS: [&str; 4] = ["front", "side", "above", "low"];
const FRAMES: usize = 21;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/xdrop")
}

#[test]
fn xdrop_scene_loads_with_its_frames_on_disk() {
    let scene = Scene::load(&dir().join("xdrop.toml")).unwrap();
    let names: Vec<&str> = scene.views.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, VIEWS);
    for view in &scene.views {
        let frames = view.frames.as_ref().expect("every view has frames");
        let on_disk = std::fs::read_dir(dir().join("frames").join(&view.name))
            .unwrap()
            .count();
        assert_eq!(on_disk, FRAMES, "view {}: files in its folder", view.name);
        assert_eq!(frames.paths.len(), FRAMES, "view {}", view.name);
        assert!(frames.paths[FRAMES - 1].ends_with("frame_0020.png"));
        assert_eq!(
            (frames.width, frames.height),
            (view.camera.width, view.camera.height)
        );
        assert_eq!((frames.width, frames.height), (160, 160));
    }
    assert_eq!(scene.frame_count(), Some(FRAMES));
    // The whole object falls: simulated, nothing anchored, under gravity.
    assert!(scene.simulated.iter().all(|s| *s));
    assert!(scene.anchored_indices().is_empty());
    assert_eq!(scene.simulation.gravity_world, [0.0, 0.0, -9.8]);
    // ν is fitted from physfit's default, inside [0, 0.4].
    assert_eq!(scene.material.poisson_ratio, 0.3);
    assert_eq!(scene.fit.stiffness.poisson, PoissonSetting::Global);
    assert_eq!(
        (
            scene.fit.stiffness.poisson_range.low,
            scene.fit.stiffness.poisson_range.high
        ),
        (0.0, 0.4)
    );
    // The ground: the plane z = 0 with the generator's Coulomb coefficient.
    let ground = &scene.simulation.colliders[0];
    assert_eq!(
        ground.shape,
        ColliderShape::Plane {
            point: [0.0, 0.0, 0.0],
            normal: [0.0, 0.0, 1.0]
        }
    );
    assert_eq!(ground.contact, ContactRule::Friction(0.3));
    // Falling from rest it lands on that ground, 0.325 below its lowest
    // splat, before it reaches any wall of the box.
    match scene.fall_from_rest() {
        Fall::Caught { collider, time } => {
            assert_eq!(collider, 0);
            assert!(
                (time - (2.0 * 0.3246 / 9.8f64).sqrt()).abs() < 1e-3,
                "{time}"
            );
        }
        other => panic!("the ground catches the drop, not {other:?}"),
    }
    assert_eq!(scene.fit.velocity.field, FieldSetting::Rigid);
    assert_eq!(scene.fit.stiffness.field, FieldSetting::Global);
}

#[test]
fn xdrop_truth_loads_against_the_scene() {
    let scene = Scene::load(&dir().join("xdrop.toml")).unwrap();
    let truth = Truth::load(&dir().join("truth.toml"), scene.material.log10_youngs_range).unwrap();
    assert_eq!(truth.frames, FRAMES);
    assert_eq!(truth.youngs, YoungsTruth::Constant(5.5));
    assert_eq!(truth.poisson_ratio, Some(0.2), "the generator's ν");
    match truth.velocity {
        VelocityTruth::Rotation {
            angular_speed,
            linear,
            ..
        } => {
            assert_eq!(angular_speed, 2.5);
            assert_eq!(linear, [0.2, 0.0, -0.4]);
        }
        other => panic!("the drop's velocity is a spin, not {other:?}"),
    }
}
