//! Reference frames: decoding as `value / 255` (3DGS colours, no transfer
//! curve), 8/16-bit PNG and JPEG input, ordering, errors and the PNG writer
//! (the GPU upload: tests/gpu_splat/frames_upload.rs).

use crate::common;
use physfit::scene::frames::{list_frames, load_frame, write_png, write_png16, FrameError};

#[test]
fn png8_round_trip_within_half_a_code_value() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (17, 9);
    let px = common::gradient_image(w, h);
    let p = dir.path().join("a.png");
    write_png(&p, w, h, &px).unwrap();
    let f = load_frame(&p, Some((w, h))).unwrap();
    assert_eq!((f.width, f.height), (w, h));
    for (a, b) in px.iter().zip(&f.pixels) {
        for c in 0..4 {
            // 8-bit quantisation is at most half a code value.
            assert!((a[c] - b[c]).abs() <= 0.5 / 255.0 + 1e-6);
        }
    }
    let img = image::open(&p).unwrap().to_rgba8();
    assert_eq!(img.dimensions(), (w, h));
    // No transfer curve: 0.5 is code 128 = round(127.5), not sRGB's 188.
    let q = dir.path().join("mid.png");
    write_png(&q, 1, 1, &[[0.5, 0.0, 1.0, 1.0]]).unwrap();
    assert_eq!(
        image::open(&q).unwrap().to_rgba8().get_pixel(0, 0).0,
        [128, 0, 255, 255]
    );
}

#[test]
fn a_written_frame_reads_back_its_own_values() {
    // Every 8-bit code written as k/255 and read back is k/255 exactly, and
    // rewriting what was read gives the same bytes.
    let dir = tempfile::tempdir().unwrap();
    let px: Vec<[f32; 4]> = (0..256)
        .map(|k| {
            let v = k as f32 / 255.0;
            [v, (255 - k) as f32 / 255.0, (k % 7) as f32 / 255.0, 1.0]
        })
        .collect();
    let p = dir.path().join("codes.png");
    write_png(&p, 16, 16, &px).unwrap();
    let back = load_frame(&p, Some((16, 16))).unwrap();
    assert_eq!(back.pixels, px);
    let q = dir.path().join("again.png");
    write_png(&q, 16, 16, &back.pixels).unwrap();
    assert_eq!(
        image::open(&p).unwrap().to_rgba8().into_raw(),
        image::open(&q).unwrap().to_rgba8().into_raw()
    );
}

#[test]
fn png16_keeps_its_precision() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (33, 5);
    let px = common::gradient_image(w, h);
    let p = dir.path().join("a16.png");
    write_png16(&p, w, h, &px).unwrap();
    let f = load_frame(&p, None).unwrap();
    let worst = px
        .iter()
        .zip(&f.pixels)
        .flat_map(|(a, b)| (0..4).map(move |c| (a[c] - b[c]).abs()))
        .fold(0.0f32, f32::max);
    // 16-bit: far finer than an 8-bit step (1/255 ≈ 4e-3).
    assert!(worst < 5e-5, "{worst}");
}

#[test]
fn jpeg_and_grey_images_get_alpha_one() {
    let dir = tempfile::tempdir().unwrap();
    let rgb = image::RgbImage::from_pixel(8, 4, image::Rgb([255, 128, 0]));
    let p = dir.path().join("a.jpg");
    rgb.save(&p).unwrap();
    let f = load_frame(&p, Some((8, 4))).unwrap();
    for px in &f.pixels {
        assert_eq!(px[3], 1.0);
        assert!(
            (px[0] - 1.0).abs() < 0.02 && (px[1] - 128.0 / 255.0).abs() < 0.02 && px[2] < 0.01,
            "{px:?}"
        );
    }
    let grey = image::GrayImage::from_pixel(3, 3, image::Luma([188]));
    let p = dir.path().join("g.png");
    grey.save(&p).unwrap();
    let f = load_frame(&p, None).unwrap();
    let l = 188.0 / 255.0;
    assert!(f.pixels.iter().all(|px| *px == [l, l, l, 1.0]));
}

#[test]
fn frames_are_listed_in_numeric_order() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["frame_10.png", "frame_2.png", "frame_1.jpg", "notes.txt"] {
        std::fs::write(dir.path().join(name), b"x").unwrap();
    }
    let names = |v: Vec<std::path::PathBuf>| -> Vec<String> {
        v.iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(
        names(list_frames(dir.path()).unwrap()),
        ["frame_1.jpg", "frame_2.png", "frame_10.png"]
    );
    let pattern = dir.path().join("*.png");
    assert_eq!(
        names(list_frames(&pattern).unwrap()),
        ["frame_2.png", "frame_10.png"]
    );
    let none = dir.path().join("*.jpeg");
    assert!(matches!(
        list_frames(&none),
        Err(FrameError::NoFrames { .. })
    ));
}

#[test]
fn bad_frames_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.png");
    write_png(&p, 4, 2, &common::gradient_image(4, 2)).unwrap();
    match load_frame(&p, Some((4, 3))) {
        Err(e @ FrameError::WrongSize { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("a.png") && msg.contains("4×2") && msg.contains("4×3"),
                "{msg}"
            );
        }
        other => panic!("expected WrongSize, got {other:?}"),
    }
    let broken = dir.path().join("b.png");
    std::fs::write(&broken, b"\x89PNG\r\n\x1a\ntruncated").unwrap();
    assert!(matches!(
        load_frame(&broken, None),
        Err(FrameError::Unreadable { .. })
    ));
    let absent = dir.path().join("c.png");
    assert!(matches!(
        load_frame(&absent, None),
        Err(FrameError::Unreadable { .. })
    ));
    let short = write_png(
        &dir.path().join("d.png"),
        4,
        4,
        &common::gradient_image(4, 2),
    );
    assert!(matches!(short, Err(FrameError::PixelCount { .. })));
    // NaN and out-of-range values are written clamped, never as garbage.
    let q = dir.path().join("e.png");
    write_png(
        &q,
        2,
        1,
        &[[f32::NAN, 2.0, -1.0, f32::NAN], [0.0, 0.0, 0.0, 1.0]],
    )
    .unwrap();
    assert_eq!(
        image::open(&q).unwrap().to_rgba8().get_pixel(0, 0).0,
        [0, 255, 0, 0]
    );
}

/// A recursive `**` walks only below the scene's folder: `/**/*.png` (or
/// `../**`) is refused at once, naming the field and the fix, instead of
/// walking the whole file system; below the folder it lists as before.
#[test]
fn a_recursive_glob_walks_only_below_the_scene_folder() {
    let means: Vec<[f32; 3]> = (0..27)
        .map(|i| [i % 3, (i / 3) % 3, i / 9].map(|a| 0.3 + 0.2 * a as f32))
        .collect();
    let (dir, _) = crate::common::scene_with(&means, "");
    let d = dir.path();
    std::fs::create_dir_all(d.join("frames/a")).unwrap();
    for k in 0..4 {
        image::RgbImage::new(16, 12)
            .save(d.join(format!("frames/a/frame_{k:04}.png")))
            .unwrap();
    }
    let with_frames = |spec: &str| {
        let toml = std::fs::read_to_string(d.join("scene.toml"))
            .unwrap()
            .replace("[[views]]\n", &format!("[[views]]\nframes = \"{spec}\"\n"));
        std::fs::write(d.join("framed.toml"), toml).unwrap();
        physfit::scene::Scene::load(&d.join("framed.toml"))
    };
    for spec in ["/**/*.png", "../**/*.png"] {
        let started = std::time::Instant::now();
        let text = with_frames(spec).expect_err("refused").to_string();
        assert!(
            text.contains("views[0].frames")
                && text.contains("walks only below the scene's folder")
                && text.contains("fix:"),
            "{spec}: {text}"
        );
        assert!(
            started.elapsed().as_secs_f64() < 2.0,
            "{spec}: refused at once"
        );
    }
    let scene = with_frames("frames/**/*.png").unwrap();
    assert_eq!(scene.views[0].frames.as_ref().unwrap().len(), 4);
}
