//! The truth file of `physfit synth` (src/synth; docs/truth.md):
//! every kind parses, every mistake is refused naming the file and the
//! field, and the fields evaluate as documented: first box wins, a
//! rotation's velocity is `linear + ω × (x − p)`, the random field is
//! deterministic per seed, smooth on its length scale, of the given spread
//! and clamped into the scene's range, and [`Truth::per_driver`] evaluates
//! at the drivers' world rest positions with anchored drivers at rest.

use std::path::Path;

use physfit::drive::kmeans::SplitMix64;
use physfit::drive::{DriverSet, DriverSource};
use physfit::scene::SimBox;
use physfit::synth::{Truth, TruthError, VelocityTruth, YoungsTruth};

const RANGE: [f64; 2] = [3.0, 6.0];

fn parse(text: &str) -> Result<Truth, TruthError> {
    Truth::parse(text, Path::new("truth.toml"), RANGE)
}

const UNIFORM: &str = "[velocity]\nkind = \"uniform\"\nvalue = [0.0, 1.0, 0.0]\n";
const CONSTANT: &str = "[youngs]\nkind = \"constant\"\nlog10 = 4.0\n";

#[test]
fn every_kind_parses() {
    let t = parse(&format!("{CONSTANT}{UNIFORM}")).unwrap();
    assert_eq!(t.frames, 12, "the documented default");
    assert_eq!(t.youngs, YoungsTruth::Constant(4.0));
    assert_eq!(t.velocity, VelocityTruth::Uniform([0.0, 1.0, 0.0]));
    assert_eq!(t.poisson_ratio, None, "the scene's ν unless given");
    let t = parse(&format!("poisson_ratio = 0.2\n{CONSTANT}{UNIFORM}")).unwrap();
    assert_eq!(t.poisson_ratio, Some(0.2));

    let t = parse(
        r#"
frames = 5
[youngs]
kind = "boxes"
default = 5.0
boxes = [{ min = [0, 0, 0], max = [1, 1, 1], log10 = 3.5 }]
[velocity]
kind = "boxes"
default = [0.0, 0.0, 0.0]
boxes = [{ min = [0, 0, 0], max = [1, 1, 1], value = [1, 2, 3] }]
"#,
    )
    .unwrap();
    assert_eq!(t.frames, 5);
    assert!(
        matches!(t.youngs, YoungsTruth::Boxes { default, ref boxes } if default == 5.0 && boxes.len() == 1)
    );
    assert!(
        matches!(t.velocity, VelocityTruth::Boxes { ref boxes, .. } if boxes[0].value == [1.0, 2.0, 3.0])
    );

    let t = parse(
        r#"
[youngs]
kind = "random"
seed = 3
mean = 4.5
amplitude = 0.3
length_scale = 0.2
modes = 8
[velocity]
kind = "rotation"
point = [0, 0, 1]
axis = [0, 0, 2]
angular_speed = 1.5
"#,
    )
    .unwrap();
    let YoungsTruth::Random(field) = &t.youngs else {
        panic!("{:?}", t.youngs)
    };
    assert_eq!((field.seed, field.modes(), field.range), (3, 8, RANGE));
    assert_eq!(
        t.velocity,
        VelocityTruth::Rotation {
            point: [0.0, 0.0, 1.0],
            axis: [0.0, 0.0, 1.0],
            angular_speed: 1.5,
            linear: [0.0; 3],
        },
        "the axis is normalised, the linear part defaults to 0"
    );
}

/// The error of `text` and its message, which must name the file.
fn refused(text: &str) -> (TruthError, String) {
    let e = parse(text).expect_err(text);
    let message = e.to_string();
    assert!(message.contains("truth.toml"), "{message}");
    (e, message)
}

#[test]
fn mistakes_are_refused_naming_the_field() {
    let (e, m) = refused(&format!("[youngs]\nkind = \"spiral\"\n{UNIFORM}"));
    assert!(
        matches!(&e, TruthError::UnknownKind { field, kind, .. } if field == "youngs.kind" && kind == "spiral"),
        "{m}"
    );
    assert!(m.contains("\"constant\""), "{m}");

    let (e, m) = refused(&format!("{CONSTANT}[velocity]\nkind = \"twirl\"\n"));
    assert!(
        matches!(&e, TruthError::UnknownKind { field, .. } if field == "velocity.kind"),
        "{m}"
    );

    let (e, m) = refused(&format!("[youngs]\nlog10 = 4.0\n{UNIFORM}"));
    assert!(
        matches!(&e, TruthError::Invalid { field, .. } if field == "youngs.kind"),
        "{m}"
    );

    let (e, m) = refused(&format!(
        "[youngs]\nkind = \"constant\"\nlog10 = 4.0\nseed = 1\n{UNIFORM}"
    ));
    assert!(
        matches!(&e, TruthError::Parse { field, .. } if field == "youngs"),
        "{m}"
    );
    assert!(m.contains("seed"), "{m}");

    let (e, m) = refused(&format!("{CONSTANT}{UNIFORM}colour = 1\n"));
    assert!(matches!(&e, TruthError::Parse { .. }), "{m}");
    let (e, m) = refused(CONSTANT);
    assert!(
        matches!(&e, TruthError::Parse { .. }) && m.contains("velocity"),
        "{m}"
    );

    // Above the range: its top sets the substeps, so it is refused.
    let (e, m) = refused(&format!(
        "[youngs]\nkind = \"constant\"\nlog10 = 6.5\n{UNIFORM}"
    ));
    assert!(
        matches!(&e, TruthError::OutOfRange { field, value, high, .. } if field == "youngs.log10" && *value == 6.5 && *high == 6.0),
        "{m}"
    );
    let (e, m) = refused(&format!(
        "[youngs]\nkind = \"boxes\"\ndefault = 4.0\nboxes = [{{ min = [0,0,0], max = [1,1,1], log10 = 4.0 }}, {{ min = [0,0,0], max = [1,1,1], log10 = 2.0 }}]\n{UNIFORM}"
    ));
    assert!(
        matches!(&e, TruthError::OutOfRange { field, .. } if field == "youngs.boxes[1].log10"),
        "{m}"
    );
    let (e, m) = refused(&format!(
        "[youngs]\nkind = \"boxes\"\ndefault = 4.0\nboxes = [{{ min = [0,0,0], max = [1,0,1], log10 = 4.0 }}]\n{UNIFORM}"
    ));
    assert!(
        matches!(&e, TruthError::Invalid { field, .. } if field == "youngs.boxes[0]"),
        "{m}"
    );
    let (e, m) = refused(&format!(
        "[youngs]\nkind = \"random\"\nmean = 7.0\namplitude = 0.1\nlength_scale = 0.1\n{UNIFORM}"
    ));
    assert!(
        matches!(&e, TruthError::OutOfRange { field, .. } if field == "youngs.mean"),
        "{m}"
    );
    for scale in ["0.0", "-1.0"] {
        let (e, m) = refused(&format!(
            "[youngs]\nkind = \"random\"\nmean = 4.0\namplitude = 0.1\nlength_scale = {scale}\n{UNIFORM}"
        ));
        assert!(
            matches!(&e, TruthError::Invalid { field, .. } if field == "youngs.length_scale"),
            "{m}"
        );
    }
    let (e, m) = refused(&format!(
        "[youngs]\nkind = \"random\"\nmean = 4.0\namplitude = -0.1\nlength_scale = 0.1\n{UNIFORM}"
    ));
    assert!(
        matches!(&e, TruthError::Invalid { field, .. } if field == "youngs.amplitude"),
        "{m}"
    );

    let (e, m) = refused(&format!(
        "{CONSTANT}[velocity]\nkind = \"rotation\"\npoint = [0,0,0]\naxis = [0,0,0]\nangular_speed = 1.0\n"
    ));
    assert!(
        matches!(&e, TruthError::Invalid { field, .. } if field == "velocity.axis"),
        "{m}"
    );
    let (e, m) = refused(&format!("frames = 1\n{CONSTANT}{UNIFORM}"));
    assert!(
        matches!(&e, TruthError::Invalid { field, .. } if field == "frames"),
        "{m}"
    );

    for nu in ["0.5", "-0.1"] {
        let (e, m) = refused(&format!("poisson_ratio = {nu}\n{CONSTANT}{UNIFORM}"));
        assert!(
            matches!(&e, TruthError::Invalid { field, .. } if field == "poisson_ratio"),
            "{m}"
        );
        assert!(m.contains("0 ≤ ν < 0.5"), "{m}");
    }

    let missing = Truth::load(Path::new("/nonexistent/truth.toml"), RANGE).unwrap_err();
    assert!(matches!(missing, TruthError::Read { .. }), "{missing}");
}

#[test]
fn boxes_first_box_wins_and_rotation_is_omega_cross_r() {
    let t = parse(
        r#"
[youngs]
kind = "boxes"
default = 5.0
boxes = [
  { min = [0, 0, 0], max = [1, 1, 1], log10 = 3.5 },
  { min = [0.5, 0, 0], max = [2, 1, 1], log10 = 4.5 },
]
[velocity]
kind = "rotation"
point = [1, 2, 3]
axis = [0, 0, 3]
angular_speed = 2.0
linear = [0.1, 0.0, -0.2]
"#,
    )
    .unwrap();
    assert_eq!(
        t.log10_youngs_at([0.75, 0.5, 0.5]),
        3.5,
        "overlap: first box"
    );
    assert_eq!(t.log10_youngs_at([1.5, 0.5, 0.5]), 4.5);
    assert_eq!(t.log10_youngs_at([1.0, 1.0, 1.0]), 3.5, "faces are inside");
    assert_eq!(t.log10_youngs_at([3.0, 0.5, 0.5]), 5.0, "outside: default");
    // ω = (0, 0, 2), r = x − p = (1, 0, 5): ω × r = (0·5 − 2·0, 2·1 − 0·5, 0) = (0, 2, 0).
    let v = t.velocity_at([2.0, 2.0, 8.0]);
    let expected = [0.1, 2.0, -0.2];
    assert!((0..3).all(|a| (v[a] - expected[a]).abs() < 1e-12), "{v:?}");
    // On the axis only the linear part remains.
    assert_eq!(t.velocity_at([1.0, 2.0, -4.0]), [0.1, 0.0, -0.2]);
}

fn random(seed: u64, mean: f64, amplitude: f64, range: [f64; 2]) -> Truth {
    let text = format!(
        "[youngs]\nkind = \"random\"\nseed = {seed}\nmean = {mean}\namplitude = {amplitude}\nlength_scale = 0.25\n{UNIFORM}"
    );
    Truth::parse(&text, Path::new("truth.toml"), range).unwrap()
}

fn points(n: usize, seed: u64, extent: f64) -> Vec<[f64; 3]> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| std::array::from_fn(|_| extent * (2.0 * rng.next_f64() - 1.0)))
        .collect()
}

#[test]
fn the_random_field_is_deterministic_smooth_and_inside_the_range() {
    let wide = [-10.0, 20.0];
    let (a, b, c) = (
        random(7, 5.0, 0.5, wide),
        random(7, 5.0, 0.5, wide),
        random(8, 5.0, 0.5, wide),
    );
    let ps = points(400, 1, 20.0);
    let va: Vec<f64> = ps.iter().map(|&p| a.log10_youngs_at(p)).collect();
    let vb: Vec<f64> = ps.iter().map(|&p| b.log10_youngs_at(p)).collect();
    let vc: Vec<f64> = ps.iter().map(|&p| c.log10_youngs_at(p)).collect();
    assert_eq!(va, vb, "the same seed gives the same field");
    assert!(
        va.iter().zip(&vc).any(|(x, y)| (x - y).abs() > 0.1),
        "another seed, another field"
    );

    // Spread: points far apart (extent 20 ≫ ℓ = 0.25) sample the field's
    // distribution, whose mean is `mean` and standard deviation `amplitude`.
    let n = va.len() as f64;
    let m = va.iter().sum::<f64>() / n;
    let sd = (va.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt();
    assert!((m - 5.0).abs() < 0.15, "mean {m}");
    assert!(
        (0.3..0.7).contains(&sd),
        "standard deviation {sd} (amplitude 0.5)"
    );

    // Smooth: a step of ℓ/1000 changes it by a small fraction of its spread.
    let h = 0.25e-3;
    let worst = ps
        .iter()
        .flat_map(|&p| (0..3).map(move |axis| (p, axis)))
        .map(|(p, axis)| {
            let mut q = p;
            q[axis] += h;
            (a.log10_youngs_at(q) - a.log10_youngs_at(p)).abs()
        })
        .fold(0.0, f64::max);
    assert!(
        worst < 0.02 * 0.5,
        "a step of ℓ/1000 changed log10 E by {worst}"
    );

    // Clamped into the scene's range, and the clamp is reached.
    let tight = random(7, 4.5, 2.0, RANGE);
    let vt: Vec<f64> = ps.iter().map(|&p| tight.log10_youngs_at(p)).collect();
    assert!(vt.iter().all(|v| (RANGE[0]..=RANGE[1]).contains(v)));
    assert!(vt.contains(&RANGE[0]) && vt.contains(&RANGE[1]));
}

#[test]
fn per_driver_values_are_at_the_world_rest_positions_with_anchored_at_rest() {
    let normalised = points(60, 4, 0.3)
        .into_iter()
        .map(|p| p.map(|c| (c + 0.5) as f32))
        .collect::<Vec<_>>();
    let anchored: Vec<bool> = normalised.iter().map(|p| p[2] < 0.35).collect();
    let sim_box = SimBox {
        min: [-1.0, 0.0, 2.0],
        side: 2.0,
    };
    let source = DriverSource {
        sim_box,
        grid_res: 32,
        splat_indices: (0..normalised.len() as u32).collect(),
        points: normalised,
        anchored,
    };
    let drivers = DriverSet::build(&source, 12, 4, 0).unwrap();
    assert!(drivers.anchored.iter().any(|a| *a) && drivers.anchored.iter().any(|a| !*a));
    // E: world x < 0 (normalised < 0.5) is soft; velocity: rotation about the world z axis.
    let t = parse(
        r#"
[youngs]
kind = "boxes"
default = 5.0
boxes = [{ min = [-5, -5, -5], max = [0, 5, 5], log10 = 3.5 }]
[velocity]
kind = "rotation"
point = [0, 1, 0]
axis = [0, 0, 1]
angular_speed = 1.0
"#,
    )
    .unwrap();
    let values = t.per_driver(&drivers);
    assert_eq!(values.log10_youngs.len(), drivers.len());
    assert_eq!(values.velocity.len(), 3 * drivers.len());
    for (d, rest) in drivers.rest.iter().enumerate() {
        let world: [f64; 3] =
            std::array::from_fn(|a| sim_box.min[a] + f64::from(rest[a]) * sim_box.side);
        let soft = rest[0] < 0.5;
        assert_eq!(
            values.log10_youngs[d],
            if soft { 3.5 } else { 5.0 },
            "driver {d}"
        );
        let v = &values.velocity[3 * d..3 * d + 3];
        if drivers.anchored[d] {
            assert_eq!(v, [0.0; 3], "anchored driver {d}");
        } else {
            // ω × (x − p) about z through (0, 1): (−(y − 1), x, 0).
            let expected = [-(world[1] - 1.0), world[0], 0.0];
            assert!(
                (0..3).all(|a| (v[a] - expected[a]).abs() < 1e-12),
                "driver {d}: {v:?}"
            );
        }
    }
}

#[test]
fn the_documented_example_parses() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/truth.md")).unwrap();
    let block = doc
        .split("```toml")
        .nth(1)
        .and_then(|b| b.split_once('\n'))
        .and_then(|(_, b)| b.split("```").next())
        .expect("a toml example in docs/truth.md");
    let t = Truth::parse(block, Path::new("docs/truth.md"), [3.0, 6.5]).unwrap();
    assert_eq!(t.frames, 12);
    assert!(matches!(t.velocity, VelocityTruth::Rotation { .. }));
}

/// The truth's initial affine velocity (`TruthValues::velocity_gradient`,
/// what `synth` and the fit's truth check start APIC's `C` at): a
/// rotation's is `[ω]×`, the finite difference of its velocity (exact: the
/// field is affine), the same at every free driver and 0 on anchored ones;
/// a uniform velocity and boxes have none.
#[test]
fn the_truths_velocity_gradient_is_its_rotations_and_zero_elsewhere() {
    let t = parse(&format!(
        "{CONSTANT}[velocity]\nkind = \"rotation\"\npoint = [0.1, 1, 0]\naxis = [0, 0.6, 0.8]\n\
         angular_speed = 2.5\nlinear = [0.2, 0, -0.4]\n"
    ))
    .unwrap();
    let p = [0.3, -0.2, 0.7];
    let g = t.velocity_gradient_at(p);
    for b in 0..3 {
        let mut q = p;
        q[b] += 0.5;
        let (v0, v1) = (t.velocity_at(p), t.velocity_at(q));
        for a in 0..3 {
            let fd = (v1[a] - v0[a]) / 0.5;
            assert!(
                (g[a][b] - fd).abs() < 1e-12,
                "∂v{a}/∂x{b}: {} vs {fd}",
                g[a][b]
            );
        }
    }
    let uniform = parse(&format!("{CONSTANT}{UNIFORM}")).unwrap();
    assert_eq!(uniform.velocity_gradient_at(p), [[0.0; 3]; 3]);

    let normalised: Vec<[f32; 3]> = points(40, 4, 0.3)
        .into_iter()
        .map(|p| p.map(|c| (c + 0.5) as f32))
        .collect();
    let anchored: Vec<bool> = normalised.iter().map(|p| p[2] < 0.35).collect();
    let source = DriverSource {
        sim_box: SimBox {
            min: [-1.0, 0.0, 2.0],
            side: 2.0,
        },
        grid_res: 32,
        splat_indices: (0..normalised.len() as u32).collect(),
        points: normalised,
        anchored,
    };
    let drivers = DriverSet::build(&source, 12, 4, 0).unwrap();
    let values = t.per_driver(&drivers);
    assert_eq!(values.velocity_gradient.len(), 9 * drivers.len());
    let spin: Vec<f64> = g.iter().flatten().copied().collect();
    for d in 0..drivers.len() {
        let got = &values.velocity_gradient[9 * d..9 * d + 9];
        match drivers.anchored[d] {
            true => assert_eq!(got, [0.0; 9], "anchored driver {d}"),
            false => assert_eq!(got, spin.as_slice(), "driver {d}"),
        }
    }
}

/// The fit's rigid field: its initial affine velocity
/// (`ParamMap::velocity_gradient`) is the gradient of its velocity map
/// (`C (X_d − X_e) = v_d − v_e` between any two free drivers, world units),
/// none on anchored drivers; the constant fields have none.
#[test]
fn the_rigid_fields_initial_affine_velocity_is_its_velocity_maps_gradient() {
    use physfit::fit::{ParamMap, VelocityField};
    let rest: Vec<[f32; 3]> = points(30, 4, 0.3)
        .into_iter()
        .map(|p| p.map(|c| (c + 0.5) as f32))
        .collect();
    let anchored: Vec<bool> = (0..rest.len()).map(|d| d % 7 == 0).collect();
    let side = 1.7;
    let x = [0.2, -0.1, 0.05, 0.9, -2.1, 1.3];
    let field = VelocityField::Rigid;
    let v = ParamMap::velocity(&field, &rest, &anchored, side)
        .unwrap()
        .apply(&x)
        .unwrap();
    let c = ParamMap::velocity_gradient(&field, &anchored)
        .apply(&x)
        .unwrap();
    for d in 0..rest.len() {
        if anchored[d] {
            assert_eq!(&c[9 * d..9 * d + 9], [0.0; 9], "anchored driver {d}");
            continue;
        }
        for e in (0..rest.len()).filter(|&e| !anchored[e]) {
            for a in 0..3 {
                let lever: f64 = (0..3)
                    .map(|b| c[9 * d + 3 * a + b] * f64::from(rest[d][b] - rest[e][b]) * side)
                    .sum();
                let dv = v[3 * d + a] - v[3 * e + a];
                assert!(
                    (lever - dv).abs() < 1e-6,
                    "drivers {d}, {e}: {lever} vs {dv}"
                );
            }
        }
    }
    for field in [VelocityField::Global, VelocityField::PerDriver] {
        assert!(ParamMap::velocity_gradient(&field, &anchored)
            .entries
            .is_empty());
    }
}
