//! Every number a user writes in a scene, replaced in turn by values a typo
//! or a broken script produces (NaN, ±∞, negative, zero, huge): loading
//! never panics, a non-finite number is always refused, and every refusal
//! names the scene file and the field. Readers of the other input files
//! (frames, masks, checkpoints, drivers) get the same treatment from random
//! bytes: an error, never a panic (tests/cpu/reader_props.rs). A damaged
//! checkpoint or drivers file given to the command line is refused naming
//! the file and the fix, and leaves every output as it was.

use std::panic::{catch_unwind, AssertUnwindSafe};

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;
use crate::common::cli::{physfit, refused};
use physfit::drive::DriverSet;
use physfit::fit::checkpoint::{Checkpoint, FitFingerprint, CHECKPOINT_VERSION};
use physfit::fit::StageChoice;
use physfit::output::FittedDrivers;
use physfit::scene::ply::PlyData;
use physfit::scene::Scene;
use toml_edit::{DocumentMut, Item, Value};

/// A scene that sets nearly every numeric field, around a 4³ lattice of
/// splats spanning [0, 1.5]³ and two 16×12 frames.
pub(crate) const FULL: &str = r#"
[gaussians]
path = "splats.ply"

[[views]]
name = "front"
frames = "frames"
[views.camera]
width = 16
height = 12
fx = 20.0
fy = 21.0
cx = 8.0
cy = 6.0
position = [0.75, -4.0, 0.75]
look_at = [0.75, 0.75, 0.75]
up = [0.0, 0.0, 1.0]
near = 0.05

[reference]
fps = 30.0
background = [1.0, 1.0, 1.0]

[simulation]
box = { min = [-1.0, -1.0, -1.0], max = [2.5, 2.5, 2.5] }
grid_res = 16
substeps = 40
gravity = [0.0, 0.0, -9.8]
damping = 0.5

[[simulation.colliders]]
kind = "plane"
point = [0.0, 0.0, -0.5]
normal = [0.0, 0.0, 1.0]
contact = "friction"
friction = 0.4

[[simulation.colliders]]
kind = "box"
min = [1.8, -1.0, -1.0]
max = [2.4, 2.5, 2.5]
contact = "slip"

[material]
density = 1000.0
poisson_ratio = 0.3
youngs_modulus = 1.0e4
log10_youngs_range = [3.0, 5.0]

[regions]
anchored = [{ min = [-1.0, -1.0, -1.0], max = [2.5, 2.5, 0.1] }]

[drivers]
count = 48
k = 8
seed = 3

[fit]
w_l1 = 0.2
w_ssim = 0.8
tv_weight = 0.01
rounds = 2
checkpoint_every = 5

[fit.scan]
points = 3
velocity_evaluations = 2
poisson_points = 3

[fit.velocity]
iterations = 4
learning_rate = 0.1
warmup = 1
frames = 2
tolerance = 0.01
velocity_tv_weight = 0.001

[fit.stiffness]
iterations = 4
learning_rate = 0.1
warmup = 1
tolerance = 0.01
"#;

/// Dotted paths (`a.b[0].c`) of every number in `doc`, arrays included.
fn numbers(doc: &DocumentMut) -> Vec<(Vec<String>, bool)> {
    fn walk(item: &Item, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, bool)>) {
        match item {
            Item::Value(v) => walk_value(v, path, out),
            Item::Table(t) => {
                for (k, i) in t.iter() {
                    path.push(k.to_string());
                    walk(i, path, out);
                    path.pop();
                }
            }
            Item::ArrayOfTables(a) => {
                for (n, t) in a.iter().enumerate() {
                    path.push(format!("[{n}]"));
                    for (k, i) in t.iter() {
                        path.push(k.to_string());
                        walk(i, path, out);
                        path.pop();
                    }
                    path.pop();
                }
            }
            Item::None => {}
        }
    }
    fn walk_value(v: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, bool)>) {
        match v {
            Value::Integer(_) => out.push((path.clone(), true)),
            Value::Float(_) => out.push((path.clone(), false)),
            Value::Array(a) => {
                for (n, x) in a.iter().enumerate() {
                    path.push(format!("[{n}]"));
                    walk_value(x, path, out);
                    path.pop();
                }
            }
            Value::InlineTable(t) => {
                for (k, x) in t.iter() {
                    path.push(k.to_string());
                    walk_value(x, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc.as_item(), &mut Vec::new(), &mut out);
    out
}

/// The value at `path` in `doc`, replaced by `new`.
fn replace(doc: &mut DocumentMut, path: &[String], new: Value) {
    fn index(p: &str) -> Option<usize> {
        p.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
    }
    fn in_value(v: &mut Value, path: &[String], new: Value) {
        if path.is_empty() {
            let decor = v.decor().clone();
            *v = new;
            *v.decor_mut() = decor;
            return;
        }
        match (v, index(&path[0])) {
            (Value::Array(a), Some(n)) => in_value(a.get_mut(n).unwrap(), &path[1..], new),
            (Value::InlineTable(t), None) => {
                in_value(t.get_mut(&path[0]).unwrap(), &path[1..], new)
            }
            _ => panic!("bad path {path:?}"),
        }
    }
    fn in_item(i: &mut Item, path: &[String], new: Value) {
        if let Item::Value(v) = i {
            return in_value(v, path, new);
        }
        match (i, index(&path[0])) {
            (Item::ArrayOfTables(a), Some(n)) => {
                let t = a.get_mut(n).unwrap();
                in_item(t.get_mut(&path[1]).unwrap(), &path[2..], new)
            }
            (Item::Table(t), None) => in_item(t.get_mut(&path[0]).unwrap(), &path[1..], new),
            (Item::Value(v), _) => in_value(v, path, new),
            _ => panic!("bad path {path:?}"),
        }
    }
    let (first, rest) = path.split_first().unwrap();
    let item = doc.get_mut(first).unwrap();
    if rest.is_empty() {
        if let Item::Value(v) = item {
            in_value(v, &[], new);
        }
    } else {
        in_item(item, rest, new);
    }
}

/// The field as errors spell it: `views[0].camera.fx`, `simulation.box`.
fn spelled(path: &[String]) -> String {
    let mut s = String::new();
    for p in path {
        if p.starts_with('[') || s.is_empty() {
            s.push_str(p);
        } else {
            s.push('.');
            s.push_str(p);
        }
    }
    s
}

/// A fresh directory holding [`FULL`] as `scene.toml`, its `splats.ply`
/// (a 4³ lattice) and three 16×12 frames in `frames/`.
pub(crate) fn full_scene_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ply = d.join("splats.ply");
    PlyData::from_gaussians(&common::splat_lattice(4), &ply)
        .write(&ply, &[])
        .unwrap();
    std::fs::create_dir(d.join("frames")).unwrap();
    for k in 0..3 {
        let px = vec![[0.5f32, 0.25, 0.0, 1.0]; 16 * 12];
        physfit::scene::frames::write_png(&d.join(format!("frames/f{k}.png")), 16, 12, &px)
            .unwrap();
    }
    std::fs::write(d.join("scene.toml"), FULL).unwrap();
    dir
}

#[test]
fn every_number_of_a_scene_refuses_what_a_typo_gives_naming_the_field() {
    let dir = full_scene_dir();
    let scene = dir.path().join("scene.toml");
    Scene::load(&scene).expect("the full scene is valid");
    let doc: DocumentMut = FULL.parse().unwrap();
    let fields = numbers(&doc);
    assert!(fields.len() > 40, "{} numbers", fields.len());
    let mut refused = 0;
    let mut accepted = Vec::new();
    for (path, integer) in &fields {
        let values: Vec<(Value, bool)> = if *integer {
            vec![
                (Value::from(-1i64), true),
                (Value::from(0i64), true),
                (Value::from(i64::MAX), true),
            ]
        } else {
            vec![
                (Value::from(f64::NAN), false),
                (Value::from(f64::INFINITY), false),
                (Value::from(f64::NEG_INFINITY), false),
                (Value::from(-1.0), true),
                (Value::from(0.0), true),
                (Value::from(1e300), true),
            ]
        };
        for (value, finite) in values {
            let shown = value.to_string();
            let mut bad = doc.clone();
            replace(&mut bad, path, value);
            std::fs::write(&scene, bad.to_string()).unwrap();
            let field = spelled(path);
            let outcome = catch_unwind(AssertUnwindSafe(|| Scene::load(&scene)));
            match outcome {
                Err(_) => panic!("{field} = {shown}: loading panicked"),
                Ok(Ok(_)) => {
                    assert!(finite, "{field} = {shown} was accepted");
                    // Past f32's range on the GPU.
                    assert!(
                        !shown.contains("1e300") && !shown.contains("00000000000000000000"),
                        "{field} = {shown} was accepted"
                    );
                    accepted.push(format!("{field} = {}", shown.trim()));
                }
                Ok(Err(e)) => {
                    refused += 1;
                    let msg = e.to_string();
                    // The error names the file and the field, or (for a
                    // value that is legal alone) the field it conflicts with.
                    let leaf = path.iter().rev().find(|p| !p.starts_with('[')).unwrap();
                    assert!(msg.contains("scene.toml"), "{field} = {shown}: {msg}");
                    // The field itself, or the table or array it belongs to
                    // (`regions.anchored` for a box corner that anchors
                    // everything), at least two levels deep.
                    let named = (2..=path.len()).any(|n| {
                        let prefix = spelled(&path[..n]);
                        let bare: String = path[..n]
                            .iter()
                            .filter(|p| !p.starts_with('['))
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(".");
                        msg.contains(&prefix) || (bare.contains('.') && msg.contains(&bare))
                    });
                    assert!(
                        named || msg.contains(&format!("`{leaf}`")),
                        "{field} = {shown}: the error does not name the field: {msg}"
                    );
                }
            }
        }
    }
    println!(
        "{} numbers, {refused} refusals; accepted as legal: {}",
        fields.len(),
        accepted.join(", ").replace(&"0".repeat(20), "0…")
    );
}

/// Every file under `dir` (relative path → bytes).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// `physfit fit --resume` over a checkpoint cut short at several lengths or
/// of another format version: refused before any GPU work, naming the
/// checkpoint and what to do, with the output directory as it was.
#[test]
fn a_damaged_or_other_version_checkpoint_is_refused_by_resume() {
    let dir = full_scene_dir();
    let d = dir.path();
    let scene = Scene::load(&d.join("scene.toml")).unwrap();
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    // The earlier fit's outputs, which a refusal must leave alone.
    for (name, text) in [("fit.json", "{}"), ("loss.jsonl", "{\"loss\": 1}\n")] {
        std::fs::write(out.join(name), text).unwrap();
    }
    let path = out.join("checkpoint.json");
    let fingerprint = FitFingerprint::of(&scene, StageChoice::Both, None).unwrap();
    Checkpoint::new(
        fingerprint.clone(),
        crate::fit_checkpoint::state(),
        vec![2.0],
    )
    .save(&path)
    .unwrap();
    // Whole, it would be resumed.
    Checkpoint::load(&path, &fingerprint).unwrap();
    let valid = std::fs::read_to_string(&path).unwrap();
    let len = valid.len();
    let mut cases: Vec<(String, String, &str)> = [0, 1, 16, len / 3, len / 2, len - 1]
        .iter()
        .map(|&n| {
            (
                format!("cut at {n} of {len} bytes"),
                valid[..n].to_string(),
                "",
            )
        })
        .collect();
    // Another version: named as such, even when the rest of the file is
    // laid out differently (here: no `state`).
    let current = format!("\"version\":{CHECKPOINT_VERSION}");
    let (newer, older) = (CHECKPOINT_VERSION + 1, CHECKPOINT_VERSION - 1);
    let next = valid.replacen(&current, &format!("\"version\":{newer}"), 1);
    let without_state = {
        let mut json: serde_json::Value = serde_json::from_str(&next).unwrap();
        json.as_object_mut().unwrap().remove("state");
        json.to_string()
    };
    let (newer_label, older_label) = (format!("version {newer}"), format!("version {older}"));
    cases.push((newer_label.clone(), next, newer_label.as_str()));
    cases.push((
        format!("{newer_label} without `state`"),
        without_state,
        newer_label.as_str(),
    ));
    cases.push((
        older_label.clone(),
        valid.replacen(&current, &format!("\"version\":{older}"), 1),
        older_label.as_str(),
    ));
    cases.push((
        "another format".into(),
        valid.replacen("physfit.checkpoint", "other.checkpoint", 1),
        "other.checkpoint",
    ));
    for (what, text, needle) in cases {
        std::fs::write(&path, &text).unwrap();
        let before = snapshot(&out);
        let run = physfit(d, &["fit", "scene.toml", "--resume", "--out", "out"]);
        let message = refused(&run);
        eprintln!("{what}: {message}");
        assert!(message.contains("checkpoint.json"), "{what}: {message}");
        assert!(
            message.contains("run without --resume") && message.contains("--force"),
            "{what}: the fix is not named: {message}"
        );
        assert!(message.contains(needle), "{what}: {message}");
        assert!(!message.contains("panicked"), "{what}: {message}");
        assert_eq!(snapshot(&out), before, "{what}: the outputs changed");
    }
}

/// `physfit render --params` with a drivers file cut short, or fitted to
/// another scene (other splats, other settings): refused before any GPU
/// work, naming the file and the fix; no output directory is made.
#[test]
fn a_damaged_or_foreign_drivers_file_is_refused_by_render() {
    let dir = full_scene_dir();
    let d = dir.path();
    let drivers_of = |scene_dir: &Path, file: &Path| {
        let scene = Scene::load(&scene_dir.join("scene.toml")).unwrap();
        let drivers = DriverSet::from_scene(&scene).unwrap();
        let n = drivers.len();
        let log10 = vec![4.0; n];
        let velocity = vec![0.0; 3 * n];
        FittedDrivers::new(&scene, &drivers, &log10, &velocity, None)
            .unwrap()
            .save(file)
            .unwrap();
        std::fs::read(file).unwrap()
    };
    let own = drivers_of(d, &d.join("own.safetensors"));
    // Fitted to other splats: one fewer.
    let other = full_scene_dir();
    let ply = other.path().join("splats.ply");
    let mut fewer = common::splat_lattice(4);
    fewer.means.pop();
    fewer.rotations.pop();
    fewer.log_scales.pop();
    fewer.opacity_logits.pop();
    fewer.sh.pop();
    PlyData::from_gaussians(&fewer, &ply)
        .write(&ply, &[])
        .unwrap();
    let other_splats = drivers_of(other.path(), &other.path().join("d.safetensors"));
    // Fitted with another grid.
    let grid = full_scene_dir();
    let text = crate::bad_inputs::FULL.replace("grid_res = 16", "grid_res = 24");
    std::fs::write(grid.path().join("scene.toml"), text).unwrap();
    let other_grid = drivers_of(grid.path(), &grid.path().join("d.safetensors"));

    let len = own.len();
    let mut cases: Vec<(String, Vec<u8>, &[&str])> = [4, 8, 40, len / 2, len - 1]
        .iter()
        .map(|&n| {
            let needles: &[&str] = &["truncated", "write or download it again"];
            (
                format!("cut at {n} of {len} bytes"),
                own[..n].to_vec(),
                needles,
            )
        })
        .collect();
    cases.push((
        "other splats".into(),
        other_splats,
        &[
            "splats.ply",
            "scene.toml",
            "Point `gaussians.path` at the .ply of the fit",
        ],
    ));
    cases.push((
        "another grid".into(),
        other_grid,
        &[
            "`simulation.grid_res`: 24 in the fit, 16 now",
            "scene.toml",
            "or fit again",
        ],
    ));
    for (what, bytes, needles) in cases {
        std::fs::write(d.join("drivers.safetensors"), &bytes).unwrap();
        let run = physfit(
            d,
            &[
                "render",
                "scene.toml",
                "--params",
                "drivers.safetensors",
                "--out",
                "render",
            ],
        );
        let message = refused(&run);
        eprintln!("{what}: {message}");
        assert!(message.contains("drivers.safetensors"), "{what}: {message}");
        for needle in needles {
            assert!(
                message.contains(needle),
                "{what}: lacks {needle}: {message}"
            );
        }
        assert!(!message.contains("panicked"), "{what}: {message}");
        assert!(!d.join("render").exists(), "{what}: an output was made");
    }
}
