//! `physfit render --splats GLOB`: a sequence of posed splat files (another
//! simulator's frames) rendered with the scene's cameras. The scene's own
//! rest .ply renders exactly as plain `render` draws the scene, moving the
//! splats moves the picture, and a file with another splat count is
//! refused naming it.

use std::path::Path;
use std::process::Command;

use physfit::scene::ply::PlyData;
use physfit::scene::Gaussians;

fn physfit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
}

/// A 3×3×3 lattice of opaque splats around (0.5, 0.5, 0.5), shifted by `dx`
/// along x, with the first `n` splats kept.
fn lattice(dx: f32, n: usize) -> Gaussians {
    let mut g = Gaussians::default();
    for i in 0..3 {
        for j in 0..3 {
            for k in 0..3 {
                let c = [i as f32, j as f32, k as f32];
                g.means
                    .push([0.3 + 0.2 * c[0] + dx, 0.3 + 0.2 * c[1], 0.3 + 0.2 * c[2]]);
                g.rotations.push([1.0, 0.0, 0.0, 0.0]);
                g.log_scales.push([-2.8, -3.2, -3.0]);
                g.opacity_logits.push(3.0);
                g.sh.push([0.4 * c[0] - 0.4, 0.4 * c[1] - 0.4, 0.4 * c[2] - 0.4]);
            }
        }
    }
    g.means.truncate(n);
    g.rotations.truncate(n);
    g.log_scales.truncate(n);
    g.opacity_logits.truncate(n);
    g.sh.truncate(n);
    g
}

fn write_ply(g: &Gaussians, path: &Path) {
    PlyData::from_gaussians(g, path).write(path, &[]).unwrap();
}

/// A scene of the lattice, one 40×32 camera named `cam` looking along +y.
fn scene(dir: &Path) -> std::path::PathBuf {
    write_ply(&lattice(0.0, 27), &dir.join("splats.ply"));
    let toml = "[gaussians]\npath = \"splats.ply\"\n\n[[views]]\nname = \"cam\"\n[views.camera]\n\
                width = 40\nheight = 32\nfx = 40.0\nposition = [0.5, -2.5, 0.5]\n\
                look_at = [0.5, 0.5, 0.5]\nup = [0.0, 0.0, 1.0]\n\n\
                [reference]\nbackground = [1.0, 1.0, 1.0]\n";
    let path = dir.join("scene.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

fn rgba(path: &Path) -> image::RgbaImage {
    image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgba8()
}

/// Mean x of the pixels that are not the white background.
fn object_x(img: &image::RgbaImage) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for (x, _, p) in img.enumerate_pixels() {
        if p.0[..3].iter().any(|&c| c < 240) {
            sum += x as f64;
            n += 1;
        }
    }
    assert!(n > 20, "the splats cover only {n} pixels");
    sum / n as f64
}

#[test]
fn render_splats_matches_plain_render_and_follows_the_splats() {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene(dir.path());
    let frames = dir.path().join("sim");
    std::fs::create_dir(&frames).unwrap();
    std::fs::copy(dir.path().join("splats.ply"), frames.join("frame_0000.ply")).unwrap();
    write_ply(&lattice(0.15, 27), &frames.join("frame_0001.ply"));

    let plain = dir.path().join("plain");
    let status = physfit()
        .args(["render", "--quiet", "--out"])
        .arg(&plain)
        .arg(&scene)
        .status()
        .unwrap();
    assert!(status.success());

    let out = dir.path().join("seq");
    let status = physfit()
        .args(["render", "--quiet", "--size", "40x32", "--camera", "cam"])
        .arg("--splats")
        .arg(frames.join("frame_*.ply"))
        .arg("--out")
        .arg(&out)
        .arg(&scene)
        .status()
        .unwrap();
    assert!(status.success());

    let rest = rgba(&plain.join("cam.png"));
    let first = rgba(&out.join("cam/frame_0000.png"));
    let moved = rgba(&out.join("cam/frame_0001.png"));
    assert!(first.pixels().all(|p| p.0[3] == 255), "PNG must be opaque");
    assert_eq!(
        first.as_raw(),
        rest.as_raw(),
        "frame 0 (the scene's own .ply) must render as plain `render` does"
    );
    let shift = object_x(&moved) - object_x(&first);
    // 0.15 world units at depth 3 with fx = 40: about 2 px to the right.
    assert!((1.0..3.5).contains(&shift), "image moved {shift} px");
}

#[test]
fn render_splats_refuses_another_splat_count() {
    let dir = tempfile::tempdir().unwrap();
    let scene = scene(dir.path());
    let bad = dir.path().join("frame_0003.ply");
    write_ply(&lattice(0.0, 26), &bad);
    let result = physfit()
        .args(["render", "--quiet", "--splats"])
        .arg(dir.path().join("frame_*.ply"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg(&scene)
        .output()
        .unwrap();
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains("frame_0003.ply") && stderr.contains("26") && stderr.contains("27"),
        "{stderr}"
    );
}
