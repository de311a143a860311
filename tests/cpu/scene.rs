//! scene.toml loading: a valid scene resolves as documented, and each kind
//! of mistake gives its own error naming the file and the field.

use crate::common;

use std::path::{Path, PathBuf};

use glam::Vec3;
use physfit::fit::{cold_velocity_evaluations, plan_stages, StageChoice, StageKind};
use physfit::mpm_rules::stability::min_substeps_per_frame;
use physfit::scene::ply::PlyData;
use physfit::scene::{ColorCorrection, Gaussians, Scene, SceneError};

/// 64 splats on a 4×4×4 lattice spanning [0, 1.5]³.
fn lattice() -> Gaussians {
    common::splat_lattice(4)
}

pub(crate) const BASE: &str = r#"
[gaussians]
path = "splats.ply"

[[views]]
[views.camera]
width = 16
height = 12
fx = 20.0
position = [0.75, -4.0, 0.75]
look_at = [0.75, 0.75, 0.75]
up = [0.0, 0.0, 1.0]

[material]
log10_youngs_range = [3.0, 5.0]
"#;

pub(crate) struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ply = dir.path().join("splats.ply");
        PlyData::from_gaussians(&lattice(), &ply)
            .write(&ply, &[])
            .unwrap();
        Fixture { dir }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn load(&self, toml: &str) -> Result<Scene, SceneError> {
        let p = self.path("scene.toml");
        std::fs::write(&p, toml).unwrap();
        Scene::load(&p)
    }

    /// Writes `n` PNG frames of `w × h` into `sub/`.
    pub(crate) fn frames(&self, sub: &str, n: usize, w: u32, h: u32) {
        let d = self.path(sub);
        std::fs::create_dir_all(&d).unwrap();
        for k in 0..n {
            let px = vec![[0.5f32, 0.25, 0.0, 1.0]; (w * h) as usize];
            physfit::scene::frames::write_png(&d.join(format!("f{k}.png")), w, h, &px).unwrap();
        }
    }
}

/// Asserts `r` failed and its message names `field` and the scene file.
pub(crate) fn expect_err(r: Result<Scene, SceneError>, field: &str) -> SceneError {
    let e = match r {
        Ok(_) => panic!("expected an error naming {field}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    assert!(
        msg.contains(field),
        "message does not name `{field}`: {msg}"
    );
    assert!(
        msg.contains("scene.toml"),
        "message does not name the file: {msg}"
    );
    e
}

#[test]
fn valid_scene_resolves_with_defaults() {
    let f = Fixture::new();
    let s = f.load(BASE).unwrap();
    assert_eq!(s.gaussians().len(), 64);
    assert_eq!(s.simulated, vec![true; 64]);
    assert_eq!(s.anchored, vec![false; 64]);
    assert_eq!(s.fps, 30.0);
    assert_eq!(s.material.density, 2000.0);
    assert_eq!(s.material.poisson_ratio, 0.3);
    assert_eq!(s.drivers.count, 64);
    assert_eq!(s.drivers.k, 8);
    assert_eq!((s.fit.w_l1, s.fit.w_ssim), (0.1, 0.9));
    // A frame count with the rest frame 0: frames 1–3 fitted.
    assert_eq!(s.fit.velocity.frames, Some(4));
    assert_eq!(s.fit.velocity.fitted_frames(12), 1..=3);
    assert_eq!(s.fit.stiffness.frames, None);
    assert_eq!(s.fit.stiffness.fitted_frames(12), 1..=11);
    assert_eq!(s.output_dir, f.path("output"));
    // Substeps default to the stability minimum for 10^5 Pa.
    let need = min_substeps_per_frame(30.0, 1e5, 0.3, 2000.0, 1.0 / 32.0);
    assert_eq!(s.simulation.substeps, need);
    assert_eq!(s.stability().min_substeps, need);
    assert!(s.stability().dt <= s.stability().dt_bound);
    // The auto box is a cube keeping every splat 3 cells from the walls.
    let n = s.normalised_means();
    let m = 3.0 / 32.0;
    assert!(n
        .iter()
        .flatten()
        .all(|&c| c >= m - 1e-6 && c <= 1.0 - m + 1e-6));
    let mpm = s.mpm_config();
    assert_eq!((mpm.grid_res, mpm.substeps_per_frame), (32, need));
    // The look-at camera sees the lattice centre at the principal point,
    // and a point above it higher in the image (smaller v).
    let c = &s.views[0].camera;
    let project = |p: Vec3| {
        let q = c.rotation * p + c.translation;
        (c.fx * q.x / q.z + c.cx, c.fy * q.y / q.z + c.cy)
    };
    let (u, v) = project(Vec3::splat(0.75));
    assert!((u - 8.0).abs() < 1e-4 && (v - 6.0).abs() < 1e-4, "{u} {v}");
    assert!(project(Vec3::new(0.75, 0.75, 1.5)).1 < 6.0);
    assert!(
        project(Vec3::new(1.5, 0.75, 0.75)).0 > 8.0,
        "+x is to the right"
    );
    assert!(s.frame_count().is_none());
}

#[test]
fn gravity_and_regions_convert_to_normalised_units() {
    let f = Fixture::new();
    let toml = format!(
        "{BASE}\n[simulation]\nbox = {{ min = [-1.0, -1.0, -1.0], max = [3.0, 3.0, 3.0] }}\n\
         gravity = [0.0, 0.0, -8.0]\nsubsteps = 500\n\
         [regions]\nsimulated = [{{ min = [-0.1, -0.1, -0.1], max = [1.1, 1.6, 1.6] }}]\n\
         anchored = [{{ min = [-0.1, -0.1, -0.1], max = [1.6, 1.6, 0.1] }}]\n"
    );
    let s = f.load(&toml).unwrap();
    assert_eq!(s.gravity_normalised(), [0.0, 0.0, -2.0]);
    assert_eq!(s.mpm_config().gravity, [0.0, 0.0, -2.0]);
    assert_eq!(s.simulation.substeps, 500);
    // x ∈ {0, 0.5, 1} simulated: 48 splats; anchored: those with z = 0 among them.
    assert_eq!(s.simulated_indices().len(), 48);
    assert_eq!(s.anchored_indices().len(), 12);
    assert!(s.anchored.iter().zip(&s.simulated).all(|(a, s)| !a || *s));
    assert_eq!(
        s.simulation.sim_box.to_normalised([1.0, 1.0, 1.0]),
        [0.5, 0.5, 0.5]
    );
}

#[test]
fn point_set_region() {
    let f = Fixture::new();
    let mut pts = Gaussians::default();
    pts.means.push([0.0, 0.0, 0.0]);
    pts.means.push([1.5, 1.5, 1.5]);
    pts.rotations = vec![[1.0, 0.0, 0.0, 0.0]; 2];
    pts.log_scales = vec![[0.0; 3]; 2];
    pts.opacity_logits = vec![0.0; 2];
    pts.sh = vec![[0.0; 3]; 2];
    let p = f.path("feet.ply");
    PlyData::from_gaussians(&pts, &p).write(&p, &[]).unwrap();
    let toml =
        format!("{BASE}\n[regions]\nanchored = [{{ points = \"feet.ply\", radius = 0.6 }}]\n");
    let s = f.load(&toml).unwrap();
    // Each corner and its 3 lattice neighbours at distance 0.5.
    assert_eq!(s.anchored_indices().len(), 8);
    let toml =
        format!("{BASE}\n[regions]\nanchored = [{{ points = \"none.ply\", radius = 0.6 }}]\n");
    let e = expect_err(f.load(&toml), "regions.anchored[0].points");
    assert!(matches!(e, SceneError::MissingFile { .. }));
}

#[test]
fn unknown_field_is_an_error() {
    let f = Fixture::new();
    let e = expect_err(f.load(&BASE.replace("fx = 20.0", "fxx = 20.0")), "fxx");
    assert!(e.to_string().contains("`views[0].camera.fxx`"), "{e}");
    assert!(e.to_string().contains("fix: remove or rename `fxx`"), "{e}");
    assert!(matches!(e, SceneError::Parse { .. }));
    let multiline = format!(
        "{BASE}\n[simulation]\nbox = {{ min = [\n  0.0,\n  0.0, 0.0], max = [3.0, 3.0, 3.0] }}\n\
         gravity = [\n[0.0],\n]\n"
    );
    let e = expect_err(f.load(&multiline), "expected f64");
    assert!(e.to_string().contains("in `simulation`"), "{e}");
    let e = expect_err(f.load(&format!("{BASE}\n[simulation]\ngrid = 3\n")), "grid");
    assert!(matches!(e, SceneError::Parse { .. }));
}

/// An unknown top-level table is named itself (not as a field of the table
/// before it), and a file nested deeper than any scene is refused naming
/// the line, at once, before the parser's recursion limit (which names
/// none).
#[test]
fn an_unknown_table_and_absurd_nesting_are_named_with_the_fix() {
    let f = Fixture::new();
    let e = expect_err(
        f.load(&format!(
            "{BASE}\n[output]\ndirectory = \"out\"\n\n[extra]\nx = 1\n"
        )),
        "extra",
    );
    let text = e.to_string();
    assert!(
        text.contains("`[extra]`") && text.contains("fix: remove or rename the table `[extra]`"),
        "{text}"
    );
    assert!(!text.contains("in `output`"), "{text}");
    let deep = format!(
        "{BASE}\nx = {}1{}\n",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let started = std::time::Instant::now();
    let text = expect_err(f.load(&deep), "nested").to_string();
    let line = BASE.lines().count() + 2;
    assert!(
        text.contains(&format!("line {line}:")) && text.contains("fix:"),
        "{}",
        &text[..text.len().min(400)]
    );
    assert!(started.elapsed().as_secs_f64() < 1.0);
    let dotted = format!("{BASE}\n{} = 1\n", vec!["a"; 20_000].join("."));
    let text = expect_err(f.load(&dotted), "nested").to_string();
    assert!(
        text.contains("nested") && text.len() < 600,
        "{}",
        &text[..text.len().min(400)]
    );
}

#[test]
fn missing_splat_file_is_an_error() {
    let f = Fixture::new();
    let e = expect_err(
        f.load(&BASE.replace("splats.ply", "nope.ply")),
        "gaussians.path",
    );
    assert!(matches!(e, SceneError::MissingFile { .. }));
    assert!(e.to_string().contains("nope.ply"));
}

#[test]
fn inverted_boxes_are_errors() {
    let f = Fixture::new();
    let toml = format!(
        "{BASE}\n[simulation]\nbox = {{ min = [0.0, 0.0, 0.0], max = [2.0, -2.0, 2.0] }}\n"
    );
    assert!(matches!(
        expect_err(f.load(&toml), "simulation.box"),
        SceneError::InvertedBox { .. }
    ));
    let toml = format!(
        "{BASE}\n[regions]\nanchored = [{{ min = [1.0, 0.0, 0.0], max = [0.0, 1.0, 1.0] }}]\n"
    );
    assert!(matches!(
        expect_err(f.load(&toml), "regions.anchored[0]"),
        SceneError::InvertedBox { .. }
    ));
    let toml =
        format!("{BASE}\n[simulation]\nbox = {{ min = [0.0, 0.0, 0.0], max = [2.0, 3.0, 2.0] }}\n");
    assert!(expect_err(f.load(&toml), "simulation.box")
        .to_string()
        .contains("cube"));
    let toml =
        format!("{BASE}\n[simulation]\nbox = {{ min = [0.0, 0.0, 0.0], max = [1.5, 1.5, 1.5] }}\n");
    assert!(expect_err(f.load(&toml), "simulation.box")
        .to_string()
        .contains("outside"));
    let toml = format!("{BASE}\n[simulation]\nbox = \"tight\"\n");
    assert!(matches!(
        expect_err(f.load(&toml), "auto"),
        SceneError::Parse { .. }
    ));
}

#[test]
fn frames_of_the_wrong_size_are_errors() {
    let f = Fixture::new();
    f.frames("frames", 4, 16, 12);
    f.frames("small", 2, 8, 6);
    let ok = BASE.replace("[views.camera]", "frames = \"frames\"\n[views.camera]");
    let s = f.load(&ok).unwrap();
    assert_eq!(s.frame_count(), Some(4));
    let fs = s.views[0].frames.as_ref().unwrap();
    assert_eq!(fs.load(1).unwrap().pixels.len(), 16 * 12);
    // Stage 1's default count of 4 (frames 1–3) is all 4 frames; stage 2
    // may take all of them too, but not more than there are.
    let all = format!("{ok}\n[fit.stiffness]\nframes = 4\n");
    assert_eq!(f.load(&all).unwrap().fit.stiffness.fitted_frames(4), 1..=3);
    let too_many = format!("{ok}\n[fit.stiffness]\nframes = 5\n");
    let e = expect_err(f.load(&too_many), "fit.stiffness.frames");
    assert!(matches!(e, SceneError::OutOfRange { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("at most the 4 reference frame(s) per view")
            && e.to_string().contains("4 fits frames 1–3"),
        "{e}"
    );
    let bad = BASE.replace("[views.camera]", "frames = \"small/*.png\"\n[views.camera]");
    let e = expect_err(f.load(&bad), "views[0].frames");
    let msg = e.to_string();
    assert!(
        msg.contains("f0.png") && msg.contains("8×6") && msg.contains("16×12"),
        "{msg}"
    );
    let missing = BASE.replace("[views.camera]", "frames = \"absent\"\n[views.camera]");
    assert!(matches!(
        expect_err(f.load(&missing), "views[0].frames"),
        SceneError::MissingFile { .. }
    ));
    let empty = BASE.replace(
        "[views.camera]",
        "frames = \"frames/*.jpg\"\n[views.camera]",
    );
    assert!(matches!(
        expect_err(f.load(&empty), "views[0].frames"),
        SceneError::Frames { .. }
    ));
    // An unreadable frame.
    std::fs::write(f.path("frames/f2.png"), b"not a png").unwrap();
    assert!(f.path("frames/f3.png").exists());
    let e = expect_err(f.load(&ok), "views[0].frames");
    assert!(e.to_string().contains("f2.png"));
}

#[test]
fn mismatched_frame_counts_are_errors() {
    let f = Fixture::new();
    f.frames("a", 3, 16, 12);
    f.frames("b", 2, 16, 12);
    let view = |frames: &str| {
        format!(
            "[[views]]\nframes = \"{frames}\"\n[views.camera]\nwidth = 16\nheight = 12\nfx = 20.0\n\
             rotation = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]\ntranslation = [-0.75, -0.75, 4.0]\n"
        )
    };
    let toml = format!(
        "[gaussians]\npath = \"splats.ply\"\n{}{}",
        view("a"),
        view("b")
    );
    let e = expect_err(f.load(&toml), "views[1].frames");
    assert!(matches!(
        e,
        SceneError::FrameCount {
            expected: 3,
            found: 2,
            ..
        }
    ));
}

#[test]
fn out_of_range_numbers_are_errors() {
    let f = Fixture::new();
    let cases = [
        ("[material]\npoisson_ratio = 0.5", "material.poisson_ratio"),
        ("[material]\npoisson_ratio = -0.2", "material.poisson_ratio"),
        ("[material]\ndensity = -1.0", "material.density"),
        ("[reference]\nfps = 0.0", "reference.fps"),
        ("[simulation]\ngrid_res = 0", "simulation.grid_res"),
        ("[drivers]\nk = 0", "drivers.k"),
        (
            "[fit.velocity]\nlearning_rate = -1.0",
            "fit.velocity.learning_rate",
        ),
    ];
    for (section, field) in cases {
        let toml = if section.starts_with("[material]") {
            BASE.replace("[material]", section)
        } else {
            format!("{BASE}\n{section}\n")
        };
        assert!(
            matches!(
                expect_err(f.load(&toml), field),
                SceneError::OutOfRange { .. }
            ),
            "{field}"
        );
    }
    let e = expect_err(
        f.load(&BASE.replace("fx = 20.0", "fx = 0.0")),
        "views[0].camera.fx",
    );
    assert!(matches!(e, SceneError::OutOfRange { .. }));
    let e = expect_err(
        f.load(&BASE.replace("[3.0, 5.0]", "[5.0, 3.0]")),
        "material.log10_youngs_range",
    );
    assert!(matches!(e, SceneError::InvertedRange { .. }));
}

#[test]
fn camera_mistakes_name_the_field() {
    let f = Fixture::new();
    let both = BASE.replace(
        "up = [0.0, 0.0, 1.0]",
        "up = [0.0, 0.0, 1.0]\ntranslation = [0.0, 0.0, 1.0]",
    );
    expect_err(f.load(&both), "views[0].camera.rotation");
    let no_up = BASE.replace("up = [0.0, 0.0, 1.0]", "");
    expect_err(f.load(&no_up), "views[0].camera.up");
    let parallel = BASE.replace("up = [0.0, 0.0, 1.0]", "up = [0.0, 1.0, 0.0]");
    expect_err(f.load(&parallel), "views[0].camera.up");
    let skew = BASE.replace(
        "position = [0.75, -4.0, 0.75]\nlook_at = [0.75, 0.75, 0.75]\nup = [0.0, 0.0, 1.0]",
        "rotation = [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]\ntranslation = [0.0, 0.0, 4.0]",
    );
    expect_err(f.load(&skew), "views[0].camera.rotation");
    expect_err(f.load("[gaussians]\npath = \"splats.ply\"\n"), "views");
}

#[test]
fn nothing_simulated_or_nothing_free_is_an_error() {
    let f = Fixture::new();
    let toml = format!(
        "{BASE}\n[regions]\nsimulated = [{{ min = [5.0, 5.0, 5.0], max = [6.0, 6.0, 6.0] }}]\n"
    );
    assert!(matches!(
        expect_err(f.load(&toml), "regions.simulated"),
        SceneError::NothingSimulated { .. }
    ));
    let toml = format!(
        "{BASE}\n[regions]\nanchored = [{{ min = [-1.0, -1.0, -1.0], max = [2.0, 2.0, 2.0] }}]\n"
    );
    assert!(matches!(
        expect_err(f.load(&toml), "regions.anchored"),
        SceneError::NothingFree { .. }
    ));
}

#[test]
fn too_few_substeps_names_the_substeps_needed() {
    let f = Fixture::new();
    let need = min_substeps_per_frame(30.0, 1e5, 0.3, 2000.0, 1.0 / 32.0);
    let toml = format!("{BASE}\n[simulation]\nsubsteps = {}\n", need - 1);
    let e = expect_err(f.load(&toml), "simulation.substeps");
    assert!(matches!(e, SceneError::TooFewSubsteps { needed, .. } if needed == need));
    assert!(e.to_string().contains(&format!("at least {need}")), "{e}");
    let toml = format!("{BASE}\n[simulation]\nsubsteps = {need}\n");
    f.load(&toml).unwrap();
}

#[test]
fn nerfstudio_transforms_give_an_opencv_world_to_camera() {
    let f = Fixture::new();
    // OpenGL camera-to-world: a camera at (0.75, 0.75, 5) looking down −z, y up.
    let json = r#"{
        "fl_x": 20.0, "fl_y": 22.0, "cx": 8.0, "cy": 6.0, "w": 16, "h": 12,
        "frames": [
            {"file_path": "images/a.png", "transform_matrix": [[1,0,0,9],[0,1,0,9],[0,0,1,9],[0,0,0,1]]},
            {"file_path": "images/b.png", "w": 16, "h": 12,
             "transform_matrix": [[1,0,0,0.75],[0,1,0,0.75],[0,0,1,5],[0,0,0,1]]}
        ]
    }"#;
    std::fs::write(f.path("transforms.json"), json).unwrap();
    let cam = "[views.camera]\ntransforms = \"transforms.json\"\nframe = 1\n";
    let toml = format!("[gaussians]\npath = \"splats.ply\"\n[[views]]\n{cam}");
    let s = f.load(&toml).unwrap();
    let c = &s.views[0].camera;
    assert_eq!((c.width, c.height, c.fx, c.fy), (16, 12, 20.0, 22.0));
    assert!((c.position() - Vec3::new(0.75, 0.75, 5.0)).length() < 1e-6);
    let cam_of = |p: Vec3| c.rotation * p + c.translation;
    // The lattice centre is straight ahead (+z in OpenCV), world +y is image up (−y).
    let centre = cam_of(Vec3::new(0.75, 0.75, 0.75));
    assert!(
        (centre - Vec3::new(0.0, 0.0, 4.25)).length() < 1e-5,
        "{centre}"
    );
    assert!(cam_of(Vec3::new(0.75, 1.75, 0.75)).y < 0.0);
    assert!(cam_of(Vec3::new(1.75, 0.75, 0.75)).x > 0.0);
    let bad = toml.replace("frame = 1", "frame = 7");
    let e = expect_err(f.load(&bad), "views[0].camera.transforms");
    assert!(e.to_string().contains("frame index 7"), "{e}");
    let mixed = toml.replace("frame = 1", "frame = 1\nfx = 3.0");
    expect_err(f.load(&mixed), "views[0].camera.fx");
}

#[test]
fn the_demo_scene_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/fox.toml");
    let s = Scene::load(&path).unwrap();
    assert_eq!(s.gaussians().len(), 50_000);
    let sim = s.simulated_indices().len();
    let anchored = s.anchored_indices().len();
    assert!(sim > 10_000 && sim < 20_000, "{sim}");
    assert!(anchored > 1_000 && anchored < sim / 2, "{anchored}");
    assert!(s.simulation.substeps <= 100, "{}", s.simulation.substeps);
    // Every free simulated splat (the part that moves) projects into the
    // image of at least one view.
    for i in s.simulated_indices() {
        if s.anchored[i as usize] {
            continue;
        }
        let p = Vec3::from(s.gaussians().means[i as usize]);
        let seen = s.views.iter().any(|view| {
            let c = &view.camera;
            let q = c.rotation * p + c.translation;
            let (u, v) = (c.fx * q.x / q.z + c.cx, c.fy * q.y / q.z + c.cy);
            q.z > 0.0 && u >= 0.0 && v >= 0.0 && u < c.width as f32 && v < c.height as f32
        });
        assert!(seen, "splat {i} is outside every view");
    }
}

#[test]
fn the_documented_example_matches_the_schema() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scene.md"))
        .unwrap();
    let example = doc
        .find("## Complete example")
        .expect("the complete example");
    let fence = example + doc[example..].find("```toml").expect("an example block");
    let start = fence + doc[fence..].find('\n').unwrap() + 1;
    let end = start + doc[start..].find("```").unwrap();
    let config: physfit::scene::SceneConfig = toml::from_str(&doc[start..end]).unwrap();
    assert_eq!(config.views.len(), 2);
    let side = config.views[1].color_correction.as_ref().unwrap();
    assert_eq!(side.gain.as_deref(), Some(&[1.0, 1.0, 1.0][..]));
    assert_eq!(config.simulation.substeps, Some(100));
    assert_eq!(config.regions.anchored.len(), 1);
    assert_eq!((config.fit.rounds, config.fit.checkpoint_every), (3, 10));
    assert_eq!(
        (config.fit.scan.points, config.fit.scan.velocity_evaluations),
        (5, 4)
    );
    let names: Vec<&str> = config
        .fit
        .stiffness
        .regions
        .as_ref()
        .unwrap()
        .regions
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(names, ["tail", "body"]);
}

#[test]
fn view_names_must_be_safe_and_unique_file_names() {
    let fx = Fixture::new();
    let named =
        |name: &str| BASE.replace("[[views]]\n", &format!("[[views]]\nname = \"{name}\"\n"));
    expect_err(fx.load(&named("../escape")), "views[0].name");
    expect_err(fx.load(&named("a/b")), "views[0].name");
    assert_eq!(
        fx.load(&named("front-1.hi")).unwrap().views[0].name,
        "front-1.hi"
    );
    let camera = &BASE[BASE.find("[[views]]").unwrap()..BASE.find("[material]").unwrap()];
    let camera = camera.replace("[[views]]\n", "[[views]]\nname = \"front\"\n");
    let twice = format!("{}\n{camera}", named("front"));
    expect_err(fx.load(&twice), "views[1].name");
}

#[test]
fn fit_stages_inherit_and_override_loss_weights() {
    let fx = Fixture::new();
    let toml = format!(
        "{BASE}\n[fit]\nw_l1 = 0.2\nw_ssim = 0.8\ntv_weight = 0.05\n[fit.stiffness]\ntv_weight = 0.5\nw_ssim = 0.0\n"
    );
    let fit = fx.load(&toml).unwrap().fit;
    assert_eq!(
        (
            fit.velocity.w_l1,
            fit.velocity.w_ssim,
            fit.velocity.tv_weight
        ),
        (0.2, 0.8, 0.05)
    );
    assert_eq!(
        (
            fit.stiffness.w_l1,
            fit.stiffness.w_ssim,
            fit.stiffness.tv_weight
        ),
        (0.2, 0.0, 0.5)
    );
    let both_zero = format!("{BASE}\n[fit.velocity]\nw_l1 = 0.0\nw_ssim = 0.0\n");
    expect_err(fx.load(&both_zero), "fit.velocity.w_ssim");
    let negative = format!("{BASE}\n[fit.stiffness]\ntv_weight = -1.0\n");
    expect_err(fx.load(&negative), "fit.stiffness.tv_weight");
}

/// `fit.*.frames` is a frame count with the rest frame 0 included: 4 fits
/// frames 1–3, and a count below 2 (nothing after the rest frame) is a
/// typed error naming the key, the file and the convention.
#[test]
fn stage_frame_counts_include_the_rest_frame() {
    let fx = Fixture::new();
    let four = format!("{BASE}\n[fit.velocity]\nframes = 4\n[fit.stiffness]\nframes = 2\n");
    let fit = fx.load(&four).unwrap().fit;
    assert_eq!(fit.velocity.frames, Some(4));
    assert_eq!(
        fit.velocity.fitted_frames(12).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(fit.stiffness.fitted_frames(12).collect::<Vec<_>>(), [1]);
    // The fit's plan over 6 reference frames per view: stage 1 (and the
    // scan's velocity fits) on frames 1–3, stage 2 on frame 1; a stage
    // without a count on frames 1–5, never the rest frame 0.
    let scene = fx.load(&four).unwrap();
    let plan = plan_stages(&scene, &[0], 6, 1, StageChoice::Both);
    let frames_of = |kind: StageKind| -> Vec<usize> {
        let stage = plan.iter().find(|p| p.kind == kind).unwrap();
        stage.selection.frames.clone()
    };
    assert_eq!(frames_of(StageKind::Velocity), [1, 2, 3]);
    assert_eq!(frames_of(StageKind::Stiffness), [1]);
    let scan = plan.iter().find(|p| p.kind == StageKind::Scan).unwrap();
    assert_eq!(
        scan.scan.as_ref().unwrap().velocity_selection.frames,
        [1, 2, 3]
    );
    // The scan hands its velocity fit's curvature to round 1's velocity
    // stage, converted by the scan's first velocity step into the stage's
    // coordinates, which the stage's own first step scales: one value.
    let velocity = plan.iter().find(|p| p.kind == StageKind::Velocity).unwrap();
    assert_eq!(
        scan.scan.as_ref().unwrap().first_velocity_step,
        velocity.first_step
    );
    let default = fx.load(BASE).unwrap();
    let plan = plan_stages(&default, &[0], 6, 1, StageChoice::Both);
    assert_eq!(plan.last().unwrap().kind, StageKind::Stiffness);
    assert_eq!(plan.last().unwrap().selection.frames, [1, 2, 3, 4, 5]);
    for (table, n) in [("velocity", 1), ("velocity", 0), ("stiffness", 1)] {
        let toml = format!("{BASE}\n[fit.{table}]\nframes = {n}\n");
        let key = format!("fit.{table}.frames");
        let e = expect_err(fx.load(&toml), &key);
        match &e {
            SceneError::OutOfRange { field, value, .. } => {
                assert_eq!(
                    (field.as_str(), value.as_str()),
                    (key.as_str(), &*n.to_string())
                )
            }
            other => panic!("{other:?}"),
        }
        let msg = e.to_string();
        assert!(
            msg.contains("counts the rest frame 0") && msg.contains("4 fits frames 1–3"),
            "{msg}"
        );
    }
}

/// The scan's first velocity fit, started cold, gets the velocity stage's
/// cap (every later candidate starts from it) when that stage is L-BFGS's
/// (a velocity of few parameters), and never fewer than twice a warm
/// candidate's evaluations; a velocity fitted by Adam (per driver, or more
/// regions than L-BFGS takes) keeps twice. The plan carries the cap.
#[test]
fn the_scans_cold_velocity_fit_gets_the_velocity_stages_cap() {
    let fx = Fixture::new();
    let capped = format!("{BASE}\n[fit.velocity]\nfield = \"global\"\niterations = 40\n");
    let scene = fx.load(&capped).unwrap();
    let plan = plan_stages(&scene, &[0], 6, 1, StageChoice::Both);
    let scan = plan.iter().find(|p| p.kind == StageKind::Scan).unwrap();
    let scan = scan.scan.as_ref().unwrap();
    assert_eq!(
        (scan.velocity_evaluations, scan.velocity_stage_cap),
        (4, 40)
    );
    // A global velocity (3 unknowns), a rigid one (6): L-BFGS stages.
    assert_eq!(cold_velocity_evaluations(4, 40, 3), 40);
    assert_eq!(cold_velocity_evaluations(3, 5, 6), 6);
    // Per driver, or 6 regions × 3 components: Adam stages.
    assert_eq!(cold_velocity_evaluations(4, 40, 3000), 8);
    assert_eq!(cold_velocity_evaluations(4, 40, 18), 8);
}

/// A fit of ν scans it after E: `fit.scan.poisson_points` midpoints of
/// equal parts of `poisson_range` (never its ends, where ν's map is
/// flat), none when ν is held or the count is 0; the scan's most
/// candidates count both grids and their parabolas.
#[test]
fn the_scan_tries_poissons_ratio_at_midpoints_of_its_range_when_it_is_fitted() {
    let fx = Fixture::new();
    let with = |fit: &str| {
        let scene = fx.load(&format!("{BASE}\n{fit}")).unwrap();
        let plan = plan_stages(&scene, &[0], 6, 1, StageChoice::Both);
        plan[0].scan.clone().unwrap()
    };
    let held = with("");
    assert!(held.poisson_candidates.is_empty());
    assert_eq!(held.most_candidates(), 6);
    let fitted = with(
        "[fit.stiffness]\nfield = \"global\"\npoisson = \"global\"\npoisson_range = [0.0, 0.4]\n",
    );
    let expected = [0.04, 0.12, 0.2, 0.28, 0.36];
    assert_eq!(fitted.poisson_candidates.len(), 5);
    for (got, want) in fitted.poisson_candidates.iter().zip(expected) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    assert_eq!(fitted.most_candidates(), 12);
    let three = with(
        "[fit.scan]\npoisson_points = 2\n[fit.stiffness]\nfield = \"global\"\npoisson = \"global\"\n",
    );
    assert_eq!(three.poisson_candidates.len(), 2);
    assert!((three.poisson_candidates[0] - 0.1225).abs() < 1e-12);
    let off = with(
        "[fit.scan]\npoisson_points = 0\n[fit.stiffness]\nfield = \"global\"\npoisson = \"global\"\n",
    );
    assert!(off.poisson_candidates.is_empty());
    let refused = fx.load(&format!("{BASE}\n[fit.scan]\npoisson_points = 1\n"));
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("fit.scan.poisson_points"), "{message}");
}

/// A scene in `scene_dir` whose every path field (`gaussians.path`,
/// `views.frames` as a directory and as a glob, `views.camera.transforms`,
/// a `points` region, `output.directory`) points into `data` through
/// `prefix`: the absolute path of `data`, or a path relative to the scene's
/// directory.
fn scene_with_paths(prefix: &str, frames_as_glob: bool) -> String {
    let frames = if frames_as_glob {
        format!("{prefix}/clip/f*.png")
    } else {
        format!("{prefix}/clip")
    };
    format!(
        r#"
[gaussians]
path = "{prefix}/splats.ply"

[[views]]
frames = "{frames}"
[views.camera]
transforms = "{prefix}/transforms.json"
frame = 0

[regions]
anchored = [{{ points = "{prefix}/feet.ply", radius = 0.6 }}]

[output]
directory = "{prefix}/out"

[material]
log10_youngs_range = [3.0, 5.0]
"#
    )
}

#[test]
fn every_path_field_takes_absolute_and_relative_paths() {
    // The data lives in one directory, the scene file in a sibling one.
    let data = Fixture::new();
    data.frames("clip", 4, 16, 12);
    let json = r#"{"fl_x": 20.0, "fl_y": 20.0, "cx": 8.0, "cy": 6.0, "w": 16, "h": 12,
        "frames": [{"file_path": "clip/f0.png",
                    "transform_matrix": [[1,0,0,0.75],[0,1,0,0.75],[0,0,1,5],[0,0,0,1]]}]}"#;
    std::fs::write(data.path("transforms.json"), json).unwrap();
    let mut feet = common::splat_lattice(1);
    feet.means[0] = [0.0, 0.0, 0.0];
    let p = data.path("feet.ply");
    PlyData::from_gaussians(&feet, &p).write(&p, &[]).unwrap();
    let scene_dir = tempfile::tempdir().unwrap();
    let scene_file = scene_dir.path().join("scene.toml");
    let absolute = data.dir.path().to_str().unwrap().to_string();
    let relative = format!(
        "../{}",
        data.dir.path().file_name().unwrap().to_str().unwrap()
    );
    assert!(Path::new(&absolute).is_absolute());
    for prefix in [&absolute, &relative] {
        for glob in [false, true] {
            std::fs::write(&scene_file, scene_with_paths(prefix, glob)).unwrap();
            let s = Scene::load(&scene_file)
                .unwrap_or_else(|e| panic!("prefix {prefix}, glob {glob}: {e}"));
            assert_eq!(s.gaussians().len(), 64);
            assert_eq!(s.frame_count(), Some(4), "prefix {prefix}, glob {glob}");
            let frames = s.views[0].frames.as_ref().unwrap();
            assert!(
                frames.paths.iter().all(|p| p.exists()),
                "{:?}",
                frames.paths
            );
            // The corner splat at the origin and its 3 neighbours at 0.5.
            assert_eq!(s.anchored_indices().len(), 4);
            assert_eq!(
                s.output_dir.parent().unwrap().canonicalize().unwrap(),
                data.dir.path().canonicalize().unwrap(),
                "output dir {}",
                s.output_dir.display()
            );
        }
    }
    // The absolute glob is used as written, not joined onto the scene's
    // directory (which looked for `<scene dir>/<data dir>/clip/f*.png`).
    std::fs::write(&scene_file, scene_with_paths(&absolute, true)).unwrap();
    let s = Scene::load(&scene_file).unwrap();
    let first = &s.views[0].frames.as_ref().unwrap().paths[0];
    assert_eq!(first, &data.path("clip/f0.png"));
}

#[test]
fn a_frames_error_says_its_message_once() {
    // `physfit` prints errors with their chain (`{:#}`): the frame error
    // must not also be the scene error's source, or its text appears twice.
    let f = Fixture::new();
    let empty = BASE.replace(
        "[views.camera]",
        "frames = \"nothing/*.png\"\n[views.camera]",
    );
    let e = expect_err(f.load(&empty), "views[0].frames");
    let shown = format!("{:#}", anyhow::Error::from(e));
    assert_eq!(
        shown.matches("no PNG or JPEG frames found").count(),
        1,
        "{shown}"
    );
    let missing_ply = BASE.replace("splats.ply", "absent.ply");
    let shown = match f.load(&missing_ply) {
        Err(e) => format!("{:#}", anyhow::Error::from(e)),
        Ok(_) => panic!("a missing .ply must be refused"),
    };
    assert_eq!(shown.matches("absent.ply").count(), 1, "{shown}");
}

/// `BASE` with `views[0].color_correction = { … }` set to `value`.
fn with_color_correction(value: &str) -> String {
    BASE.replace(
        "[views.camera]",
        &format!("color_correction = {value}\n[views.camera]"),
    )
}

#[test]
fn color_correction_resolves_and_defaults_to_the_identity() {
    let f = Fixture::new();
    let plain = f.load(BASE).unwrap();
    assert_eq!(plain.views[0].color_correction, ColorCorrection::IDENTITY);
    assert!(plain.views[0].color_correction.is_identity());
    assert_eq!(ColorCorrection::default(), ColorCorrection::IDENTITY);

    let s = f
        .load(&with_color_correction(
            "{ gain = [1.25, 0.5, 2], offset = [-0.1, 0.0, 0.05] }",
        ))
        .unwrap();
    let c = s.views[0].color_correction;
    assert_eq!(c.gain, [1.25, 0.5, 2.0]);
    assert_eq!(c.offset, [-0.1, 0.0, 0.05]);
    assert!(!c.is_identity());
    // Host application: a·c + b per channel, clamped to [0, 1].
    let got = c.apply([0.4, 0.4, 0.4]);
    for (g, want) in got.iter().zip([0.4, 0.2, 0.85]) {
        assert!((g - want).abs() <= 1e-6, "{got:?}");
    }
    assert_eq!(c.apply([0.0, 1.0, 0.9]), [0.0, 0.5, 1.0]);
    // Either part alone: the other is the identity's.
    let gain_only = f
        .load(&with_color_correction("{ gain = [2.0, 2.0, 2.0] }"))
        .unwrap();
    assert_eq!(
        gain_only.views[0].color_correction,
        ColorCorrection {
            gain: [2.0; 3],
            offset: [0.0; 3]
        }
    );
    // A table of its own reads the same.
    let table = BASE.replace(
        "[views.camera]",
        "[views.color_correction]\ngain = [1.0, 1.0, 1.0]\noffset = [0.1, 0.2, 0.3]\n\n[views.camera]",
    );
    assert_eq!(
        f.load(&table).unwrap().views[0].color_correction.offset,
        [0.1, 0.2, 0.3]
    );
}

#[test]
fn color_correction_mistakes_name_the_field_and_the_fix() {
    let f = Fixture::new();
    for (value, field) in [
        (
            "{ gain = [0.0, 1.0, 1.0] }",
            "views[0].color_correction.gain",
        ),
        (
            "{ gain = [1.0, -0.5, 1.0] }",
            "views[0].color_correction.gain",
        ),
        (
            "{ gain = [1.0, 1.0, nan] }",
            "views[0].color_correction.gain",
        ),
        (
            "{ gain = [1.0, 1.0, inf] }",
            "views[0].color_correction.gain",
        ),
        (
            "{ gain = [1e39, 1.0, 1.0] }",
            "views[0].color_correction.gain",
        ),
        (
            "{ offset = [0.0, nan, 0.0] }",
            "views[0].color_correction.offset",
        ),
    ] {
        let e = expect_err(f.load(&with_color_correction(value)), field);
        assert!(matches!(e, SceneError::OutOfRange { .. }), "{value}: {e}");
        assert!(e.to_string().contains("finite"), "{value}: {e}");
    }
    for (value, field) in [
        ("{ gain = [1.0, 1.0] }", "views[0].color_correction.gain"),
        (
            "{ offset = [0.0, 0.0, 0.0, 0.0] }",
            "views[0].color_correction.offset",
        ),
    ] {
        let e = expect_err(f.load(&with_color_correction(value)), field);
        assert!(matches!(e, SceneError::Invalid { .. }), "{value}: {e}");
        assert!(e.to_string().contains("expected 3"), "{value}: {e}");
        assert!(e.to_string().contains("[r, g, b]"), "{value}: {e}");
    }
    // An unknown key is a parse error naming it.
    let e = f
        .load(&with_color_correction("{ gamma = [1.0, 1.0, 1.0] }"))
        .unwrap_err();
    assert!(e.to_string().contains("gamma"), "{e}");
}

/// A scene given as a value (a parsed scene.toml with a field changed)
/// validates as its file would: the same scene, and a bad value refused
/// with the file's message, naming the name given.
#[test]
fn a_scene_built_from_a_value_is_validated_as_its_file() {
    use physfit::scene::SceneConfig;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let path = dir.join("fox.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let loaded = Scene::load(&path).unwrap();
    let config: SceneConfig = toml::from_str(&text).unwrap();
    let name = Path::new("fox (in memory)");
    let built = Scene::from_config(config.clone(), &dir, name).unwrap();
    assert_eq!(
        built.gaussians().means.len(),
        loaded.gaussians().means.len()
    );
    assert_eq!(built.simulated, loaded.simulated);
    assert_eq!(built.anchored, loaded.anchored);
    assert_eq!(built.simulation.substeps, loaded.simulation.substeps);
    assert_eq!(built.views.len(), loaded.views.len());
    assert_eq!(format!("{:?}", built.fit), format!("{:?}", loaded.fit));

    let mut bad = config;
    bad.simulation.grid_res = 0;
    let e = Scene::from_config(bad, &dir, name).unwrap_err().to_string();
    assert!(
        e.starts_with("fox (in memory): `simulation.grid_res` = 0: must be ≥ 10"),
        "{e}"
    );
}
