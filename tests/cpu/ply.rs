//! 3DGS .ply reading and writing: round trips, layouts, the odd-value policy
//! and one error variant per kind of broken file.

use std::path::{Path, PathBuf};

use physfit::scene::ply::{load_gaussians, ExtraProperty, PlyData, PlyError};
use physfit::scene::Gaussians;

fn fox() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/fox.ply")
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A binary little-endian header for `n` vertices with `props` (type, name).
fn binary_header(n: usize, props: &[(&str, &str)]) -> Vec<u8> {
    let mut h = format!("ply\nformat binary_little_endian 1.0\nelement vertex {n}\n");
    for (ty, name) in props {
        h.push_str(&format!("property {ty} {name}\n"));
    }
    h.push_str("end_header\n");
    h.into_bytes()
}

const STANDARD: [&str; 14] = [
    "x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1", "scale_2",
    "rot_0", "rot_1", "rot_2", "rot_3",
];

/// A small standard SH-0 file: splat `i` has x = i, opacity logit 0.5, a
/// unit quaternion, log scales −3.
fn small_binary(n: usize) -> Vec<u8> {
    let props: Vec<(&str, &str)> = STANDARD.iter().map(|n| ("float", *n)).collect();
    let mut bytes = binary_header(n, &props);
    for i in 0..n {
        let row = [
            i as f32, 1.0, 2.0, 0.1, 0.2, 0.3, 0.5, -3.0, -3.0, -3.0, 1.0, 0.0, 0.0, 0.0,
        ];
        for v in row {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    bytes
}

#[test]
fn fox_round_trips_bit_identically() {
    let path = fox();
    let t = std::time::Instant::now();
    let loaded = load_gaussians(&path).unwrap();
    eprintln!("fox.ply loaded in {:?}", t.elapsed());
    let g = &loaded.gaussians;
    assert_eq!(g.len(), 50_000);
    assert_eq!(g.sh_degree, 0);
    // The real file has 37 splats with +∞ or −∞ opacity logits, nothing else odd.
    let report = &loaded.report;
    assert_eq!(report.clamped_infinite_opacity, 37, "{report}");
    assert_eq!(report.dropped(), 0, "{report}");

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fox_copy.ply");
    loaded.ply.write(&out, &[]).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&path).unwrap());

    // With an extra per-splat property: original values unchanged, extra appended.
    let stiffness: Vec<f32> = (0..g.len()).map(|i| 1e5 + i as f32).collect();
    let out2 = dir.path().join("fox_e.ply");
    loaded
        .write_with_extras(&out2, &[("youngs_modulus", &stiffness)], 0.0)
        .unwrap();
    let back = load_gaussians(&out2).unwrap();
    assert_eq!(back.gaussians, *g);
    let v0 = loaded.ply.vertex().unwrap();
    let v1 = back.ply.vertex().unwrap();
    for p in &v0.properties {
        let a = v0.column(&p.name).unwrap();
        let b = v1.column(&p.name).unwrap();
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{}",
            p.name
        );
    }
    assert_eq!(v1.properties.last().unwrap().name, "youngs_modulus");
    let e = v1.column_f32("youngs_modulus").unwrap();
    assert_eq!(e, stiffness);
}

#[test]
fn ascii_input_any_order_and_types() {
    let dir = tempfile::tempdir().unwrap();
    let text = "ply\nformat ascii 1.0\ncomment made by hand\nelement vertex 2\n\
        property double opacity\nproperty float32 rot_0\nproperty float rot_1\nproperty float rot_2\n\
        property float rot_3\nproperty int16 z\nproperty uchar y\nproperty char x\n\
        property float scale_0\nproperty float scale_1\nproperty float scale_2\n\
        property float f_dc_2\nproperty float f_dc_1\nproperty float f_dc_0\n\
        property ushort confidence\nend_header\n\
        0.25 2 0 0 0 -7 200 -5 -1 -2 -3 0.3 0.2 0.1 65535\n\
        -1e30 0 0 0 1 3 4 5 -1.5 -1.5 -1.5 0 0 0 7\n";
    let p = write(dir.path(), "a.ply", text.as_bytes());
    let l = load_gaussians(&p).unwrap();
    let g = &l.gaussians;
    assert_eq!(g.means, vec![[-5.0, 200.0, -7.0], [5.0, 4.0, 3.0]]);
    assert_eq!(
        g.rotations,
        vec![[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    );
    assert_eq!(g.opacity_logits, vec![0.25, -1e30f64 as f32]);
    assert_eq!(g.log_scales[0], [-1.0, -2.0, -3.0]);
    assert_eq!(g.sh, vec![[0.1, 0.2, 0.3], [0.0, 0.0, 0.0]]);
    // The unknown property is kept and written back (as binary).
    let out = dir.path().join("b.ply");
    l.ply.write(&out, &[]).unwrap();
    let back = PlyData::read(&out).unwrap();
    assert_eq!(
        back.vertex().unwrap().column("confidence").unwrap(),
        vec![65535.0, 7.0]
    );
    assert_eq!(
        back.vertex().unwrap().properties,
        l.ply.vertex().unwrap().properties
    );
    assert_eq!(back.elements, l.ply.elements);
}

#[test]
fn extra_properties_and_elements_are_skipped_and_preserved() {
    let dir = tempfile::tempdir().unwrap();
    let mut props: Vec<(&str, &str)> = vec![("float", "nx"), ("uchar", "label")];
    props.extend(STANDARD.iter().map(|n| ("float", *n)));
    props.push(("double", "weight"));
    let mut bytes = binary_header(2, &props);
    // Insert a second element after the vertex element in the header.
    let header = String::from_utf8(bytes.clone()).unwrap().replace(
        "end_header\n",
        "element face 1\nproperty list uchar int vertex_indices\nend_header\n",
    );
    bytes = header.into_bytes();
    for i in 0..2 {
        bytes.extend_from_slice(&0.5f32.to_le_bytes());
        bytes.push(7 + i as u8);
        for v in [
            i as f32, 0., 0., 0.1, 0.1, 0.1, 1.0, -2., -2., -2., 2.0, 0., 0., 0.,
        ] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&(0.25f64 * i as f64).to_le_bytes());
    }
    bytes.push(2);
    bytes.extend_from_slice(&0i32.to_le_bytes());
    bytes.extend_from_slice(&1i32.to_le_bytes());
    let p = write(dir.path(), "extra.ply", &bytes);
    let l = load_gaussians(&p).unwrap();
    assert_eq!(l.gaussians.len(), 2);
    assert_eq!(l.gaussians.means[1], [1.0, 0.0, 0.0]);
    // A quaternion of norm 2 comes back normalised.
    assert_eq!(l.gaussians.rotations[0], [1.0, 0.0, 0.0, 0.0]);
    assert_eq!(l.report.normalised_rotation, 2);
    let out = dir.path().join("out.ply");
    l.ply.write(&out, &[]).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    let extra = ExtraProperty {
        name: "youngs_modulus".into(),
        values: vec![1.0, 2.0],
    };
    l.ply.write(&out, std::slice::from_ref(&extra)).unwrap();
    let back = PlyData::read(&out).unwrap();
    assert_eq!(
        back.vertex().unwrap().column("weight").unwrap(),
        vec![0.0, 0.25]
    );
    assert_eq!(
        back.vertex().unwrap().column("youngs_modulus").unwrap(),
        vec![1.0, 2.0]
    );
    assert_eq!(
        back.element("face").unwrap(),
        l.ply.element("face").unwrap()
    );
    // A clashing or wrongly sized extra is refused.
    let clash = ExtraProperty {
        name: "weight".into(),
        values: vec![1.0, 2.0],
    };
    assert!(matches!(
        l.ply.write(&out, &[clash]),
        Err(PlyError::BadExtra { .. })
    ));
    let short = ExtraProperty {
        name: "e".into(),
        values: vec![1.0],
    };
    assert!(matches!(
        l.ply.write(&out, &[short]),
        Err(PlyError::BadExtra { .. })
    ));
}

fn sh3_gaussians() -> Gaussians {
    let n = 3;
    let mut g = Gaussians {
        sh_degree: 3,
        ..Default::default()
    };
    for i in 0..n {
        g.means.push([i as f32, -(i as f32), 0.5]);
        g.rotations.push([0.5, 0.5, 0.5, 0.5]);
        g.log_scales.push([-1.0, -2.0, -3.0]);
        g.opacity_logits.push(i as f32 - 1.0);
        for k in 0..16 {
            let v = (i * 100 + k) as f32;
            g.sh.push([v, v + 0.25, v + 0.5]);
        }
    }
    g
}

#[test]
fn sh_degree_3_round_trips_with_channel_major_rest() {
    let dir = tempfile::tempdir().unwrap();
    let g = sh3_gaussians();
    let p = dir.path().join("sh3.ply");
    PlyData::from_gaussians(&g, &p).write(&p, &[]).unwrap();
    let l = load_gaussians(&p).unwrap();
    assert_eq!(l.gaussians, g);
    // Channel-major: f_rest[c·15 + j] is coefficient j+1 of channel c.
    let v = l.ply.vertex().unwrap();
    assert_eq!(v.column("f_rest_0").unwrap()[1], 101.0);
    assert_eq!(v.column("f_rest_15").unwrap()[1], 101.25);
    assert_eq!(v.column("f_rest_44").unwrap()[2], 215.5);
}

#[test]
fn odd_values_follow_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let props: Vec<(&str, &str)> = STANDARD.iter().map(|n| ("float", *n)).collect();
    let mut bytes = binary_header(6, &props);
    let inf = f32::INFINITY;
    let rows: [[f32; 14]; 6] = [
        [f32::NAN, 0., 0., 0., 0., 0., 0., 0., 0., 0., 1., 0., 0., 0.],
        [0., 0., 0., 0., 0., 0., f32::NAN, 0., 0., 0., 1., 0., 0., 0.],
        [0., 0., 0., 0., 0., 0., 0., inf, 0., 0., 1., 0., 0., 0.],
        [1., 0., 0., 0., 0., 0., inf, -inf, 0., 0., 0., 0., 0., 0.],
        [
            2.,
            0.,
            0.,
            f32::NAN,
            0.,
            0.,
            -inf,
            0.,
            0.,
            0.,
            f32::NAN,
            0.,
            0.,
            0.,
        ],
        [3., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 3., 4.],
    ];
    for r in rows {
        for v in r {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    let p = write(dir.path(), "odd.ply", &bytes);
    let l = load_gaussians(&p).unwrap();
    let r = &l.report;
    assert_eq!(
        (
            r.dropped_nonfinite_position,
            r.dropped_nan_opacity,
            r.dropped_bad_scale
        ),
        (1, 1, 1)
    );
    assert_eq!((r.clamped_infinite_opacity, r.clamped_zero_scale), (2, 1));
    assert_eq!((r.reset_degenerate_rotation, r.zeroed_nonfinite_sh), (2, 1));
    assert_eq!(l.ply_rows, vec![3, 4, 5]);
    let g = &l.gaussians;
    assert_eq!(g.opacity_logits, vec![20.0, -20.0, 0.0]);
    assert_eq!(g.log_scales[0], [-30.0, 0.0, 0.0]);
    assert_eq!(
        g.rotations,
        vec![[1., 0., 0., 0.], [1., 0., 0., 0.], [0., 0., 0.6, 0.8]]
    );
    assert_eq!(g.sh[1], [0.0, 0.0, 0.0]);
    let all_finite = g
        .means
        .iter()
        .flatten()
        .chain(g.log_scales.iter().flatten())
        .chain(g.rotations.iter().flatten())
        .chain(&g.opacity_logits)
        .all(|v| v.is_finite());
    assert!(all_finite);
    assert_eq!(
        l.per_row(&[7.0, 8.0, 9.0], -1.0),
        vec![-1.0, -1.0, -1.0, 7.0, 8.0, 9.0]
    );
}

#[test]
fn truncated_file_is_an_error_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = small_binary(10);
    let p = write(dir.path(), "t.ply", &bytes[..bytes.len() - 30]);
    match load_gaussians(&p) {
        Err(
            e @ PlyError::Truncated {
                row: 9, count: 10, ..
            },
        ) => {
            let msg = e.to_string();
            assert!(msg.contains("t.ply") && msg.contains("row 9"), "{msg}");
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
    // ASCII data that ends early.
    let p = write(dir.path(), "ta.ply", b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n4 5\n");
    assert!(matches!(
        PlyData::read(&p),
        Err(PlyError::BadAsciiValue { row: 1, ref property, .. }) if property == "z"
    ));
}

#[test]
fn list_property_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = "ply\nformat ascii 1.0\nelement vertex 1\nproperty list uchar float x\nproperty float y\nproperty float z\nend_header\n2 0.5 0.5 1 2\n";
    let p = write(dir.path(), "l.ply", text.as_bytes());
    match load_gaussians(&p) {
        Err(e @ PlyError::ListProperty { .. }) => assert!(e.to_string().contains("`x`")),
        other => panic!("expected ListProperty, got {other:?}"),
    }
    let text = "ply\nformat ascii 1.0\nelement vertex 1\nproperty quaternion x\nend_header\n";
    let p = write(dir.path(), "u.ply", text.as_bytes());
    assert!(matches!(
        load_gaussians(&p),
        Err(PlyError::UnknownType { line: 4, .. })
    ));
}

#[test]
fn missing_xyz_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let props: Vec<(&str, &str)> = STANDARD
        .iter()
        .filter(|n| **n != "y")
        .map(|n| ("float", *n))
        .collect();
    let bytes = binary_header(0, &props);
    let p = write(dir.path(), "m.ply", &bytes);
    match load_gaussians(&p) {
        Err(PlyError::MissingProperty { property, .. }) => assert_eq!(property, "y"),
        other => panic!("expected MissingProperty, got {other:?}"),
    }
}

#[test]
fn unknown_formats_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let big = "ply\nformat binary_big_endian 1.0\nelement vertex 0\nproperty float x\nend_header\n";
    let p = write(dir.path(), "be.ply", big.as_bytes());
    match load_gaussians(&p) {
        Err(e @ PlyError::UnsupportedFormat { .. }) => {
            assert!(e.to_string().contains("binary_big_endian"))
        }
        other => panic!("expected UnsupportedFormat, got {other:?}"),
    }
    let p = write(dir.path(), "g.ply", b"\x89PNG\r\n\x1a\n garbage");
    assert!(matches!(load_gaussians(&p), Err(PlyError::NotPly { .. })));
    let p = write(
        dir.path(),
        "h.ply",
        b"ply\nformat ascii 1.0\nelement vertex 1\n",
    );
    assert!(matches!(
        load_gaussians(&p),
        Err(PlyError::MalformedHeader { .. })
    ));
    let p = dir.path().join("absent.ply");
    assert!(matches!(load_gaussians(&p), Err(PlyError::Io { .. })));
}

#[test]
fn wrong_sh_count_is_an_error_naming_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut props: Vec<(&str, &str)> = STANDARD.iter().map(|n| ("float", *n)).collect();
    let names: Vec<String> = (0..12).map(|i| format!("f_rest_{i}")).collect();
    props.extend(names.iter().map(|n| ("float", n.as_str())));
    let p = write(dir.path(), "sh.ply", &binary_header(0, &props));
    match load_gaussians(&p) {
        Err(e @ PlyError::ShCount { count: 12, .. }) => assert!(e.to_string().contains("12")),
        other => panic!("expected ShCount, got {other:?}"),
    }
}

/// Random truncations and byte flips of a small file give `Err` or a
/// sanitised result, never a panic or non-finite splat values.
#[test]
fn fuzzed_files_never_panic() {
    let base = small_binary(4);
    let ascii = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nproperty list uchar int idx\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n1 2 3 2 1 1\n3 0 1 2\n".to_vec();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let path = Path::new("fuzz.ply");
    for case in 0..4000 {
        let src = if case % 2 == 0 { &base } else { &ascii };
        let mut bytes = src.clone();
        match rand() % 3 {
            0 => bytes.truncate((rand() % bytes.len() as u64) as usize),
            1 => {
                for _ in 0..1 + rand() % 4 {
                    let i = (rand() % bytes.len() as u64) as usize;
                    bytes[i] ^= 1 << (rand() % 8);
                }
            }
            _ => {
                let i = (rand() % bytes.len() as u64) as usize;
                bytes[i] = (rand() % 256) as u8;
                bytes.truncate(bytes.len() - (rand() % 8) as usize);
            }
        }
        if let Ok(ply) = PlyData::parse(&bytes, path) {
            if let Ok(l) = physfit::scene::ply::gaussians_from_ply(ply) {
                let g = l.gaussians;
                assert!(g.means.iter().flatten().all(|v| v.is_finite()));
                assert!(g.rotations.iter().flatten().all(|v| v.is_finite()));
                assert!(g.opacity_logits.iter().all(|v| v.is_finite()));
            }
        }
    }
}

/// An unknown *list* property on `vertex` (rows of varying length) is
/// skipped for the splats, preserved on write-back, and extras still append.
#[test]
fn unknown_vertex_list_property_is_tolerated_and_preserved() {
    let dir = tempfile::tempdir().unwrap();
    let mut header = String::from("ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty list uchar int neighbours\n");
    for name in STANDARD {
        header.push_str(&format!("property float {name}\n"));
    }
    header.push_str("end_header\n");
    let mut bytes = header.into_bytes();
    for i in 0..2u8 {
        // Row 0 has a 3-item list, row 1 an empty one.
        let items: Vec<i32> = if i == 0 { vec![4, 5, 6] } else { vec![] };
        bytes.push(items.len() as u8);
        for item in &items {
            bytes.extend_from_slice(&item.to_le_bytes());
        }
        for v in [
            i as f32 + 0.5,
            1.,
            2.,
            0.1,
            0.1,
            0.1,
            1.0,
            -2.,
            -2.,
            -2.,
            1.0,
            0.,
            0.,
            0.,
        ] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    let p = write(dir.path(), "listy.ply", &bytes);
    let l = load_gaussians(&p).unwrap();
    assert_eq!(l.gaussians.means, vec![[0.5, 1.0, 2.0], [1.5, 1.0, 2.0]]);
    let out = dir.path().join("out.ply");
    l.ply.write(&out, &[]).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    let extra = ExtraProperty {
        name: "youngs_modulus".into(),
        values: vec![3.0, 4.0],
    };
    l.ply.write(&out, std::slice::from_ref(&extra)).unwrap();
    let back = load_gaussians(&out).unwrap();
    assert_eq!(back.gaussians.means, l.gaussians.means);
    assert_eq!(
        back.ply.vertex().unwrap().column("youngs_modulus").unwrap(),
        vec![3.0, 4.0]
    );
}

/// A header of 100k properties (the last a duplicate) is refused in well
/// under a second: the duplicate check is a set, not a scan of every
/// property before it (which took tens of seconds).
#[test]
fn a_header_of_many_properties_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..100_000).map(|i| format!("p{i}")).collect();
    let mut props: Vec<(&str, &str)> = names.iter().map(|n| ("float", n.as_str())).collect();
    props.push(("float", "p0"));
    let p = write(dir.path(), "many.ply", &binary_header(0, &props));
    // No time limit here (a loaded machine is no measure): a duplicate
    // check that compared every pair would take 5e9 comparisons and make
    // this test minutes long where it takes milliseconds.
    let refused = PlyData::read(&p).unwrap_err();
    assert!(
        matches!(refused, PlyError::DuplicateProperty { .. }),
        "{refused}"
    );
}
