//! `physfit check` end to end: the demo scene passes with a summary, a
//! broken scene exits non-zero with a message naming the field.

use std::path::Path;
use std::process::Command;

fn check(scene: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("check")
        .arg(scene)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run physfit")
}

#[test]
fn demo_scene_passes_with_a_summary() {
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/fox.toml");
    let out = check(&scene);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "50000 (SH degree 0)",
        "grid_res 32",
        "simulated",
        "anchored",
        "substeps",
        "512×512",
        "fov",
        "no reference frames",
    ] {
        assert!(
            stdout.contains(needle),
            "summary lacks `{needle}`:\n{stdout}"
        );
    }
}

#[test]
fn broken_scene_fails_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let fox = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/fox.ply");
    let toml = format!(
        "[gaussians]\npath = {:?}\n[[views]]\n[views.camera]\nwidth = 64\nheight = 64\nfx = -5.0\n\
         position = [0.0, -3.0, 2.0]\nlook_at = [0.0, 0.0, 2.0]\nup = [0.0, 0.0, 1.0]\n",
        fox.to_string_lossy()
    );
    let scene = dir.path().join("broken.toml");
    std::fs::write(&scene, toml).unwrap();
    let out = check(&scene);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("views[0].camera.fx") && stderr.contains("broken.toml"),
        "{stderr}"
    );
}
