//! `physfit render`: writes one PNG per view at the requested size, and
//! names the problem when the camera index is out of range; the library
//! call it runs renders in memory and stops when asked.

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

/// `render_at_rest`, the library call the command runs: a frame per
/// camera in memory, in the order asked; `write_outputs` writes each as an
/// opaque `<name>.png`; a stop raised before a view stops there.
#[test]
fn the_scene_at_rest_renders_in_memory_and_writes_opaque_pngs() {
    use physfit::forward::{render_at_rest, ForwardError, RestRender};
    let ctx = crate::common::gpu();
    let scene = physfit::scene::Scene::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/fox.toml"),
    )
    .unwrap();
    let small = |v: usize| scene.views[v].camera.resized(48, 36);
    let cameras = vec![("b".to_string(), small(1)), ("a".to_string(), small(0))];
    let mut told = Vec::new();
    let rendered = render_at_rest(&ctx, &scene, &cameras, None, |k| told.push(k)).unwrap();
    assert_eq!(told, [0, 1]);
    let names: Vec<&str> = rendered.views.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["b", "a"]);
    assert_ne!(rendered.views[0].1.pixels, rendered.views[1].1.pixels);
    let out = tempfile::tempdir().unwrap();
    rendered.write_outputs(out.path()).unwrap();
    let png = image::open(out.path().join(RestRender::file_name("a")))
        .unwrap()
        .to_rgba8();
    assert_eq!(png.dimensions(), (48, 36));
    assert!(png.pixels().all(|p| p.0[3] == 255), "PNG must be opaque");

    let stop = physfit::stop::StopSignal::new();
    let stopped = render_at_rest(&ctx, &scene, &cameras, Some(&stop), |k| {
        if k == 1 {
            stop.raise()
        }
    });
    assert!(
        matches!(stopped, Err(ForwardError::Stopped { frame: 1 })),
        "{:?}",
        stopped.err()
    );
}
