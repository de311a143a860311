//! `[[simulation.colliders]]` in scene.toml (docs/scene.md § Colliders):
//! resolved in order into the simulator's normalised units, each mistake
//! refused naming the entry's field and the fix, the documented example
//! parses, and the fall from rest reaches the first collider in its way or
//! the box's wall margin (`Scene::fall_from_rest`, printed by `check`).

use std::path::Path;

use crate::scene::{expect_err, Fixture, BASE};
use physfit::mpm::{Collider, ColliderShape, ContactRule};
use physfit::scene::Fall;

/// BASE in the box [−1, 3]³ (side 4) with `colliders` appended.
fn with_colliders(colliders: &str) -> String {
    format!(
        "{BASE}\n[simulation]\nbox = {{ min = [-1.0, -1.0, -1.0], max = [3.0, 3.0, 3.0] }}\n\
         gravity = [0.0, 0.0, -9.8]\nsubsteps = 500\n{colliders}"
    )
}

const GROUND_AND_BLOCK: &str = r#"
[[simulation.colliders]]
kind = "plane"
point = [0.0, 0.0, -0.5]
normal = [0.0, 0.0, 2.0]
contact = "friction"
friction = 0.4

[[simulation.colliders]]
kind = "box"
min = [1.8, -1.0, -1.0]
max = [2.6, 3.0, 1.0]
contact = "slip"
"#;

#[test]
fn colliders_resolve_in_order_into_normalised_units() {
    let f = Fixture::new();
    let s = f.load(&with_colliders(GROUND_AND_BLOCK)).unwrap();
    // World units, the normal of unit length.
    assert_eq!(
        s.simulation.colliders[0].shape,
        ColliderShape::Plane {
            point: [0.0, 0.0, -0.5],
            normal: [0.0, 0.0, 1.0]
        }
    );
    // Normalised: (x − min)/side with min = −1, side = 4.
    let config = s.mpm_config();
    assert_eq!(
        config.colliders,
        vec![
            Collider {
                shape: ColliderShape::Plane {
                    point: [0.25, 0.25, 0.125],
                    normal: [0.0, 0.0, 1.0]
                },
                contact: ContactRule::Friction(0.4),
            },
            Collider {
                shape: ColliderShape::Box {
                    min: [0.7, 0.0, 0.0],
                    max: [0.9, 1.0, 0.5]
                },
                contact: ContactRule::Slip,
            },
        ]
    );
    // None by default.
    let plain = f.load(&with_colliders("")).unwrap();
    assert!(plain.mpm_config().colliders.is_empty());
}

#[test]
fn collider_mistakes_name_the_field_and_the_fix() {
    let f = Fixture::new();
    let plane = |body: &str| format!("[[simulation.colliders]]\n{body}\n");
    let ground = "kind = \"plane\"\npoint = [0.0, 0.0, -0.5]\nnormal = [0.0, 0.0, 1.0]";
    let cases: Vec<(String, &str, &str)> = vec![
        (
            plane("point = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\ncontact = \"slip\""),
            "simulation.colliders[0].kind",
            "kind = \"plane\"",
        ),
        (
            plane("kind = \"sphere\"\ncontact = \"slip\""),
            "simulation.colliders[0].kind",
            "kind = \"box\"",
        ),
        (
            plane("kind = \"plane\"\npoint = [0.0, 0.0, -0.5]\ncontact = \"slip\""),
            "simulation.colliders[0].normal",
            "add `normal",
        ),
        (
            plane(&format!("{ground}\nmin = [0.0, 0.0, 0.0]\ncontact = \"slip\"")),
            "simulation.colliders[0].min",
            "remove `min`",
        ),
        (
            plane("kind = \"box\"\nmin = [2.0, 2.0, 2.0]\ncontact = \"slip\""),
            "simulation.colliders[0].max",
            "add `max",
        ),
        (
            plane("kind = \"plane\"\npoint = [0.0, 0.0, -0.5]\nnormal = [0.0, 0.0, 0.0]\ncontact = \"slip\""),
            "simulation.colliders[0].normal",
            "outward normal",
        ),
        (
            plane(ground),
            "simulation.colliders[0].contact",
            "contact = \"sticky\"",
        ),
        (
            plane(&format!("{ground}\ncontact = \"bouncy\"")),
            "simulation.colliders[0].contact",
            "\"friction\"",
        ),
        (
            plane(&format!("{ground}\ncontact = \"friction\"")),
            "simulation.colliders[0].friction",
            "friction = 0.5",
        ),
        (
            plane(&format!("{ground}\ncontact = \"slip\"\nfriction = 0.3")),
            "simulation.colliders[0].friction",
            "remove `friction`",
        ),
        (
            plane(&format!("{ground}\ncontact = \"friction\"\nfriction = -0.1")),
            "simulation.colliders[0].friction",
            "≥ 0",
        ),
        (
            // The lattice spans z ∈ [0, 1.5]: a plane at z = 1 with normal
            // +z has the lower splats behind it.
            plane("kind = \"plane\"\npoint = [0.0, 0.0, 1.0]\nnormal = [0.0, 0.0, 1.0]\ncontact = \"sticky\""),
            "simulation.colliders[0]",
            "flip `normal`",
        ),
        (
            format!(
                "{}{}",
                plane(&format!("{ground}\ncontact = \"sticky\"")),
                plane("kind = \"box\"\nmin = [0.2, 0.2, 0.2]\nmax = [0.8, 0.8, 0.8]\ncontact = \"sticky\"")
            ),
            "simulation.colliders[1]",
            "move or shrink the box",
        ),
        (
            plane("kind = \"box\"\nmin = [2.0, 2.0, 2.0]\nmax = [2.5, 1.0, 2.5]\ncontact = \"slip\""),
            "simulation.colliders[0]",
            "min",
        ),
        (
            format!(
                "{}{}",
                plane(&format!("{ground}\ncontact = \"sticky\"")),
                plane(&format!("{ground}\ncontact = \"slip\"\nradius = 1.0"))
            ),
            "simulation.colliders[1].radius",
            "remove or rename",
        ),
    ];
    for (colliders, field, fix) in cases {
        let e = expect_err(f.load(&with_colliders(&colliders)), field);
        let msg = e.to_string();
        println!("{msg}");
        assert!(msg.contains(fix), "{field}: no fix `{fix}` in: {msg}");
    }
}

#[test]
fn the_documented_collider_example_parses() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scene.md"))
        .unwrap();
    let section = doc.find("### Colliders").expect("the colliders section");
    let fence = section + doc[section..].find("```toml").expect("an example block");
    let start = fence + doc[fence..].find('\n').unwrap() + 1;
    let end = start + doc[start..].find("```").unwrap();
    let text = format!("[gaussians]\npath = \"splats.ply\"\n{}", &doc[start..end]);
    let config: physfit::scene::SceneConfig = toml::from_str(&text).unwrap();
    let kinds: Vec<_> = config
        .simulation
        .colliders
        .iter()
        .map(|c| (c.kind.as_deref(), c.contact.as_deref(), c.friction))
        .collect();
    assert_eq!(
        kinds,
        [
            (Some("plane"), Some("friction"), Some(0.4)),
            (Some("box"), Some("slip"), None)
        ]
    );
}

/// The fall from rest (docs/scene.md § Colliders, "The fall"): the lattice
/// (z ∈ [0, 1.5]) in the box [−1, 3]³ at grid 32, whose wall margin
/// (3 cells of 0.125) lies at z = −0.625, under g = 9.8 down.
#[test]
fn the_fall_from_rest_reaches_the_ground_or_the_wall_margin_first() {
    let f = Fixture::new();
    let fall = |colliders: &str| f.load(&with_colliders(colliders)).unwrap().fall_from_rest();
    let t = |drop: f64| (2.0 * drop / 9.8).sqrt();
    // A ground 0.5 below the lowest splats catches it; the block beside it
    // (x from 1.8, the lattice ends at 1.5) is never in the way.
    match fall(GROUND_AND_BLOCK) {
        Fall::Caught { collider, time } => {
            assert_eq!(collider, 0);
            assert!((time - t(0.5)).abs() < 1e-6, "{time}");
        }
        other => panic!("the ground catches it, not {other:?}"),
    }
    // No collider, or a ground below the margin: the margin comes first.
    let deep = "[[simulation.colliders]]\nkind = \"plane\"\npoint = [0.0, 0.0, -0.8]\n\
                normal = [0.0, 0.0, 1.0]\ncontact = \"slip\"\n";
    for colliders in ["", deep] {
        match fall(colliders) {
            Fall::LeavesBox { axis, upper, time } => {
                assert_eq!((axis, upper), (2, false));
                assert!((time - t(0.625)).abs() < 1e-6, "{time}");
            }
            other => panic!("{colliders:?}: it leaves the box, not {other:?}"),
        }
    }
    // A block under part of it catches it at its top face.
    let table = "[[simulation.colliders]]\nkind = \"box\"\nmin = [1.0, -1.0, -1.0]\n\
                 max = [2.0, 3.0, -0.2]\ncontact = \"sticky\"\n";
    match fall(table) {
        Fall::Caught { collider, time } => {
            assert_eq!(collider, 0);
            assert!((time - t(0.2)).abs() < 1e-6, "{time}");
        }
        other => panic!("the table catches it, not {other:?}"),
    }
    // Without gravity nothing falls.
    let still = f
        .load(&format!(
            "{BASE}\n[simulation]\nbox = {{ min = [-1.0, -1.0, -1.0], max = [3.0, 3.0, 3.0] }}\n"
        ))
        .unwrap();
    assert_eq!(still.fall_from_rest(), Fall::NoGravity);
}

/// `physfit check` says what the fall reaches, and warns when it is the
/// wall margin within the frames simulated (no reference frames here:
/// `simulate`'s default 48 frames, 1.57 s at 30 fps).
#[test]
fn check_prints_the_fall_and_warns_when_it_leaves_the_box() {
    let f = Fixture::new();
    let run = |colliders: &str| {
        std::fs::write(f.path("scene.toml"), with_colliders(colliders)).unwrap();
        let out = crate::scene_check::check(&f.path("scene.toml"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let caught = run(GROUND_AND_BLOCK);
    assert!(
        caught.contains("reaches simulation.colliders[0] at t = 0.319 s (frame 9.6)"),
        "{caught}"
    );
    assert!(!caught.contains("that is within"), "{caught}");
    let leaves = run("");
    for needle in [
        "wall margin on the −z side at t = 0.357 s (frame 10.7)",
        "WARNING      that is within the 48 frames simulated",
        "fix: add a ground under it",
    ] {
        assert!(leaves.contains(needle), "{needle:?} in\n{leaves}");
    }
}
