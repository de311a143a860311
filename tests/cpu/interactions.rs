//! The interactions of `physfit render --params` (docs/scene.md
//! "Interactions file"): the file and the flags parse into one list, and
//! bad values are refused naming the file or flag and the field.

use physfit::interact::{
    Impulse, Interaction, InteractionFlags, Interactions, Start, VelocityRegion, MAX_IMPULSES,
};

pub(crate) const FILE: &str = r#"
[[interactions]]
kind = "start"
from = "rest"

[[interactions]]
kind = "velocity"
velocity = [0.0, 1.5, 0.0]

[[interactions]]
kind = "velocity"
velocity = [0.5, 0.0, 0.0]
box = { min = [0.0, 0.0, 0.5], max = [1.0, 1.0, 1.0] }

[[interactions]]
kind = "impulse"
centre = [0.1, 0.2, 0.3]
radius = 0.05
acceleration = [0.0, 0.0, 40.0]
start = 0.1
end = 0.2

[[interactions]]
kind = "gravity"
acceleration = [0.0, 0.0, -9.81]
"#;

fn kinds(list: &Interactions) -> Vec<Interaction> {
    list.entries.iter().map(|e| e.interaction.clone()).collect()
}

fn error_of(text: &str) -> String {
    Interactions::parse(text, "poke.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn the_file_parses_every_kind() {
    let list = Interactions::parse(FILE, "poke.toml").unwrap();
    assert_eq!(list.start(), Start::Rest);
    assert_eq!(list.gravity(), Some([0.0, 0.0, -9.81]));
    let v: Vec<&VelocityRegion> = list.velocities().collect();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].within, None);
    assert!(v[1].applies_at([0.5, 0.5, 0.75]) && !v[1].applies_at([0.5, 0.5, 0.25]));
    let i: Vec<&Impulse> = list.impulses().collect();
    assert_eq!(
        i,
        [&Impulse {
            centre: [0.1, 0.2, 0.3],
            radius: 0.05,
            acceleration: [0.0, 0.0, 40.0],
            start: 0.1,
            end: 0.2,
        }]
    );
    assert_eq!(i[0].velocity_change()[2], 40.0 * (0.2 - 0.1));
    assert_eq!(list.entries[3].field, "interactions[3]");
    assert_eq!(list.entries[3].origin, "poke.toml");
    // Nothing given: the fitted start, the scene's gravity.
    let empty = Interactions::parse("", "empty.toml").unwrap();
    assert!(empty.is_empty());
    assert_eq!((empty.start(), empty.gravity()), (Start::Fitted, None));
}

#[test]
fn the_flags_give_the_same_list_as_the_file() {
    let flags = InteractionFlags {
        velocity: Some("0.5,0,0".into()),
        in_box: Some("0,0,0.5..1,1,1".into()),
        impulses: vec![
            "centre=0.1,0.2,0.3; radius=0.05; acceleration=0,0,40; start=0.1; end=0.2".into(),
        ],
        gravity: Some("0,0,-9.81".into()),
        from_rest: true,
        release: false,
    };
    let from_flags = flags.interactions().unwrap();
    let mut from_file = kinds(&Interactions::parse(FILE, "poke.toml").unwrap());
    from_file.remove(1); // the file's global velocity has no flag here
    assert_eq!(kinds(&from_flags), from_file);
    assert_eq!(from_flags.entries[2].origin, "--impulse");
    // `start` defaults to 0.
    let short = InteractionFlags {
        impulses: vec!["centre=0,0,0;radius=1;acceleration=1,0,0;end=0.5".into()],
        ..Default::default()
    };
    let list = short.interactions().unwrap();
    assert_eq!(list.impulses().next().unwrap().start, 0.0);
    assert!(InteractionFlags::default()
        .interactions()
        .unwrap()
        .is_empty());
}

#[test]
fn bad_values_in_the_file_are_refused_naming_the_field() {
    let with = |table: &str| format!("[[interactions]]\n{table}\n");
    let impulse = |extra: &str| {
        with(&format!(
            "kind = \"impulse\"\ncentre = [0.0, 0.0, 0.0]\nacceleration = [1.0, 0.0, 0.0]\n{extra}"
        ))
    };
    let cases = [
        (impulse("radius = -0.1\nend = 1.0"), "interactions[0].radius"),
        (impulse("radius = 0.1\nstart = 0.5\nend = 0.5"), "interactions[0].end"),
        (impulse("radius = 0.1\nstart = -1.0\nend = 0.5"), "interactions[0].start"),
        (impulse("radius = 0.1"), "missing field `end`"),
        (impulse("radious = 0.1\nend = 1.0"), "radious"),
        (with("kind = \"poke\""), "interactions[0].kind"),
        (with("velocity = [1.0, 0.0, 0.0]"), "has no `kind`"),
        (
            with("kind = \"velocity\"\nvelocity = [1.0, 0.0, 0.0]\nbox = { min = [1.0, 0.0, 0.0], max = [0.0, 1.0, 1.0] }"),
            "interactions[0].box",
        ),
        (with("kind = \"velocity\"\nvelocity = [1.0, 0.0]"), "interactions[0]"),
        (with("kind = \"start\"\nfrom = \"moving\""), "interactions[0]"),
        (with("kind = \"release\"\nanchors = \"all\""), "anchors"),
        (
            format!("{}{}", with("kind = \"release\""), with("kind = \"release\"")),
            "interactions[1]",
        ),
        ("gravity = [0.0, 0.0, -9.8]\n".to_string(), "(top level)"),
        (
            format!(
                "{}{}",
                with("kind = \"gravity\"\nacceleration = [0.0, 0.0, -9.8]"),
                with("kind = \"gravity\"\nacceleration = [0.0, 0.0, -1.0]")
            ),
            "interactions[1]",
        ),
    ];
    for (text, field) in cases {
        let e = error_of(&text);
        assert!(e.starts_with("poke.toml: "), "{e}");
        assert!(e.contains(field), "expected `{field}` in: {e}");
        assert!(e.contains("fix"), "{e}");
    }
    let missing = Interactions::load(std::path::Path::new("/nonexistent/poke.toml")).unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/poke.toml"),
        "{missing}"
    );
}

#[test]
fn bad_flags_are_refused_naming_the_flag() {
    let impulse = |text: &str| InteractionFlags {
        impulses: vec![text.into()],
        ..Default::default()
    };
    let cases = [
        (impulse("centre=0,0,0;radius=1;acceleration=1,0,0"), "end"),
        (
            impulse("centre=0,0;radius=1;acceleration=1,0,0;end=1"),
            "centre",
        ),
        (
            impulse("centre=0,0,0;radius=0;acceleration=1,0,0;end=1"),
            "radius",
        ),
        (impulse("centre=0,0,0;radius=1;accel=1,0,0;end=1"), "accel"),
        (
            impulse("centre=0,0,0;radius=1;acceleration=1,0,0;end=x"),
            "end",
        ),
        (
            InteractionFlags {
                in_box: Some("0,0,0..1,1,1".into()),
                ..Default::default()
            },
            "--in-box",
        ),
        (
            InteractionFlags {
                velocity: Some("1,0,0".into()),
                in_box: Some("0,0,0,1,1,1".into()),
                ..Default::default()
            },
            "MIN..MAX",
        ),
        (
            InteractionFlags {
                gravity: Some("0,0,nan".into()),
                ..Default::default()
            },
            "--gravity",
        ),
    ];
    for (flags, field) in cases {
        let e = flags.interactions().unwrap_err().to_string();
        assert!(e.contains(field), "expected `{field}` in: {e}");
        assert!(e.contains("fix"), "{e}");
    }
    // Too many impulses.
    let many = InteractionFlags {
        impulses: vec!["centre=0,0,0;radius=1;acceleration=1,0,0;end=1".into(); MAX_IMPULSES + 1],
        ..Default::default()
    };
    let e = many.interactions().unwrap_err().to_string();
    assert!(e.contains(&format!("more than {MAX_IMPULSES}")), "{e}");
    // File and flags together: one gravity only, both places named.
    let mut list = Interactions::parse(FILE, "poke.toml").unwrap();
    let flags = InteractionFlags {
        gravity: Some("0,0,-1".into()),
        ..Default::default()
    };
    let e = list
        .extend(flags.interactions().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--gravity") && e.contains("interactions[4]") && e.contains("poke.toml"),
        "{e}"
    );
}

#[test]
fn velocities_add_up_in_their_regions_over_the_start() {
    let list = Interactions::parse(FILE, "poke.toml").unwrap(); // from rest
    let rest = [[0.5, 0.5, 0.25], [0.5, 0.5, 0.75], [0.5, 0.5, 0.9]];
    let fitted = [[9.0, 9.0, 9.0]; 3];
    let v = list.initial_velocities(&rest, &[false, false, true], &fitted);
    assert_eq!(v, [[0.0, 1.5, 0.0], [0.5, 1.5, 0.0], [0.0; 3]]);
    // From the fitted v0 by default.
    let flags = InteractionFlags {
        velocity: Some("1,0,0".into()),
        ..Default::default()
    };
    let v = flags
        .interactions()
        .unwrap()
        .initial_velocities(&rest, &[false; 3], &fitted);
    assert_eq!(v[0], [10.0, 9.0, 9.0]);
}

#[test]
fn impulses_and_gravity_go_to_normalised_units_and_the_velocity_bound_is_checked() {
    use physfit::mpm::{MpmConfig, WallMode};
    use physfit::scene::SimBox;
    let sim_box = SimBox {
        min: [-1.0, 0.0, 1.0],
        side: 2.0,
    };
    let list = Interactions::parse(FILE, "poke.toml").unwrap();
    let forces = list.impulse_forces(&sim_box);
    assert_eq!(forces.len(), 1);
    let f = &forces[0];
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert!(close(f.centre[0], 0.55) && close(f.centre[1], 0.1) && close(f.centre[2], -0.35));
    assert_eq!((f.radius, f.acceleration[2]), (0.025, 20.0));
    assert_eq!((f.start, f.end), (0.1, 0.2));
    let config = MpmConfig {
        grid_res: 32,
        fps: 24.0,
        substeps_per_frame: 100,
        gravity: [0.0; 3],
        damping: 0.0,
        density: 2000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
        colliders: Vec::new(),
        anchoring: physfit::mpm_rules::AnchorRule::Stencil,
        transfer: Default::default(),
    };
    assert_eq!(
        list.apply(&config, &sim_box).gravity,
        [0.0, 0.0, -9.81 / 2.0]
    );
    // Half a cell per substep: 0.5 · (2 / 32) · 2400 = 75 world units / s.
    let slow = [[0.0, 70.0, 0.0]];
    let fast = [[0.0, 72.0, 0.0]]; // + the impulse's 4 units/s
    list.check_velocity_bound(&slow, &config, &sim_box).unwrap();
    let e = list
        .check_velocity_bound(&fast, &config, &sim_box)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("simulation.substeps") && e.contains("half a cell"),
        "{e}"
    );
    assert!(e.contains("at least 102"), "{e}");
}

#[test]
fn center_is_read_as_centre_in_the_file_and_the_flag() {
    let british = Interactions::parse(FILE, "poke.toml").unwrap();
    let american = Interactions::parse(&FILE.replace("centre =", "center ="), "poke.toml").unwrap();
    assert_eq!(kinds(&american), kinds(&british));
    let flag = |key: &str| InteractionFlags {
        impulses: vec![format!(
            "{key}=0.1,0.2,0.3;radius=0.05;acceleration=0,0,40;end=1"
        )],
        ..Default::default()
    };
    assert_eq!(
        kinds(&flag("center").interactions().unwrap()),
        kinds(&flag("centre").interactions().unwrap())
    );
}

#[test]
fn a_bad_flag_value_names_the_flag_once() {
    let e = InteractionFlags {
        velocity: Some("1,0".into()),
        ..Default::default()
    }
    .interactions()
    .unwrap_err()
    .to_string();
    assert_eq!(e.matches("--velocity").count(), 1, "{e}");
    assert!(
        e.starts_with("--velocity: \"1,0\" is not three numbers"),
        "{e}"
    );
}

/// A ground and a block as `[[colliders]]`: the schema of
/// `[[simulation.colliders]]`.
const COLLIDERS: &str = r#"
[[colliders]]
kind = "plane"
point = [0.0, 0.0, -0.5]
normal = [0.0, 0.0, 2.0]
contact = "friction"
friction = 0.4

[[colliders]]
kind = "box"
min = [1.8, -1.0, -1.0]
max = [2.6, 3.0, 1.0]
contact = "slip"
"#;

#[test]
fn colliders_in_the_file_read_as_the_scene_reads_its_own() {
    use physfit::mpm::{Collider, ColliderShape, ContactRule, MpmConfig, WallMode};
    use physfit::scene::SimBox;
    let list = Interactions::parse(COLLIDERS, "floor.toml").unwrap();
    let colliders: Vec<(String, Collider)> = list
        .colliders()
        .map(|(e, c)| (e.field.clone(), *c))
        .collect();
    assert_eq!(
        colliders,
        [
            (
                "colliders[0]".to_string(),
                Collider {
                    shape: ColliderShape::Plane {
                        point: [0.0, 0.0, -0.5],
                        normal: [0.0, 0.0, 1.0],
                    },
                    contact: ContactRule::Friction(0.4),
                }
            ),
            (
                "colliders[1]".to_string(),
                Collider {
                    shape: ColliderShape::Box {
                        min: [1.8, -1.0, -1.0],
                        max: [2.6, 3.0, 1.0],
                    },
                    contact: ContactRule::Slip,
                }
            ),
        ]
    );
    // Added after the scene's own, in the simulator's normalised units.
    let sim_box = SimBox {
        min: [-1.0; 3],
        side: 4.0,
    };
    let scene_own = Collider {
        shape: ColliderShape::Plane {
            point: [0.5, 0.5, 0.0],
            normal: [1.0, 0.0, 0.0],
        },
        contact: ContactRule::Sticky,
    };
    let config = MpmConfig {
        grid_res: 32,
        fps: 24.0,
        substeps_per_frame: 100,
        gravity: [0.0; 3],
        damping: 0.0,
        density: 2000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
        colliders: vec![scene_own],
        anchoring: physfit::mpm_rules::AnchorRule::Stencil,
        transfer: Default::default(),
    };
    let applied = list.apply(&config, &sim_box).colliders;
    assert_eq!(applied.len(), 3);
    assert_eq!(applied[0], scene_own);
    assert_eq!(
        applied[1].shape,
        ColliderShape::Plane {
            point: [0.25, 0.25, 0.125],
            normal: [0.0, 0.0, 1.0],
        }
    );
}

#[test]
fn collider_mistakes_in_the_file_are_refused_in_the_scene_s_words() {
    let ground =
        "[[colliders]]\nkind = \"plane\"\npoint = [0.0, 0.0, -0.5]\nnormal = [0.0, 0.0, 1.0]";
    let cases = [
        (
            "[[colliders]]\npoint = [0.0, 0.0, 0.0]\ncontact = \"slip\"".to_string(),
            "poke.toml: `colliders[0].kind`: is missing; fix: add kind = \"plane\"",
        ),
        (
            "[[colliders]]\nkind = \"sphere\"\ncontact = \"slip\"".to_string(),
            "`colliders[0].kind`: is \"sphere\"; fix: set kind = \"plane\"",
        ),
        (
            format!("{ground}\ncontact = \"friction\""),
            "`colliders[0].friction`: is missing: contact = \"friction\" needs the Coulomb \
             coefficient μ; fix: add `friction = 0.5`",
        ),
        (
            format!("{ground}\ncontact = \"slip\"\nfriction = 0.3"),
            "`colliders[0].friction`: is not read with contact = \"slip\"; fix: remove `friction`",
        ),
        (
            format!(
                "{ground}\ncontact = \"slip\"\n[[colliders]]\nkind = \"box\"\n\
                 min = [1.0, 0.0, 0.0]\nmax = [0.0, 1.0, 1.0]\ncontact = \"slip\""
            ),
            "poke.toml: `colliders[1]`",
        ),
        (
            format!("{ground}\ncontact = \"slip\"\nradius = 1.0"),
            "poke.toml: in `colliders[0]`: unknown field `radius`",
        ),
    ];
    for (text, want) in cases {
        let e = error_of(&text);
        assert!(e.contains(want), "expected «{want}» in: {e}");
        assert!(e.contains("fix"), "{e}");
    }
}

/// The lattice scene of the scene tests (z from its lowest splat up) in
/// the box [−1, 3]³ at 32 cells, with `gravity`.
fn lattice_scene(f: &crate::scene::Fixture, gravity: &str) -> physfit::scene::Scene {
    f.load(&format!(
        "{}\n[simulation]\nbox = {{ min = [-1.0, -1.0, -1.0], max = [3.0, 3.0, 3.0] }}\n\
         gravity = {gravity}\nsubsteps = 500\n",
        crate::scene::BASE
    ))
    .unwrap()
}

#[test]
fn the_ground_lies_under_the_object_against_gravity() {
    use physfit::interact::GROUND_FRICTION;
    use physfit::mpm::{ColliderShape, ContactRule};
    let f = crate::scene::Fixture::new();
    let scene = lattice_scene(&f, "[0.0, 0.0, -9.8]");
    let lowest = scene
        .simulated_indices()
        .iter()
        .map(|&i| f64::from(scene.gaussians().means[i as usize][2]))
        .fold(f64::INFINITY, f64::min);
    let dx = 4.0 / 32.0;
    let mut list = Interactions::default();
    let ground = list.add_ground(&scene, None).unwrap();
    assert_eq!(ground.up, [0.0, 0.0, 1.0]);
    assert!((ground.lowest - lowest).abs() < 1e-6);
    assert!(
        (ground.height - (lowest - 0.5 * dx)).abs() < 1e-6,
        "{ground:?}"
    );
    let (entry, c) = list.colliders().next().unwrap();
    assert_eq!(entry.origin, "--ground");
    assert_eq!(c.contact, ContactRule::Friction(GROUND_FRICTION));
    assert!(matches!(c.shape, ColliderShape::Plane { normal, .. } if normal == [0.0, 0.0, 1.0]));
    list.check_colliders_clear(&scene).unwrap();

    // A given height, along up: against a gravity along +y, up is −y.
    let sideways = lattice_scene(&f, "[0.0, 9.8, 0.0]");
    let mut list = Interactions::default();
    let ground = list.add_ground(&sideways, Some(-1.6)).unwrap();
    assert_eq!((ground.up, ground.height), ([0.0, -1.0, 0.0], -1.6));
    // The --gravity of the run says where down is, not the scene's.
    let mut list = InteractionFlags {
        gravity: Some("0,0,-1".into()),
        ..Default::default()
    }
    .interactions()
    .unwrap();
    assert_eq!(
        list.add_ground(&sideways, None).unwrap().up,
        [0.0, 0.0, 1.0]
    );
}

#[test]
fn a_ground_or_collider_in_the_object_is_refused_naming_the_fix() {
    let f = crate::scene::Fixture::new();
    let scene = lattice_scene(&f, "[0.0, 0.0, -9.8]");
    let refused = |height: Option<f64>, scene: &physfit::scene::Scene| {
        Interactions::default()
            .add_ground(scene, height)
            .unwrap_err()
            .to_string()
    };
    let above = refused(Some(0.5), &scene);
    assert!(
        above.starts_with("--ground: the ground at height 0.5")
            && above.contains("above the object's lowest point")
            && above.contains("fix: give a height ≤")
            && above.contains("`--ground` alone"),
        "{above}"
    );
    let below = refused(Some(-0.9), &scene);
    assert!(
        below.contains("below the box's wall margin") && below.contains("fix:"),
        "{below}"
    );
    let weightless = refused(None, &lattice_scene(&f, "[0.0, 0.0, 0.0]"));
    assert!(
        weightless.contains("no gravity") && weightless.contains("fix: give --gravity"),
        "{weightless}"
    );
    // A file's collider holding the object at the start, as the scene's
    // own are refused.
    let list = Interactions::parse(
        "[[colliders]]\nkind = \"plane\"\npoint = [0.0, 0.0, 1.0]\nnormal = [0.0, 0.0, 1.0]\n\
         contact = \"sticky\"\n",
        "poke.toml",
    )
    .unwrap();
    let inside = list.check_colliders_clear(&scene).unwrap_err().to_string();
    assert!(
        inside.starts_with("poke.toml: `colliders[0]`: ")
            && inside.contains("simulated splats start behind the plane")
            && inside.contains("fix: move `point`, or flip `normal`"),
        "{inside}"
    );
}

/// `kind = "release"` and `--release` let the object go: one entry, and the
/// anchored drivers then start with the velocity the free ones get.
#[test]
fn a_released_object_moves_its_anchored_drivers_too() {
    let file = Interactions::parse(
        "[[interactions]]\nkind = \"release\"\n\n[[interactions]]\nkind = \"velocity\"\nvelocity = [0.0, 0.0, -1.0]\n",
        "drop.toml",
    )
    .unwrap();
    let flags = InteractionFlags {
        velocity: Some("0,0,-1".into()),
        release: true,
        ..Default::default()
    }
    .interactions()
    .unwrap();
    for list in [&file, &flags] {
        assert!(list.released());
        assert!(list
            .entries
            .iter()
            .any(|e| matches!(e.interaction, Interaction::Release)));
        let rest = [[0.0; 3], [1.0; 3]];
        let held = list.held(&[true, false]);
        assert_eq!(held, vec![false; 2], "let go, nothing is held");
        let v = list.initial_velocities(&rest, &held, &[[0.5, 0.0, 0.0]; 2]);
        assert_eq!(
            v,
            vec![[0.5, 0.0, -1.0]; 2],
            "the anchored driver moves too"
        );
    }
    assert_eq!(flags.entries[0].origin, "--release");
    let held = InteractionFlags {
        velocity: Some("0,0,-1".into()),
        ..Default::default()
    }
    .interactions()
    .unwrap();
    assert!(!held.released());
    assert_eq!(held.held(&[true, false]), vec![true, false]);
    let v = held.initial_velocities(
        &[[0.0; 3], [1.0; 3]],
        &held.held(&[true, false]),
        &[[0.5, 0.0, 0.0]; 2],
    );
    assert_eq!(v[0], [0.0; 3], "held, the anchored driver stays at rest");
}
