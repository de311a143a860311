//! `physfit render`: writes one PNG per view at the requested size, and
//! names the problem when the camera index is out of range.

use std::process::Command;

fn physfit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
}

#[test]
fn render_writes_one_png_per_view() {
    let out = tempfile::tempdir().unwrap();
    let status = physfit()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "render",
            "scenes/fox.toml",
            "--size",
            "64x48",
            "--camera",
            "0",
            "--out",
        ])
        .arg(out.path())
        .status()
        .unwrap();
    assert!(status.success());
    let png = image::open(out.path().join("front.png")).unwrap();
    assert_eq!((png.width(), png.height()), (64, 48));
    let rgba = png.to_rgba8();
    // Opaque (colour is composited over the background); some pixels show
    // the fox (grey stone, red scarf), some the scene's white background.
    assert!(rgba.pixels().all(|p| p.0[3] == 255), "PNG must be opaque");
    let fox = rgba.pixels().filter(|p| p.0[0] < 220).count();
    let background = rgba
        .pixels()
        .filter(|p| p.0[..3].iter().all(|&c| c >= 250))
        .count();
    assert!(
        fox > 100 && background > 100,
        "fox {fox}, background {background}"
    );
}

#[test]
fn render_rejects_a_missing_camera() {
    let out = tempfile::tempdir().unwrap();
    let result = physfit()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["render", "scenes/fox.toml", "--camera", "3", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains("--camera 3") && stderr.contains("2 view"),
        "{stderr}"
    );
}
