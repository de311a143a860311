//! `physfit render --params` on a tiny fitted scene: PNG
//! sequences and a looping GIF of N frames at the requested size, an orbit
//! whose frames differ and keep the object in the image, the fitted motion
//! reproduced (the fit's own rollout and renders, within the run-to-run
//! tolerance), stiffness colours that are the colour map's at each part's
//! value, beside a colour bar of the map, and refusals before anything runs: another scene's drivers,
//! a motion faster than the velocity bound; a blow-up writes nothing.
//! A floor (`--ground`, or the scene's own collider) holds a dropped object
//! that without it falls past. The same run as a library call
//! (`render_motion`) renders in memory, writes what the command writes,
//! stops when asked and refuses before running.

use crate::common;
use crate::common::cli::ok;

use std::path::{Path, PathBuf};
use std::process::Command;

use physfit::drive::DriverSet;
use physfit::fit::{FitProblem, FitProblemOptions, Parameters};
use physfit::forward::{
    render_motion, FittedMotion, ForwardError, ForwardSetup, MotionColouring, MotionOptions,
    SceneRenderer,
};
use physfit::interact::{InteractionFlags, Interactions};
use physfit::io::Frame;
use physfit::output::FittedDrivers;
use physfit::scene::Scene;

const EXTRA: &str =
    "youngs_modulus = 1.0e4\n\n[simulation]\ngrid_res = 16\n\n[drivers]\ncount = 16\n";

/// 4³ splats of spacing 0.15 around (0.5, 0.5, 0.5), the scene of
/// `common::scene_with`, and a drivers file of its drivers with a varied
/// log10 E and a sideways v0.
struct Fitted {
    dir: tempfile::TempDir,
    scene: Scene,
    params: PathBuf,
    log10: Vec<f64>,
    velocity: Vec<f64>,
}

fn fitted() -> Fitted {
    fitted_with(EXTRA, 4, 3.8)
}

/// [`fitted`] with `n`³ splats over the same cube, in the scene
/// `common::scene_with` makes with `extra`, log10 E from `log10_low` to
/// 0.4 above it.
fn fitted_with(extra: &str, n: usize, log10_low: f64) -> Fitted {
    let mut means = Vec::new();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let c = |a: usize| 0.275 + 0.45 / (n - 1) as f32 * a as f32;
                means.push([c(i), c(j), c(k)]);
            }
        }
    }
    let (dir, scene) = common::scene_with(&means, extra);
    let scene = scene.unwrap();
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let n = drivers.len();
    let log10: Vec<f64> = (0..n)
        .map(|d| log10_low + 0.4 * d as f64 / n as f64)
        .collect();
    let velocity: Vec<f64> = (0..n).flat_map(|_| [0.4, 0.0, 0.2]).collect();
    let params = dir.path().join("drivers.safetensors");
    FittedDrivers::new(&scene, &drivers, &log10, &velocity, None)
        .unwrap()
        .save(&params)
        .unwrap();
    Fitted {
        dir,
        scene,
        params,
        log10,
        velocity,
    }
}

fn render(f: &Fitted, out: &Path, args: &[&str]) -> std::process::Output {
    render_of(f, &f.params, out, args)
}

/// `physfit render` of the scene with the drivers file `params`.
fn render_of(f: &Fitted, params: &Path, out: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("render")
        .arg(f.dir.path().join("scene.toml"))
        .arg("--params")
        .arg(params)
        .arg("--out")
        .arg(out)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run physfit")
}

fn gif_frames(path: &Path) -> Vec<image::RgbaImage> {
    use image::AnimationDecoder;
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    image::codecs::gif::GifDecoder::new(file)
        .unwrap()
        .into_frames()
        .map(|f| f.unwrap().into_buffer())
        .collect()
}

#[test]
fn render_writes_png_sequences_and_a_looping_gif_of_n_frames() {
    let f = fitted();
    let out = f.dir.path().join("out");
    let stderr = ok(&render(&f, &out, &["--frames", "4", "--size", "32x24"]));
    // 30 fps: 3 cs per frame, shown at 33.33 fps; the run says so.
    assert!(
        stderr.contains("33.33 fps") && stderr.contains("3 cs"),
        "{stderr}"
    );
    let view = out.join("view0");
    for k in 0..4 {
        let png = image::open(view.join(format!("frame_{k:04}.png"))).unwrap();
        assert_eq!((png.width(), png.height()), (32, 24));
    }
    assert!(!view.join("frame_0004.png").exists());
    let gif = gif_frames(&out.join("view0.gif"));
    assert_eq!(gif.len(), 4);
    assert!(gif.iter().all(|g| g.dimensions() == (32, 24)));
    assert_ne!(gif[0], gif[3], "the GIF does not show the motion");
    let bytes = std::fs::read(out.join("view0.gif")).unwrap();
    assert!(
        bytes.windows(11).any(|w| w == b"NETSCAPE2.0"),
        "the GIF does not loop"
    );
    // A non-empty output directory is refused without --force.
    let again = render(&f, &out, &["--frames", "2"]);
    assert!(!again.status.success());
    ok(&render(&f, &out, &["--frames", "2", "--force", "--quiet"]));
    assert!(
        !view.join("frame_0003.png").exists(),
        "--force replaces the directory whole"
    );
}

/// Pixels of `image` that differ from the scene's black background.
fn object_pixels(image: &image::RgbImage) -> Vec<(u32, u32)> {
    image
        .enumerate_pixels()
        .filter(|(_, _, p)| p.0.iter().any(|&c| c > 20))
        .map(|(x, y, _)| (x, y))
        .collect()
}

#[test]
fn orbit_frames_differ_and_keep_the_object_in_the_image() {
    let f = fitted();
    let out = f.dir.path().join("orbit");
    ok(&render(
        &f,
        &out,
        &[
            "--frames",
            "3",
            "--size",
            "64x48",
            "--orbit",
            "60",
            "--from-rest",
            "--camera",
            "view0",
        ],
    ));
    let frames: Vec<image::RgbImage> = (0..3)
        .map(|k| {
            image::open(out.join("view0").join(format!("frame_{k:04}.png")))
                .unwrap()
                .to_rgb8()
        })
        .collect();
    for (k, frame) in frames.iter().enumerate() {
        let pixels = object_pixels(frame);
        assert!(
            pixels.len() > 20,
            "frame {k}: {} object pixels",
            pixels.len()
        );
        let inside = pixels
            .iter()
            .all(|&(x, y)| x > 0 && y > 0 && x < frame.width() - 1 && y < frame.height() - 1);
        assert!(inside, "frame {k}: the object touches the image border");
    }
    assert_ne!(frames[0], frames[1]);
    assert_ne!(frames[1], frames[2]);
}

fn max_difference(a: &[Frame], b: &[Frame]) -> f32 {
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| x.pixels.iter().zip(&y.pixels))
        .flat_map(|(p, q)| (0..4).map(move |c| (p[c] - q[c]).abs()))
        .fold(0.0, f32::max)
}

#[test]
fn without_interactions_the_fitted_rollout_is_reproduced() {
    let f = fitted();
    let ctx = common::gpu();
    let frames = 3;
    let file = FittedDrivers::load(&f.params).unwrap();
    let setup = ForwardSetup::from_fitted(
        &f.scene,
        &file,
        "drivers.safetensors",
        &Interactions::default(),
    )
    .unwrap();
    let mut animation =
        SceneRenderer::simulated(&ctx, &setup, f.scene.gaussians(), f.scene.background).unwrap();
    let camera = f.scene.views[0].camera.clone();
    let mut rendered = Vec::new();
    for k in 0..=frames {
        if k > 0 {
            animation.step(&ctx).unwrap();
        }
        animation.pose(&ctx, k).unwrap();
        rendered.push(animation.render(&ctx, &camera).unwrap());
    }
    // The fit's own rollout of the same E and v0, twice: the run-to-run
    // noise of float atomics.
    let fit_run = || {
        let options = FitProblemOptions::per_driver(&f.scene.fit.velocity);
        let mut problem = FitProblem::new(&ctx, &f.scene, &options).unwrap();
        let params = Parameters {
            log10_youngs: f.log10.clone(),
            velocity: f.velocity.clone(),
            poisson: Vec::new(),
        };
        let rollout = problem.forward_states(&ctx, &params, frames).unwrap();
        (0..=frames)
            .map(|k| problem.render_state(&ctx, &rollout.frames[k], 0).unwrap())
            .collect::<Vec<_>>()
    };
    let (first, second) = (fit_run(), fit_run());
    let noise = max_difference(&first, &second);
    let difference = max_difference(&rendered, &first);
    eprintln!("render vs the fit's rollout: {difference:.2e} (two fit runs: {noise:.2e})");
    assert!(
        difference <= 2.0 * noise + 1e-5,
        "{difference} vs run-to-run {noise}"
    );
    assert!(
        max_difference(&first[..1], &first[frames..]) > 1e-3,
        "nothing moved"
    );
}

/// Cosine of the angle between two colours as RGB vectors: 1 when one is
/// the other scaled (a colour over the black background at any coverage).
fn colour_cosine(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (a, b) = (a.map(f64::from), b.map(f64::from));
    let dot: f64 = (0..3).map(|c| a[c] * b[c]).sum();
    let norm = |v: [f64; 3]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

/// One stiffness for every driver: every splat has the same value, which
/// the colour map shows at its middle (a range of one value), so every
/// pixel of the object is that colour over the black background (the
/// colour scaled by the splats' coverage); and the colour bar beside the
/// picture runs through the map, its end at the top.
#[test]
fn stiffness_colours_are_the_colour_maps_and_side_by_side_needs_references() {
    use physfit::report::colorbar::{COLORBAR_BAR_LEFT, COLORBAR_BAR_WIDTH, COLORBAR_WIDTH};
    use physfit::report::map;
    let f = fitted();
    let drivers = DriverSet::from_scene(&f.scene).unwrap();
    let params = f.dir.path().join("one_material.safetensors");
    FittedDrivers::new(
        &f.scene,
        &drivers,
        &vec![4.0; drivers.len()],
        &f.velocity,
        None,
    )
    .unwrap()
    .save(&params)
    .unwrap();
    let out = f.dir.path().join("stiff");
    let (width, height) = (64, 48);
    ok(&render_of(
        &f,
        &params,
        &out,
        &[
            "--frames",
            "2",
            "--size",
            "64x48",
            "--color-by",
            "stiffness",
        ],
    ));
    let png = image::open(out.join("view0").join("frame_0000.png"))
        .unwrap()
        .to_rgb8();
    // The colour bar panel is added on the right.
    assert_eq!(png.dimensions(), (width + COLORBAR_WIDTH, height));
    let picture = image::imageops::crop_imm(&png, 0, 0, width, height).to_image();
    let colour = map(0.5);
    let pixels = object_pixels(&picture);
    assert!(pixels.len() > 20, "{} object pixels", pixels.len());
    let worst = pixels
        .iter()
        .map(|&(x, y)| (colour_cosine(picture.get_pixel(x, y).0, colour), (x, y)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap();
    eprintln!(
        "{} object pixels, least like the map's {colour:?}: cosine {:.5} at {:?} {:?}",
        pixels.len(),
        worst.0,
        worst.1,
        picture.get_pixel(worst.1 .0, worst.1 .1).0
    );
    // Measured ≥ 0.9998 (8-bit rounding of the faintest pixels); the
    // splats' own colour lies at 0.86 from this one.
    assert!(worst.0 >= 0.99, "{worst:?}");
    // The bar, down its middle column: the map from its end (top) to its
    // start (bottom), each row the map at its own height.
    let x = width + COLORBAR_BAR_LEFT + COLORBAR_BAR_WIDTH / 2;
    let bar: Vec<(u32, [u8; 3])> = (0..height)
        .map(|y| (y, png.get_pixel(x, y).0))
        .filter(|(_, p)| *p != [255; 3])
        .collect();
    assert!(bar.len() >= 10, "{} rows of bar", bar.len());
    let (first, last) = (bar[0].0, bar[bar.len() - 1].0);
    assert_eq!(bar.len() as u32, last - first + 1, "one run of rows");
    for &(y, p) in &bar {
        let t = 1.0 - f64::from(y - first) / f64::from(last - first);
        assert_eq!(p, map(t), "bar row {y} (t = {t:.3})");
    }
    // No reference frames in this scene: --side-by-side is refused.
    let refused = render(
        &f,
        &f.dir.path().join("sbs"),
        &["--frames", "2", "--side-by-side"],
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("reference frames"));
}

#[test]
fn bad_runs_are_refused_or_write_nothing() {
    let f = fitted();
    // Another scene's settings.
    let scene_toml = f.dir.path().join("scene.toml");
    let text = std::fs::read_to_string(&scene_toml).unwrap();
    std::fs::write(&scene_toml, text.replace("grid_res = 16", "grid_res = 20")).unwrap();
    let out = f.dir.path().join("out");
    let run = render(&f, &out, &["--frames", "2"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && stderr.contains("grid_res"),
        "{stderr}"
    );
    std::fs::write(&scene_toml, &text).unwrap();
    // Faster than half a cell per substep.
    let run = render(&f, &out, &["--frames", "2", "--velocity", "1000,0,0"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && stderr.contains("half a cell"),
        "{stderr}"
    );
    // A blow-up (gravity throws the object out of the box) names the frame
    // and writes nothing.
    let run = render(&f, &out, &["--frames", "4", "--gravity", "0,0,-20000"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && stderr.contains("frame") && stderr.contains("substep"),
        "{stderr}"
    );
    assert!(
        !out.exists(),
        "a refused or broken run wrote {}",
        out.display()
    );
    let leftovers: Vec<_> = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("staging"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_impulse_from_the_command_line_moves_the_object_from_rest() {
    let f = fitted();
    let out = f.dir.path().join("poke");
    let stderr = ok(&render(
        &f,
        &out,
        &[
            "--frames",
            "3",
            "--from-rest",
            "--impulse",
            "centre=0.5,0.5,0.5;radius=0.2;acceleration=0,0,20;end=0.05",
        ],
    ));
    assert!(stderr.contains("impulse 0 pushed"), "{stderr}");
    let frame = |k: usize| {
        image::open(out.join("view0").join(format!("frame_{k:04}.png")))
            .unwrap()
            .to_rgb8()
    };
    assert_ne!(frame(0), frame(2), "the impulse moved nothing");
}

/// `render --params` keeps to the one writer discipline: nothing written
/// through a linked view folder (even with --force), an --out holding its
/// scene and drivers file refused (even with --force), and SIGTERM between
/// frames writing nothing, exiting 143 (SIGINT while writing: 130).
#[cfg(unix)]
#[test]
fn render_params_keeps_to_the_writer_rules() {
    let f = fitted();
    let d = f.dir.path();
    let view = f.scene.views[0].name.clone();
    let (out, elsewhere) = (d.join("out"), d.join("elsewhere"));
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("frame_0002.png"), "theirs").unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join(&view)).unwrap();
    let run = render(&f, &out, &["--frames", "3", "--force"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("frame_0002.png")).unwrap(),
        "theirs"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 1);

    let run = render(&f, d, &["--frames", "3", "--force"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("with or without --force"), "{stderr}");

    // Stopped while rendering (SIGTERM), or while writing the frames
    // rendered (SIGINT): nothing is kept either way.
    let cut = d.join("cut");
    for (at, code) in [("render@1,term", 143), ("write@1", 130)] {
        let run = Command::new(env!("CARGO_BIN_EXE_physfit"))
            .arg("render")
            .arg(d.join("scene.toml"))
            .arg("--params")
            .arg(&f.params)
            .arg("--out")
            .arg(&cut)
            .args(["--frames", "3"])
            .env("RUST_LOG", "warn")
            .env("PHYSFIT_TEST_INTERRUPT_AT", at)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(code), "{at}: {stderr}");
        assert!(stderr.contains("nothing was written"), "{at}: {stderr}");
        assert!(!cut.exists(), "{at}: the directory it created is removed");
    }
}

/// The fitted object with room to fall: the box padded by the object's
/// size on each side at 32 cells (dx ≈ 0.052), 8³ splats and 256 drivers
/// (about 1.4 cells apart, so that the object holds together), no gravity
/// of its own.
const DROP: &str = "youngs_modulus = 1.0e4\n\n[simulation]\ngrid_res = 32\npadding = 1.0\n\n\
                    [drivers]\ncount = 256\n";

/// Splats per axis of the dropped object.
const DROP_SPLATS: usize = 8;

/// Frames of the drops: at 9.81 units/s² the object falls past the ground
/// (0.03 under it) by frame 4 when nothing holds it, and 0.4 by frame 9.
const DROP_FRAMES: usize = 10;

/// The lowest simulated splat's z (world units) at the last frame of the
/// fitted object of `f` (with `scene`) dropped from rest at 9.81 units/s²,
/// with `--ground` when `ground`, let go (`--release`) when `release`, and
/// that ground's height.
fn lowest_after_drop(f: &Fitted, scene: &Scene, ground: bool, release: bool) -> (f64, Option<f64>) {
    let ctx = common::gpu();
    let mut interactions = InteractionFlags {
        gravity: Some("0,0,-9.81".into()),
        from_rest: true,
        release,
        ..Default::default()
    }
    .interactions()
    .unwrap();
    let height = ground.then(|| interactions.add_ground(scene, None).unwrap().height);
    let file = FittedDrivers::load(&f.params).unwrap();
    let setup =
        ForwardSetup::from_fitted(scene, &file, "drivers.safetensors", &interactions).unwrap();
    let mut animation =
        SceneRenderer::simulated(&ctx, &setup, scene.gaussians(), scene.background).unwrap();
    animation.run_to(&ctx, DROP_FRAMES - 1).unwrap();
    let lowest = (0..DROP_FRAMES)
        .map(|k| {
            animation.pose(&ctx, k).unwrap();
            let mut posed = scene.gaussians().clone();
            animation.read_pose(&ctx, &mut posed).unwrap();
            scene
                .simulated_indices()
                .iter()
                .map(|&i| f64::from(posed.means[i as usize][2]))
                .fold(f64::INFINITY, f64::min)
        })
        .collect::<Vec<_>>();
    eprintln!("lowest splat per frame: {lowest:.3?}");
    (lowest[DROP_FRAMES - 1], height)
}

#[test]
fn a_ground_holds_the_dropped_object_that_falls_past_it_without() {
    let f = fitted_with(DROP, DROP_SPLATS, 4.6);
    let dx = f.scene.simulation.sim_box.side / f.scene.simulation.grid_res as f64;
    let (held, height) = lowest_after_drop(&f, &f.scene, true, false);
    let height = height.unwrap();
    let (fallen, _) = lowest_after_drop(&f, &f.scene, false, false);
    eprintln!(
        "ground at z = {height:.4} (dx {dx:.4}): lowest splat {held:.4} on it, {fallen:.4} without",
    );
    assert!(held >= height - dx, "{held} under {height}");
    assert!(fallen < height - dx, "{fallen}: nothing fell past");

    // The scene's own collider holds it too: the drivers file records no
    // colliders, and the render takes the scene's.
    let scene_toml = f.dir.path().join("scene.toml");
    let mut text = std::fs::read_to_string(&scene_toml).unwrap();
    text.push_str(&format!(
        "\n[[simulation.colliders]]\nkind = \"plane\"\npoint = [0.0, 0.0, {height}]\n\
         normal = [0.0, 0.0, 1.0]\ncontact = \"friction\"\nfriction = 0.5\n"
    ));
    std::fs::write(&scene_toml, text).unwrap();
    let with_floor = Scene::load(&scene_toml).unwrap();
    let (on_floor, _) = lowest_after_drop(&f, &with_floor, false, false);
    assert!(on_floor >= height - dx, "{on_floor} under {height}");
}

/// An object whose bottom layer the fit anchored stays where it is under
/// gravity; let go (`--release`), the same fitted object falls, and a
/// ground under it holds it.
#[test]
fn a_released_object_falls_where_its_anchors_held_it() {
    // Eight drivers, cells apart: only the stencil rule's frozen anchored
    // drivers hold so sparse an object to 1e-4 (under `splats` the free
    // drivers above the held layer sink 0.04 units; the next test holds a
    // sparse object by its splats).
    let anchored = format!(
        "{}\n[regions]\nanchored = [{{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 0.3] }}]\n",
        DROP.replace(
            "padding = 1.0\n",
            "padding = 1.0\nanchoring = \"stencil\"\n"
        )
    );
    let f = fitted_with(&anchored, DROP_SPLATS, 4.6);
    let rest = 0.275;
    let (held, _) = lowest_after_drop(&f, &f.scene, false, false);
    let (fallen, _) = lowest_after_drop(&f, &f.scene, false, true);
    let (landed, height) = lowest_after_drop(&f, &f.scene, true, true);
    let height = height.unwrap();
    let dx = f.scene.simulation.sim_box.side / f.scene.simulation.grid_res as f64;
    eprintln!(
        "lowest splat: {held:.4} held, {fallen:.4} let go, {landed:.4} let go onto the ground at \
         {height:.4}"
    );
    assert!((held - rest).abs() < 1e-4, "held: {held}");
    assert!(fallen < rest - 0.1, "let go: {fallen}");
    assert!(
        landed >= height - dx && landed < rest,
        "onto the ground: {landed}"
    );
}

/// Under the `splats` anchoring rule the anchored splats hold the grid,
/// not the drivers: a block whose anchored bottom layer of splats lies
/// 0.7 cells apart but whose drivers lie about 1.7 cells apart (too few of
/// them anchored to close a layer) stays on its held layer under gravity:
/// no free splat sinks below the anchored ones (which the render keeps at
/// rest), where one held node per anchored driver (`nearest`) lets it
/// sink.
#[test]
fn the_anchored_splats_hold_an_object_whose_drivers_are_sparse() {
    let lowest =
        |rule: &str| {
            let extra =
                format!(
            "{}\n[regions]\nanchored = [{{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 0.29] }}]\n",
            DROP.replace("padding = 1.0\n", &format!("padding = 1.0\nanchoring = \"{rule}\"\n"))
        );
            let f = fitted_with(&extra, 16, 4.6);
            let dx = f.scene.simulation.sim_box.side / f.scene.simulation.grid_res as f64;
            (lowest_after_drop(&f, &f.scene, false, false).0, dx)
        };
    let rest = 0.275;
    let (splats, dx) = lowest("splats");
    let (nearest, _) = lowest("nearest");
    eprintln!("lowest splat after the drop: {splats:.4} (splats), {nearest:.4} (nearest); rest {rest}, dx {dx:.4}");
    assert!(splats > rest - 0.25 * dx, "splats: {splats}");
    assert!(nearest < rest - dx, "nearest: {nearest}");
}

/// The lowest image row the object covers.
fn lowest_row(path: &Path) -> u32 {
    let image = image::open(path).unwrap().to_rgb8();
    object_pixels(&image).iter().map(|&(_, y)| y).max().unwrap()
}

#[test]
fn render_ground_lands_the_object_and_a_ground_in_it_is_refused() {
    let f = fitted_with(DROP, DROP_SPLATS, 4.6);
    let frames = DROP_FRAMES.to_string();
    let drop = [
        "--frames",
        &frames,
        "--size",
        "128x96",
        "--gravity",
        "0,0,-9.81",
        "--from-rest",
    ];
    let (on, off) = (f.dir.path().join("on"), f.dir.path().join("off"));
    let stderr = ok(&render(&f, &on, &[&drop[..], &["--ground"]].concat()));
    assert!(stderr.contains("ground: a plane at height"), "{stderr}");
    ok(&render(&f, &off, &drop));
    let last = format!("frame_{:04}.png", DROP_FRAMES - 1);
    let rest = lowest_row(&on.join("view0").join("frame_0000.png"));
    let (held, fallen) = (
        lowest_row(&on.join("view0").join(&last)),
        lowest_row(&off.join("view0").join(&last)),
    );
    // 1 world unit ≈ 36 pixels at the object's depth: the ground (0.03
    // under the object) and a cell of contact are ≤ 3 pixels.
    eprintln!("lowest row: {rest} at rest, {held} on the ground, {fallen} without");
    assert!(held <= rest + 4, "{held} vs {rest} at rest");
    assert!(fallen >= rest + 8, "{fallen} vs {rest} at rest");

    let above = f.dir.path().join("above");
    let run = render(&f, &above, &[&drop[..], &["--ground=0.6"]].concat());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success()
            && stderr.contains("--ground: the ground at height 0.6")
            && stderr.contains("fix: give a height ≤"),
        "{stderr}"
    );
    assert!(!above.exists(), "a refused run wrote {}", above.display());

    // A file's collider through the object is refused the same way,
    // naming the file and the table.
    let floor = f.dir.path().join("floor.toml");
    std::fs::write(
        &floor,
        "[[colliders]]\nkind = \"plane\"\npoint = [0.0, 0.0, 0.6]\nnormal = [0.0, 0.0, 1.0]\n\
         contact = \"slip\"\n",
    )
    .unwrap();
    let run = render(
        &f,
        &above,
        &["--frames", "2", "--interactions", floor.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success()
            && stderr.contains("floor.toml: `colliders[0]`: ")
            && stderr.contains("simulated splats start behind the plane")
            && stderr.contains("fix: move `point`"),
        "{stderr}"
    );
    assert!(!above.exists(), "a refused run wrote {}", above.display());
}

#[test]
fn the_fitted_motion_renders_in_memory_writes_its_files_and_stops_when_asked() {
    let f = fitted();
    let ctx = common::gpu();
    let file = FittedDrivers::load(&f.params).unwrap();
    let camera = f.scene.views[0].camera.clone();
    let options = MotionOptions {
        cameras: vec![("near".into(), camera.clone()), ("far".into(), camera)],
        frames: 4,
        interactions: Interactions::default(),
        orbit: None,
        colouring: MotionColouring::Own,
        stop: None,
    };
    let mut told = Vec::new();
    let render = render_motion(
        &ctx,
        &f.scene,
        &file,
        "drivers.safetensors",
        options.clone(),
        |k| told.push(k),
    )
    .unwrap();
    assert_eq!(told, [0, 1, 2, 3]);
    assert_eq!((render.frames(), render.views.len()), (4, 2));
    assert_eq!(render.views[1].name, "far");
    let near = &render.views[0].frames;
    assert_eq!(near[0].dimensions(), (16, 12));
    assert_ne!(near[0], near[3], "the fitted v0 moved nothing");
    assert!(render.impulse_members.is_empty());

    let out = tempfile::tempdir().unwrap();
    let mut writing = Vec::new();
    render
        .write_outputs(out.path(), None, |k| writing.push(k))
        .unwrap();
    assert_eq!(writing, [0, 1, 2, 3]);
    for view in ["near", "far"] {
        assert_eq!(gif_frames(&out.path().join(format!("{view}.gif"))).len(), 4);
        assert!(!out.path().join(view).join("frame_0004.png").exists());
    }
    let written = image::open(out.path().join("near").join("frame_0003.png"))
        .unwrap()
        .to_rgb8();
    assert_eq!(&written, &near[3], "the PNG is the frame in memory");

    // A stop raised before frame 2 stops the run there.
    let stop = physfit::stop::StopSignal::new();
    let stopped = render_motion(
        &ctx,
        &f.scene,
        &file,
        "drivers.safetensors",
        MotionOptions {
            stop: Some(stop.clone()),
            ..options.clone()
        },
        |k| {
            if k == 2 {
                stop.raise()
            }
        },
    );
    assert!(
        matches!(stopped, Err(ForwardError::Stopped { frame: 2 })),
        "{:?}",
        stopped.err()
    );

    // Refused before anything runs: faster than half a cell per substep.
    let fast = InteractionFlags {
        velocity: Some("1000,0,0".into()),
        ..Default::default()
    }
    .interactions()
    .unwrap();
    let refused = FittedMotion::new(
        &f.scene,
        &file,
        "drivers.safetensors",
        MotionOptions {
            interactions: fast,
            ..options
        },
    );
    let message = refused.err().expect("refused").to_string();
    assert!(message.contains("half a cell"), "{message}");
}
