//! `[[simulation.colliders]]` in scene.toml (docs/scene.md § Colliders):
//! resolved in order into the simulator's normalised units, each mistake
//! refused naming the entry's field and the fix, and the documented example
//! parses.

use std::path::Path;

use crate::scene::{expect_err, Fixture, BASE};
use physfit::mpm::{Collider, ColliderShape, ContactRule};

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
