//! `physfit simulate` end to end on a tiny scene: `--frames N` writes N
//! frames, the rest frame 0 included, one .ply per frame whose centres move
//! with the initial velocity, rendered as a PNG sequence per view, and a
//! run that breaks down
//! (particles thrown out of the box) writes nothing and names the frame.

use crate::common;

use std::path::Path;
use std::process::Command;

use physfit::scene::ply::{load_gaussians, PlyData};
use physfit::scene::{Gaussians, Scene};

/// 27 splats on a 3×3×3 lattice of spacing 0.5: isolated particles (more
/// than 2 cells apart at grid_res 16), so each translates rigidly.
fn lattice() -> Gaussians {
    common::splat_lattice(3)
}

const SCENE: &str = r#"
[gaussians]
path = "splats.ply"

[[views]]
[views.camera]
width = 16
height = 12
fx = 20.0
position = [0.5, -4.0, 0.5]
look_at = [0.5, 0.5, 0.5]
up = [0.0, 0.0, 1.0]

[simulation]
grid_res = 16
gravity = [0.0, 0.0, 0.0]

[material]
youngs_modulus = 1.0e4
log10_youngs_range = [3.0, 4.0]
"#;

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ply = dir.path().join("splats.ply");
    PlyData::from_gaussians(&lattice(), &ply)
        .write(&ply, &[])
        .unwrap();
    std::fs::write(dir.path().join("scene.toml"), SCENE).unwrap();
    dir
}

/// Frames `simulate` writes here: frames 0..=2 (`--frames` counts the rest
/// frame).
const FRAMES: usize = 3;

/// Files in `dir` named `frame_NNNN.<ext>`.
fn frame_files(dir: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("frame_") && n.ends_with(&format!(".{ext}")))
        .collect();
    names.sort();
    names
}

fn simulate(dir: &Path, velocity: &str, out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("simulate")
        .arg(dir.join("scene.toml"))
        .args([
            "--velocity",
            velocity,
            "--frames",
            &FRAMES.to_string(),
            "--out",
        ])
        .arg(out)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run physfit")
}

#[test]
fn frames_move_with_the_initial_velocity() {
    let dir = fixture();
    let out = dir.path().join("out");
    let run = simulate(dir.path(), "0.3,-0.2,0.1", &out);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let scene = Scene::load(&dir.path().join("scene.toml")).unwrap();
    let rest = lattice();
    // Exactly N files: frame_0000 .. frame_{N−1}.
    let expected: Vec<String> = (0..FRAMES).map(|k| format!("frame_{k:04}.ply")).collect();
    assert_eq!(frame_files(&out, "ply"), expected);
    for k in 0..FRAMES {
        let frame = load_gaussians(&out.join(format!("frame_{k:04}.ply")))
            .unwrap()
            .gaussians;
        assert_eq!(frame.len(), rest.len());
        let t = k as f32 / scene.fps as f32;
        for (a, b) in frame.means.iter().zip(&rest.means) {
            let expected = [b[0] + 0.3 * t, b[1] - 0.2 * t, b[2] + 0.1 * t];
            for c in 0..3 {
                assert!(
                    (a[c] - expected[c]).abs() < 1e-4,
                    "frame {k}: {a:?} vs {expected:?}"
                );
            }
        }
        // The drivers translate rigidly, so the polar rotation of their
        // motion is the identity (to f32 rounding of its SVD).
        for (a, b) in frame.rotations.iter().zip(&rest.rotations) {
            for c in 0..4 {
                assert!((a[c] - b[c]).abs() < 1e-5, "frame {k}: {a:?} vs {b:?}");
            }
        }
    }

    // One PNG sequence per view, at the camera's size, showing the motion.
    let view_dir = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("a PNG sequence directory for the view");
    let expected: Vec<String> = (0..FRAMES).map(|k| format!("frame_{k:04}.png")).collect();
    assert_eq!(frame_files(&view_dir, "png"), expected);
    let images: Vec<_> = (0..FRAMES)
        .map(|k| {
            image::open(view_dir.join(format!("frame_{k:04}.png")))
                .unwrap()
                .to_rgba8()
        })
        .collect();
    for image in &images {
        assert_eq!(image.dimensions(), (16, 12));
    }
    assert_ne!(
        images[0], images[2],
        "the rendered frames do not show the motion"
    );
}

#[test]
fn a_run_that_leaves_the_box_writes_nothing() {
    let dir = fixture();
    let out = dir.path().join("out");
    let run = simulate(dir.path(), "500,0,0", &out);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("left the simulation box at frame 1"),
        "{stderr}"
    );
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
}

/// The one overwrite rule: a directory holding an earlier simulate's files
/// is refused without `--force`, naming the flag and the files, and left
/// as it was; `--force` replaces those files only.
#[test]
fn an_earlier_simulation_is_replaced_only_with_force_and_only_its_files() {
    let dir = fixture();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let first = simulate(dir.path(), "0.5,0,0", &out);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let before = std::fs::read(out.join("frame_0002.ply")).unwrap();
    let again = simulate(dir.path(), "-0.5,0,0", &out);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("earlier `physfit simulate`")
            && stderr.contains("frame_0000.ply")
            && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(out.join("frame_0002.ply")).unwrap(), before);
    let forced = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("simulate")
        .arg(dir.path().join("scene.toml"))
        .args([
            "--velocity",
            "-0.5,0,0",
            "--frames",
            "2",
            "--force",
            "--out",
        ])
        .arg(&out)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        forced.status.success(),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(out.join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(
        frame_files(&out, "ply"),
        ["frame_0000.ply", "frame_0001.ply"],
        "the stale frame is gone"
    );
    let hidden: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}

/// `--quiet` (the global flag, as on every command): the frames are
/// written and nothing is printed.
#[test]
fn quiet_simulate_prints_nothing() {
    let dir = fixture();
    let out = dir.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("simulate")
        .arg(dir.path().join("scene.toml"))
        .args(["--velocity", "0.3,0,0", "--frames", "2", "--quiet", "--out"])
        .arg(&out)
        .env_remove("RUST_LOG")
        .output()
        .expect("run physfit");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(stderr, "");
    assert_eq!(String::from_utf8_lossy(&run.stdout), "");
    assert_eq!(frame_files(&out, "ply").len(), 2);
}
