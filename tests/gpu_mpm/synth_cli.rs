//! `physfit synth` end to end on a tiny scene (docs/design.md § Verification 5):
//! every view gets N frames of the camera's size, frame 0 is the scene
//! rendered at rest (`physfit render`), later frames show the truth's
//! motion, the finer discretisation is the scene's doubled, a scene whose
//! `frames` glob points at the output loads with N frames, an existing
//! directory is refused without `--force` and left untouched, and a run
//! that blows up writes nothing.

use std::path::Path;
use std::process::Output;

use crate::common;
use crate::common::cli::{ok, physfit, refused};

use physfit::scene::ply::PlyData;
use physfit::scene::{Gaussians, Scene};

/// 5×5×5 small opaque splats filling [0, 0.4]³ (world units), coloured by
/// position so motion shows in the renders.
fn block() -> Gaussians {
    common::block(&common::Block {
        counts: [5, 5, 5],
        spacing: [0.1; 3],
        jitter: 0.0,
        jitter_seed: 0,
        log_scale: -3.0,
        opacity_logit: 2.0,
        colour: |[i, j, k]| [i, j, k].map(|a| 0.3 * a as f32 - 0.6),
    })
}

pub(crate) fn scene_toml(frames: bool) -> String {
    let frames = |v: &str| {
        if frames {
            format!("frames = \"synth/{v}/*.png\"\n")
        } else {
            String::new()
        }
    };
    format!(
        r#"
[gaussians]
path = "splats.ply"

[[views]]
name = "front"
{}[views.camera]
width = 24
height = 20
fx = 30.0
position = [0.2, -2.0, 0.2]
look_at = [0.2, 0.2, 0.2]
up = [0.0, 0.0, 1.0]

[[views]]
name = "side"
{}[views.camera]
width = 16
height = 16
fx = 20.0
position = [2.2, 0.2, 0.4]
look_at = [0.2, 0.2, 0.2]
up = [0.0, 0.0, 1.0]

[simulation]
box = {{ min = [-0.5, -0.5, -0.5], max = [1.0, 1.0, 1.0] }}
grid_res = 16

[material]
youngs_modulus = 1.0e4
log10_youngs_range = [3.0, 4.5]

[regions]
anchored = [{{ min = [-1.0, -1.0, -1.0], max = [1.0, 1.0, 0.05] }}]

[drivers]
count = 16
"#,
        frames("front"),
        frames("side")
    )
}

const TRUTH: &str = r#"
frames = 4

[youngs]
kind = "boxes"
default = 4.0
boxes = [{ min = [-1, -1, 0.25], max = [1, 1, 1], log10 = 3.5 }]

[velocity]
kind = "uniform"
value = [2.0, 0.0, 0.0]
"#;

pub(crate) fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ply = dir.path().join("splats.ply");
    PlyData::from_gaussians(&block(), &ply)
        .write(&ply, &[])
        .unwrap();
    std::fs::write(dir.path().join("scene.toml"), scene_toml(false)).unwrap();
    std::fs::write(dir.path().join("truth.toml"), TRUTH).unwrap();
    dir
}

pub(crate) fn synth(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "synth",
        "scene.toml",
        "--truth",
        "truth.toml",
        "--out",
        "synth",
    ];
    args.extend_from_slice(extra);
    physfit(dir, &args)
}

fn png(path: &Path) -> image::RgbaImage {
    image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgba8()
}

/// No staging directory is left beside `synth` or in it.
fn no_staging_left(dir: &Path) {
    for d in [dir.to_path_buf(), dir.join("synth")] {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let hidden: Vec<_> = entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("staging"))
            .collect();
        assert!(hidden.is_empty(), "{}: {hidden:?}", d.display());
    }
}

#[test]
fn synth_writes_every_view_from_rest_and_the_scene_loads_them() {
    let dir = fixture();
    let d = dir.path();
    let stderr = ok(&synth(d, &[]));
    assert!(
        stderr.contains("frames = \"synth/front/*.png\""),
        "{stderr}"
    );
    no_staging_left(d);
    ok(&physfit(d, &["render", "scene.toml", "--out", "rest"]));
    let out = d.join("synth");
    for (view, size) in [("front", (24, 20)), ("side", (16, 16))] {
        let frames: Vec<_> = (0..4)
            .map(|k| png(&out.join(view).join(format!("frame_{k:04}.png"))))
            .collect();
        assert!(!out.join(view).join("frame_0004.png").exists());
        for f in &frames {
            assert_eq!(f.dimensions(), size, "{view}");
            assert!(f.pixels().all(|p| p[3] == 255), "opaque");
        }
        // Frame 0 is the rest state: the scene as `physfit render` draws it
        // (the drivers' rest deformation is the identity to f32 rounding).
        let rest = png(&d.join("rest").join(format!("{view}.png")));
        let worst = rest
            .as_raw()
            .iter()
            .zip(frames[0].as_raw())
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        assert!(
            worst <= 1,
            "{view}: frame 0 differs from the rest render by {worst} codes"
        );
        assert_ne!(
            frames[0], frames[3],
            "{view}: the truth moves, the frames must show it"
        );
    }
    assert_eq!(
        std::fs::read_to_string(out.join("truth.toml")).unwrap(),
        TRUTH
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("synth.json")).unwrap()).unwrap();
    assert_eq!(json["frames"], 4);
    assert_eq!(json["drivers"]["scene"], 16);
    assert_eq!(
        json["drivers"]["simulated"], 32,
        "twice the scene's drivers"
    );
    let substeps = json["substeps"]["scene"].as_u64().unwrap();
    assert_eq!(
        json["substeps"]["simulated"].as_u64().unwrap(),
        2 * substeps
    );
    assert_eq!(
        json["transfer"]["kind"], "apic",
        "the scene's transfer, recorded"
    );
    assert_eq!(
        json["anchoring"], "splats",
        "the scene's anchoring rule (the default), recorded"
    );

    std::fs::write(d.join("scene.toml"), scene_toml(true)).unwrap();
    let scene = Scene::load(&d.join("scene.toml")).unwrap();
    assert_eq!(scene.frame_count(), Some(4));
}

/// The one overwrite rule: a directory may hold anything, but one holding
/// an earlier synth's files is refused without `--force` and left as it
/// was; `--force` replaces those files only (stale frames of a longer
/// earlier run included), never the user's.
#[test]
fn an_earlier_synth_is_refused_without_force_and_only_its_files_replaced_with_it() {
    let dir = fixture();
    let d = dir.path();
    let out = d.join("synth");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    ok(&synth(
        d,
        &["--same-discretisation", "--frames", "3", "--quiet"],
    ));
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
    assert!(out.join("front/frame_0002.png").exists());
    let frame = std::fs::read(out.join("front/frame_0002.png")).unwrap();

    let run = synth(d, &["--same-discretisation", "--frames", "2"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("earlier `physfit synth`")
            && stderr.contains("front/frame_0000.png")
            && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(out.join("front/frame_0002.png")).unwrap(),
        frame,
        "untouched"
    );
    no_staging_left(d);

    ok(&synth(
        d,
        &[
            "--same-discretisation",
            "--frames",
            "2",
            "--force",
            "--quiet",
        ],
    ));
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine",
        "--force replaces only synth's files"
    );
    assert!(out.join("front/frame_0001.png").exists());
    assert!(!out.join("front/frame_0002.png").exists(), "no stale frame");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("synth.json")).unwrap()).unwrap();
    assert_eq!(json["drivers"]["simulated"], 16, "--same-discretisation");
    no_staging_left(d);

    // `--out .` holds the scene, the splats and the truth synth reads: its
    // output could replace them, so it is refused, with or without
    // --force, before anything is written.
    let before = crate::writer_cli::snapshot(d);
    let here = physfit(
        d,
        &[
            "synth",
            "scene.toml",
            "--truth",
            "truth.toml",
            "--out",
            ".",
            "--same-discretisation",
            "--frames",
            "2",
            "--force",
        ],
    );
    let stderr = refused(&here);
    assert!(
        stderr.contains("--out . holds scene.toml") && stderr.contains("with or without --force"),
        "{stderr}"
    );
    assert_eq!(crate::writer_cli::snapshot(d), before, "nothing written");
}

/// Plain `render` and `render --splats` follow the same rule, and flags
/// that only `--params` reads are refused without it.
#[test]
fn render_refuses_earlier_renders_without_force_and_flags_it_would_ignore() {
    let dir = fixture();
    let d = dir.path();
    std::fs::create_dir_all(d.join("r")).unwrap();
    std::fs::write(d.join("r/keep.txt"), "mine").unwrap();
    let stderr = ok(&physfit(d, &["render", "scene.toml", "--out", "sub/../r"]));
    assert!(
        stderr.contains("output r\n") || stderr.lines().any(|l| l == "output r"),
        "{stderr}"
    );
    let before = std::fs::read(d.join("r/front.png")).unwrap();
    let stderr = refused(&physfit(
        d,
        &["render", "scene.toml", "--out", "r", "--size", "8x8"],
    ));
    assert!(
        stderr.contains("earlier `physfit render`")
            && stderr.contains("front.png")
            && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(d.join("r/front.png")).unwrap(), before);
    ok(&physfit(
        d,
        &[
            "render",
            "scene.toml",
            "--out",
            "r",
            "--size",
            "8x8",
            "--force",
            "--quiet",
        ],
    ));
    assert_ne!(std::fs::read(d.join("r/front.png")).unwrap(), before);
    assert_eq!(
        std::fs::read_to_string(d.join("r/keep.txt")).unwrap(),
        "mine"
    );

    for flag in [
        vec!["--frames", "3"],
        vec!["--orbit", "10"],
        vec!["--from-rest"],
        vec!["--side-by-side"],
        vec!["--gravity", "0,0,-1"],
    ] {
        let mut args = vec!["render", "scene.toml", "--out", "never"];
        args.extend(&flag);
        let stderr = refused(&physfit(d, &args));
        assert!(
            stderr.contains(flag[0]) && stderr.contains("applies only with --params"),
            "{flag:?}: {stderr}"
        );
        assert!(!d.join("never").exists(), "{flag:?}: nothing written");
    }
}

#[test]
fn a_run_that_blows_up_writes_nothing() {
    let dir = fixture();
    let d = dir.path();
    std::fs::write(
        d.join("truth.toml"),
        TRUTH.replace("[2.0, 0.0, 0.0]", "[500.0, 0.0, 0.0]"),
    )
    .unwrap();
    let run = synth(d, &["--same-discretisation"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert!(!d.join("synth").exists());
    no_staging_left(d);
}
