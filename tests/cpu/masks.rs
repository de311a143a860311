//! Loss masks (`[[views]] masks`): the decoding rule per file
//! type (src/scene/masks.rs), and the scene's refusals naming
//! `views[i].masks` and the fix; `physfit check` prints them; checkpoints
//! of other masks are refused.

use std::path::Path;

use image::{GrayImage, ImageBuffer, Luma, LumaA, Rgb, Rgba};
use physfit::fit::checkpoint::FitFingerprint;
use physfit::fit::StageChoice;
use physfit::scene::frames::FrameError;
use physfit::scene::masks::load_mask;
use physfit::scene::SceneError;

use crate::scene::{expect_err, Fixture, BASE};
use crate::scene_check::check;

/// The pixels of a 4×2 test mask that count: the left half.
fn left_half(x: u32) -> bool {
    x < 2
}

fn expect_left_half(path: &Path) {
    let m = load_mask(path, Some((4, 2))).unwrap();
    assert_eq!((m.width, m.height), (4, 2));
    let want: Vec<bool> = (0..8).map(|i| left_half(i % 4)).collect();
    assert_eq!(m.counts, want, "{}", path.display());
    assert_eq!(m.counted(), 4);
}

#[test]
fn masks_count_white_or_opaque_pixels_in_every_png_kind() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    // 8-bit grey at the threshold: 128 counts, 127 does not.
    ImageBuffer::from_fn(4, 2, |x, _| Luma([if left_half(x) { 128u8 } else { 127 }]))
        .save(p("grey.png"))
        .unwrap();
    // 16-bit grey.
    ImageBuffer::from_fn(4, 2, |x, _| Luma([if left_half(x) { 65535u16 } else { 0 }]))
        .save(p("grey16.png"))
        .unwrap();
    // RGB black and white.
    ImageBuffer::from_fn(4, 2, |x, _| {
        Rgb(if left_half(x) { [255u8; 3] } else { [0; 3] })
    })
    .save(p("rgb.png"))
    .unwrap();
    // RGBA saved opaque by an image editor: read by its grey level.
    ImageBuffer::from_fn(4, 2, |x, _| {
        Rgba(if left_half(x) {
            [255u8; 4]
        } else {
            [0, 0, 0, 255]
        })
    })
    .save(p("rgba_opaque.png"))
    .unwrap();
    // A cut-out: dark object colours over transparency, read by its alpha.
    ImageBuffer::from_fn(4, 2, |x, _| {
        Rgba(if left_half(x) {
            [20u8, 10, 5, 255]
        } else {
            [255, 255, 255, 0]
        })
    })
    .save(p("cutout.png"))
    .unwrap();
    // Grey + alpha cut-out.
    ImageBuffer::from_fn(4, 2, |x, _| {
        LumaA(if left_half(x) { [0u8, 200] } else { [255, 100] })
    })
    .save(p("grey_alpha.png"))
    .unwrap();
    for name in [
        "grey.png",
        "grey16.png",
        "rgb.png",
        "rgba_opaque.png",
        "cutout.png",
        "grey_alpha.png",
    ] {
        expect_left_half(&p(name));
    }
    // Nothing counts: refused, naming the file.
    GrayImage::from_pixel(4, 2, Luma([0]))
        .save(p("black.png"))
        .unwrap();
    let e = load_mask(&p("black.png"), None).unwrap_err();
    assert!(matches!(e, FrameError::EmptyMask { .. }), "{e}");
    assert!(e.to_string().contains("black.png"), "{e}");
    // Another size than the camera's.
    let e = load_mask(&p("grey.png"), Some((5, 2))).unwrap_err();
    assert!(matches!(e, FrameError::WrongSize { .. }), "{e}");
}

/// Writes `n` white 16×12 masks into `sub/` as `m{k}.png`, or of `w × h`.
fn masks(f: &Fixture, sub: &str, n: usize, (w, h): (u32, u32)) {
    let d = f.path(sub);
    std::fs::create_dir_all(&d).unwrap();
    for k in 0..n {
        GrayImage::from_pixel(w, h, Luma([255]))
            .save(d.join(format!("m{k}.png")))
            .unwrap();
    }
}

fn scene_toml(frames: Option<&str>, masks: &str) -> String {
    let frames = frames.map_or(String::new(), |f| format!("frames = \"{f}\"\n"));
    BASE.replace(
        "[views.camera]",
        &format!("{frames}masks = \"{masks}\"\n[views.camera]"),
    )
}

#[test]
fn scene_masks_resolve_one_per_frame_and_check_prints_them() {
    let f = Fixture::new();
    f.frames("frames", 4, 16, 12);
    masks(&f, "masks", 4, (16, 12));
    let toml = scene_toml(Some("frames"), "masks/*.png");
    let scene = f.load(&toml).unwrap();
    let set = scene.views[0].masks.as_ref().unwrap();
    assert_eq!(set.len(), 4);
    assert!(set.paths[2].ends_with("masks/m2.png"));
    assert_eq!(set.load_mask(1).unwrap().counted(), 16 * 12);
    let out = check(&f.path("scene.toml"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("masks      4 from") && stdout.contains("m0.png"),
        "{stdout}"
    );
    // No `masks`: none.
    let plain = BASE.replace("[views.camera]", "frames = \"frames\"\n[views.camera]");
    assert!(f.load(&plain).unwrap().views[0].masks.is_none());
}

#[test]
fn scene_mask_mistakes_name_the_field_and_the_fix() {
    let f = Fixture::new();
    f.frames("frames", 3, 16, 12);
    masks(&f, "two", 2, (16, 12));
    masks(&f, "small", 3, (8, 6));
    masks(&f, "ok", 3, (16, 12));
    let field = "views[0].masks";

    let e = expect_err(f.load(&scene_toml(Some("frames"), "two")), field);
    assert!(
        e.to_string().contains("2 masks for 3 frames") && e.to_string().contains("one mask per"),
        "{e}"
    );
    let e = expect_err(f.load(&scene_toml(Some("frames"), "small")), field);
    assert!(
        matches!(e, SceneError::Frames { .. }) && e.to_string().contains("8×6"),
        "{e}"
    );
    let e = expect_err(f.load(&scene_toml(None, "ok")), field);
    assert!(e.to_string().contains("add the view's `frames`"), "{e}");
    assert!(matches!(
        expect_err(f.load(&scene_toml(Some("frames"), "absent")), field),
        SceneError::MissingFile { .. }
    ));
    // A JPEG among the masks.
    image::RgbImage::from_pixel(16, 12, Rgb([255, 255, 255]))
        .save(f.path("ok/m3.jpg"))
        .unwrap();
    std::fs::remove_file(f.path("ok/m2.png")).unwrap();
    let e = expect_err(f.load(&scene_toml(Some("frames"), "ok")), field);
    assert!(
        e.to_string().contains("m3.jpg") && e.to_string().contains("PNG"),
        "{e}"
    );
}

#[test]
fn checkpoints_of_other_masks_are_refused_naming_them() {
    let f = Fixture::new();
    f.frames("frames", 4, 16, 12);
    masks(&f, "masks", 4, (16, 12));
    let fingerprint =
        |toml: &str| FitFingerprint::of(&f.load(toml).unwrap(), StageChoice::Both, None).unwrap();
    let plain = fingerprint(&BASE.replace("[views.camera]", "frames = \"frames\"\n[views.camera]"));
    let masked = fingerprint(&scene_toml(Some("frames"), "masks"));
    let differences = plain.differences(&masked);
    assert_eq!(differences.len(), 1, "{differences:?}");
    assert!(differences[0].contains("loss masks"), "{differences:?}");
    // Another mask's content.
    GrayImage::from_fn(16, 12, |x, _| Luma([if x < 8 { 255 } else { 0 }]))
        .save(f.path("masks/m3.png"))
        .unwrap();
    let repainted = fingerprint(&scene_toml(Some("frames"), "masks"));
    let differences = masked.differences(&repainted);
    assert!(
        differences.len() == 1 && differences[0].contains("loss masks"),
        "{differences:?}"
    );
}
