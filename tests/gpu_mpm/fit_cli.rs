//! `physfit fit` end to end: twin recovery on a small block seen
//! by two views (frames made by `physfit synth` with its finer default
//! discretisation, so no inverse crime), every output written, Ctrl-C
//! writing a checkpoint that `--resume` continues to the uninterrupted
//! result, the refusals writing nothing, and `--force` keeping the earlier
//! fit until the new one has something to put in its place.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use crate::common::cli::{ok, physfit, refused};
use std::time::{Duration, Instant};

use physfit::fit::{EarlierFit, FitSession, FitSummary, SessionOptions, StageChoice, StopSignal};
use physfit::scene::ply::PlyData;
use physfit::scene::Gaussians;
use physfit::scene::Scene;

/// 8×8×8 opaque splats filling [0, 0.35]³ (world units), a soft checker
/// over a colour ramp so that motion shows in every direction.
fn block() -> Gaussians {
    common::block(&common::Block {
        counts: [8; 3],
        spacing: [0.05; 3],
        jitter: 0.0,
        jitter_seed: 0,
        log_scale: -3.3,
        opacity_logit: 3.0,
        colour: |[i, j, k]| {
            let c = if (i + j + k) % 2 == 0 { 0.2 } else { -0.2 };
            let t = |a: usize| 0.3 * (a as f32 / 8.0 - 0.5);
            [c + t(i), t(j) - c, t(k)]
        },
    })
}

/// The twin scene: two 32² views, grid 12 (256 drivers, 4 per occupied cell), the
/// bottom layer anchored, E starting 10× softer than most of the truth.
pub(crate) fn scene_toml(stiffness_field: &str, extra: &str) -> String {
    format!(
        r#"
[gaussians]
path = "splats.ply"

[[views]]
name = "front"
frames = "synth/front/*.png"
[views.camera]
width = 32
height = 32
fx = 64.0
position = [0.175, -1.6, 0.25]
look_at = [0.175, 0.175, 0.2]
up = [0.0, 0.0, 1.0]

[[views]]
name = "side"
frames = "synth/side/*.png"
[views.camera]
width = 32
height = 32
fx = 64.0
position = [1.9, 0.175, 0.3]
look_at = [0.175, 0.175, 0.2]
up = [0.0, 0.0, 1.0]

[simulation]
box = {{ min = [-0.4, -0.4, -0.4], max = [0.8, 0.8, 0.8] }}
grid_res = 12

[material]
youngs_modulus = 1.0e3
log10_youngs_range = [3.0, 4.5]

[regions]
anchored = [{{ min = [-1.0, -1.0, -1.0], max = [1.0, 1.0, 0.02] }}]

# 4 per occupied cell, the "auto" of before it rose to 8: the figures these
# tests assert and docs/benchmarks.md records were measured at 256, and
# synth's twice that (one driver per splat) stays finer than the fit.
[drivers]
count = 256

[fit]
rounds = 2
# The check has tests of its own (fit_flow.rs), which turn it on.
check_discretisation = false

# These tests are about the command (outputs, resume, refusals): no scan,
# so their stages are the configured ones (the scan has its own test).
[fit.scan]
points = 0

[fit.velocity]
field = "global"
iterations = 30
learning_rate = 0.1
warmup = 3
frames = 4

[fit.stiffness]
field = "{stiffness_field}"
iterations = 20
learning_rate = 0.15
warmup = 3
{extra}
"#
    )
}

/// `scene` (a [`scene_toml`]) under the `stencil` anchoring rule, the
/// default when the figures of the tests that use it were measured. Under
/// today's default (`splats`) this block twin, started at the bottom of
/// its range with no scan, has a stiffness gradient that points out of
/// the range (the stage stops at its start), and its per-driver recovery
/// is 0.23 decades where the stencil gives under 0.15
/// (docs/benchmarks.md, "The anchored splats as the default").
pub(crate) fn under_the_stencil_rule(scene: &str) -> String {
    assert!(scene.contains("grid_res = 12\n"));
    scene.replace(
        "grid_res = 12\n",
        "grid_res = 12\nanchoring = \"stencil\"\n",
    )
}

/// A soft top on a stiffer base, pushed sideways.
pub(crate) const TRUTH_BOXES: &str = r#"
frames = 7

[youngs]
kind = "boxes"
default = 4.0
boxes = [{ min = [-1, -1, 0.2], max = [1, 1, 1], log10 = 3.5 }]

[velocity]
kind = "uniform"
value = [1.0, 0.0, 0.0]
"#;

/// One material throughout (for `field = "global"`).
pub(crate) const TRUTH_CONSTANT: &str = r#"
frames = 7

[youngs]
kind = "constant"
log10 = 3.8

[velocity]
kind = "uniform"
value = [1.0, 0.0, 0.0]
"#;

/// A directory with the block, `scene.toml` and the truth's frames in
/// `synth/` (made with `synth_flags` added to `physfit synth`).
pub(crate) fn twin_with(scene: &str, truth: &str, synth_flags: &[&str]) -> tempfile::TempDir {
    twin_simulated_by(scene, scene, truth, synth_flags)
}

/// [`twin_with`], the frames made from `synth_scene` (the same views,
/// another discretisation) and `scene` written for the fit.
pub(crate) fn twin_simulated_by(
    scene: &str,
    synth_scene: &str,
    truth: &str,
    synth_flags: &[&str],
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ply = d.join("splats.ply");
    PlyData::from_gaussians(&block(), &ply)
        .write(&ply, &[])
        .unwrap();
    std::fs::write(d.join("truth.toml"), truth).unwrap();
    // synth renders every view of a scene without frames.
    let without: String = synth_scene
        .lines()
        .filter(|l| !l.starts_with("frames = \"synth"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(d.join("synth.toml"), without).unwrap();
    let mut args = vec![
        "synth",
        "synth.toml",
        "--truth",
        "truth.toml",
        "--out",
        "synth",
        "--quiet",
    ];
    args.extend_from_slice(synth_flags);
    ok(&physfit(d, &args));
    std::fs::write(d.join("scene.toml"), scene).unwrap();
    dir
}

/// [`twin_with`] synth's default, finer discretisation (no inverse crime).
pub(crate) fn twin(scene: &str, truth: &str) -> tempfile::TempDir {
    twin_with(scene, truth, &[])
}

/// Whether every free driver of `out`'s drivers.safetensors has
/// `log10 E` = `log10` (to 1e-5).
pub(crate) fn free_drivers_carry(out: &Path, log10: f64) -> bool {
    let drivers = physfit::output::FittedDrivers::load(&out.join("drivers.safetensors")).unwrap();
    drivers
        .log10_youngs
        .iter()
        .zip(&drivers.anchored)
        .filter(|(_, a)| !**a)
        .all(|(l, _)| (l - log10).abs() < 1e-5)
}

/// `out/fit.json`, checked against the shape of its published schema
/// (every required field present) and for Rust Debug text.
pub(crate) fn fit_json(out: &Path) -> FitSummary {
    let path = out.join("fit.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&FitSummary::json_schema()).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let missing = crate::common::json_shape::missing_fields(&schema, &value);
    assert!(missing.is_empty(), "fit.json lacks {missing:?}");
    for debug in ["Some(", "\"None\"", "NamedRegion"] {
        assert!(!text.contains(debug), "Rust Debug text {debug} in {text}");
    }
    FitSummary::read(&path).unwrap()
}

/// Per channel over the 32×32 panel of `a` whose top left corner is `at`,
/// against the 32×32 image `b`: the largest and the mean absolute
/// difference, in 8-bit codes.
fn panel_difference(a: &image::RgbImage, at: (u32, u32), b: &image::RgbImage) -> (u8, f64) {
    let codes: Vec<u8> = (0..32)
        .flat_map(|y| (0..32).map(move |x| (x, y)))
        .flat_map(|(x, y)| {
            let (p, q) = (a.get_pixel(at.0 + x, at.1 + y).0, b.get_pixel(x, y).0);
            (0..3).map(move |c| p[c].abs_diff(q[c]))
        })
        .collect();
    let mean = codes.iter().map(|&c| f64::from(c)).sum::<f64>() / codes.len() as f64;
    (*codes.iter().max().unwrap(), mean)
}

#[test]
fn twin_recovery_per_driver_stiffness_writes_every_output() {
    let dir = twin(
        &under_the_stencil_rule(&scene_toml("drivers", "tv_weight = 0.1")),
        TRUTH_BOXES,
    );
    let d = dir.path();
    let stderr = ok(&physfit(
        d,
        &["fit", "scene.toml", "--truth", "truth.toml", "--out", "fit"],
    ));
    eprintln!("{stderr}");
    assert!(stderr.contains("camera check: view 'front'"), "{stderr}");
    assert!(stderr.contains("recovery of the truth"), "{stderr}");
    let out = d.join("fit");
    let json = fit_json(&out);
    let recovery = json.recovery.as_ref().expect("a twin's recovery");
    let v0 = recovery.velocity_relative_error;
    let median = recovery.log10_youngs_median_error;
    let psnr = json.final_loss.mean_psnr;
    eprintln!(
        "twin (drivers): v0 error {v0:.4}, median |Δ log10 E| {median:.4}, PSNR {psnr:.2} dB"
    );
    assert!(v0 <= 0.05, "v0 relative error {v0}");
    assert!(median <= 0.15, "median |Δ log10 E| {median}");
    assert!(psnr >= 35.0, "fitted rollout PSNR {psnr}");
    assert_eq!(json.stages.len(), 4, "two rounds");
    let truth = json.truth_loss.as_ref().expect("the truth's own loss");
    assert!(
        truth.loss.is_finite() && truth.mean_psnr > 20.0,
        "{truth:?}"
    );

    // Every output, readable.
    let lines = std::fs::read_to_string(out.join("loss.jsonl")).unwrap();
    let iterations: u32 = json
        .stages
        .iter()
        .filter_map(|s| s.run.as_ref())
        .map(|r| r.iterations)
        .sum();
    assert_eq!(
        lines.lines().count(),
        iterations as usize,
        "one line per iteration"
    );
    for line in lines.lines() {
        let r: physfit::fit::IterationRecord = serde_json::from_str(line).unwrap();
        assert!(r.loss.is_finite() && r.psnr.is_finite());
    }
    for png in ["loss.png", "stiffness.png"] {
        image::open(out.join(png)).unwrap();
    }
    use physfit::report::CAPTION_HEIGHT;
    let png = |path: &Path| {
        image::open(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .to_rgb8()
    };
    for view in ["front", "side"] {
        let frame = |dir: &Path, k: usize| dir.join(view).join(format!("frame_{k:04}.png"));
        let at_rest = png(&frame(&d.join("synth"), 0));
        let (mut fitted_sum, mut rest_sum) = (0.0, 0.0);
        for k in 0..7 {
            let picture = png(&frame(&out.join("compare"), k));
            assert_eq!(picture.dimensions(), (3 * 32, 32 + CAPTION_HEIGHT));
            // reference | fitted | |difference| × 4, under the captions.
            let reference = png(&frame(&d.join("synth"), k));
            let (worst, _) = panel_difference(&picture, (0, CAPTION_HEIGHT), &reference);
            assert!(worst <= 1, "{view} {k}: reference panel {worst} codes off");
            let (worst, fitted) = panel_difference(&picture, (32, CAPTION_HEIGHT), &reference);
            let (_, rest) = panel_difference(&at_rest, (0, 0), &reference);
            eprintln!(
                "{view} frame {k}: fitted panel to reference mean {fitted:.3}, largest {worst}; \
                 at rest {rest:.3} codes"
            );
            fitted_sum += fitted;
            rest_sum += rest;
        }
        // The fitted panels show the reference's motion: over the frames,
        // much closer to the reference than the block left at rest is
        // (measured: 0.14 front, 0.36 side, whose camera sees the push
        // mostly along its axis; a copy of frame 0 gives 1).
        let ratio = fitted_sum / rest_sum;
        eprintln!("{view}: fitted panels / at rest {ratio:.3}");
        assert!(
            ratio < 0.6,
            "{view}: fitted {fitted_sum} vs at rest {rest_sum} codes"
        );
    }
    let fitted = physfit::output::FittedDrivers::load(&out.join("drivers.safetensors")).unwrap();
    let scene = physfit::scene::Scene::load(&d.join("scene.toml")).unwrap();
    fitted.check_against(&scene).unwrap();
    assert!(fitted.youngs_log10_std.is_some());
    // The per-driver field's error bars: a probed diagonal, the drivers
    // the frames constrain marked, and stiffness.png's second panel.
    let errors = json.uncertainty.as_ref().expect("error bars");
    assert_eq!(
        errors.youngs_method,
        Some(physfit::fit::uncertainty::CurvatureMethod::Diagonal)
    );
    let constrained = errors.youngs_constrained.iter().filter(|&&c| c).count();
    let mut std: Vec<f64> = errors.youngs_log10_std.iter().flatten().copied().collect();
    std.sort_by(f64::total_cmp);
    eprintln!(
        "twin (drivers): {constrained} of {} drivers' E constrained by the frames; \
         {} with a positive curvature, their std of log10 E: min {:?}, median {:?}, max {:?}",
        errors.youngs_constrained.len(),
        std.len(),
        std.first(),
        std.get(std.len() / 2),
        std.last()
    );
    assert_eq!(
        errors.youngs_constrained.len(),
        json.youngs_parameters.len()
    );
    assert!(std.iter().all(|s| s.is_finite() && *s > 0.0));
    let width = 32 + physfit::report::colorbar::COLORBAR_WIDTH;
    assert_eq!(png(&out.join("stiffness.png")).width(), 2 * width);
    let ply = std::fs::read(out.join("fitted.ply")).unwrap();
    let header = String::from_utf8_lossy(&ply[..ply.len().min(2000)]).into_owned();
    for p in [
        "youngs_modulus",
        "simulated",
        "anchored",
        "vx",
        "youngs_log10_std",
    ] {
        assert!(header.contains(&format!("property float {p}")), "{header}");
    }
    assert!(!out.join("camera_check").exists(), "cameras agree");

    // A second fit into the same directory is refused unless --force.
    let again = refused(&physfit(d, &["fit", "scene.toml", "--out", "fit"]));
    assert!(
        again.contains("--resume") && again.contains("--force"),
        "{again}"
    );
}

/// One E for the block: recovered to 0.05 in log10 from frames of the fit's
/// own discretisation. (With synth's finer default, twice the drivers and
/// substeps, the fit lands 0.055–0.09 off on this block, run to run, under
/// the stencil anchoring, the default when measured: the
/// discretisation's own bias, which no optimiser removes; the per-driver
/// test above is the one without an inverse crime.)
#[test]
fn twin_recovery_global_stiffness() {
    let dir = twin_with(
        &scene_toml("global", ""),
        TRUTH_CONSTANT,
        &["--same-discretisation"],
    );
    let d = dir.path();
    let stderr = ok(&physfit(
        d,
        &["fit", "scene.toml", "--truth", "truth.toml", "--out", "fit"],
    ));
    eprintln!("{stderr}");
    let json = fit_json(&d.join("fit"));
    let recovery = json.recovery.as_ref().expect("a twin's recovery");
    let v0 = recovery.velocity_relative_error;
    let err = recovery.log10_youngs_median_error;
    let psnr = json.final_loss.mean_psnr;
    eprintln!("twin (global): v0 error {v0:.4}, |Δ log10 E| {err:.4}, PSNR {psnr:.2} dB");
    assert!(v0 <= 0.05, "v0 relative error {v0}");
    assert!(err <= 0.05, "|Δ log10 E| {err}");
    assert!(psnr >= 35.0, "fitted rollout PSNR {psnr}");
}

/// The final parameters of a fit.
fn final_parameters(out: &Path) -> (Vec<f64>, Vec<f64>) {
    let json = fit_json(out);
    let youngs = json
        .youngs_parameters
        .iter()
        .map(|p| p.log10_normalised)
        .collect();
    (youngs, json.velocity_parameters)
}

/// How far a resumed fit may end from an uninterrupted one, relative to
/// `1 + |a|`. Adam on per-driver fields turns the float atomics' run-to-run
/// noise in a near-zero gradient into full-sized steps, so two runs of this
/// scene differ more than its global fit did (7.3e-8): measured 2.2e-6 and
/// 1.2e-5 in two resumes. 1e-4 leaves about 8×.
const RESUME_TOLERANCE: f64 = 1e-4;

/// The same for global fields by L-BFGS. Two runs usually end 2e-7 apart,
/// but its stages are capped at 6 evaluations, and the float atomics'
/// noise can tip one line-search trial's acceptance, after which the two
/// runs take different capped paths: once in four runs of the whole suite
/// (under its load) they ended 2.5e-4 apart (the velocity 1.00757 against
/// 1.00707), while the same test alone gave 1.8e-7 and 2.1e-7. A resume
/// that lost the solver's state would restart the stage and end far
/// further off.
const LBFGS_RESUME_TOLERANCE: f64 = 1e-3;

/// Per-driver fields, fitted by Adam, whose state the checkpoint holds
/// whole.
#[test]
fn a_fit_interrupted_by_ctrl_c_resumes_to_the_uninterrupted_result() {
    let scene = scene_toml("drivers", "").replace(
        "[fit.velocity]\nfield = \"global\"",
        "[fit.velocity]\nfield = \"drivers\"",
    );
    interrupted_fit_resumes(&scene, RESUME_TOLERANCE);
}

/// Global fields, fitted by L-BFGS: the checkpoint holds the solver's
/// state after its last accepted step (curvature pairs, evaluations used,
/// the convergence count), so the resumed stage continues the same run.
#[test]
fn an_interrupted_lbfgs_fit_resumes_to_the_uninterrupted_result() {
    interrupted_fit_resumes(&scene_toml("global", ""), LBFGS_RESUME_TOLERANCE);
}

/// A fit stopped by SIGINT after some iterations and resumed ends within
/// `tolerance` (relative to `1 + |a|`) of the same fit run whole.
fn interrupted_fit_resumes(scene: &str, tolerance: f64) {
    let scene = scene
        .replace("rounds = 2", "rounds = 1\ncheckpoint_every = 1")
        .replace("iterations = 20", "iterations = 6")
        .replace("iterations = 30", "iterations = 6");
    let dir = twin(&scene, TRUTH_CONSTANT);
    let d = dir.path();
    ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "whole", "--quiet"],
    ));

    let child = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .args(["fit", "scene.toml", "--out", "cut", "--quiet"])
        .current_dir(d)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the checkpoint holds a few iterations.
    let checkpoint = d.join("cut").join("checkpoint.json");
    let started = Instant::now();
    loop {
        let records = std::fs::read_to_string(&checkpoint)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map_or(0, |c| c["state"]["records"].as_array().map_or(0, Vec::len));
        if records >= 2 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no checkpoint with 2 iterations"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    assert!(!d.join("cut").join("fit.json").exists(), "no outputs yet");
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&checkpoint).unwrap()).unwrap();
    let cut_at = c["state"]["records"].as_array().unwrap().len();
    assert!(
        cut_at < 12,
        "interrupted before the end ({cut_at} iterations)"
    );

    // A checkpoint of other settings is refused, naming the field.
    let changed = scene.replace(
        "learning_rate = 0.1\nwarmup = 3\nframes = 4",
        "learning_rate = 0.2\nwarmup = 3\nframes = 4",
    );
    assert_ne!(changed, scene);
    std::fs::write(d.join("changed.toml"), &changed).unwrap();
    let refusal = refused(&physfit(
        d,
        &["fit", "changed.toml", "--out", "cut", "--resume"],
    ));
    assert!(refusal.contains("fit.velocity.learning_rate"), "{refusal}");

    ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "cut", "--resume", "--quiet"],
    ));
    let lines = std::fs::read_to_string(d.join("cut").join("loss.jsonl")).unwrap();
    // The records so far are kept.
    assert!(lines.lines().count() > cut_at, "the resumed fit went on");
    assert!(d.join("cut").join("fit.json").exists(), "and finished");
    let (whole_e, whole_v) = final_parameters(&d.join("whole"));
    let (cut_e, cut_v) = final_parameters(&d.join("cut"));
    eprintln!("uninterrupted {whole_e:?} {whole_v:?}, resumed after {cut_at}: {cut_e:?} {cut_v:?}");
    // The checkpoint round-trips bit for bit, but float atomics sum in any
    // order, so two fits differ by their run-to-run noise (`tolerance`).
    let worst = whole_e
        .iter()
        .zip(&cut_e)
        .chain(whole_v.iter().zip(&cut_v))
        .map(|(a, b)| (a - b).abs() / (1.0 + a.abs()))
        .fold(0.0, f64::max);
    eprintln!("resumed vs uninterrupted: {worst:.3e} · (1 + |a|)");
    for (a, b) in whole_e.iter().zip(&cut_e).chain(whole_v.iter().zip(&cut_v)) {
        assert!((a - b).abs() <= tolerance * (1.0 + a.abs()), "{a} vs {b}");
    }
}

#[test]
fn fits_that_cannot_work_are_refused_before_anything_is_written() {
    let scene = scene_toml("drivers", "");
    let dir = twin(&scene, TRUTH_BOXES);
    let d = dir.path();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "no frames",
            scene
                .replace("frames = \"synth/front/*.png\"\n", "")
                .replace("frames = \"synth/side/*.png\"\n", ""),
            "no view has reference frames",
        ),
        (
            "more stage-1 frames than exist",
            // 7 reference frames per view (0–6): a count of 8 is one too many.
            scene.replace("frames = 4", "frames = 8"),
            "fit.velocity.frames",
        ),
        (
            "unstable substeps",
            scene.replace("grid_res = 12", "grid_res = 12\nsubsteps = 1"),
            "simulation.substeps",
        ),
        (
            "object outside every image",
            scene.replace(
                "look_at = [0.175, 0.175, 0.2]",
                "look_at = [0.175, 0.175, 5.0]",
            ),
            "outside every image",
        ),
    ];
    for (what, text, expected) in cases {
        std::fs::write(d.join("bad.toml"), &text).unwrap();
        let stderr = refused(&physfit(d, &["fit", "bad.toml", "--out", "bad"]));
        assert!(stderr.contains(expected), "{what}: {stderr}");
        assert!(!d.join("bad").exists(), "{what}: nothing written");
    }
    let stderr = refused(&physfit(
        d,
        &["fit", "scene.toml", "--out", "none", "--resume"],
    ));
    assert!(stderr.contains("checkpoint"), "{stderr}");
    let stderr = refused(&physfit(
        d,
        &["fit", "scene.toml", "--out", "none", "--stage", "stiffness"],
    ));
    assert!(stderr.contains("--velocity-from"), "{stderr}");
    assert!(!d.join("none").exists());
    // A flag that would be ignored is refused, naming when it applies.
    for stage in [None, Some("velocity"), Some("both")] {
        let mut args = vec![
            "fit",
            "scene.toml",
            "--out",
            "none",
            "--velocity-from",
            "v/drivers.safetensors",
        ];
        if let Some(stage) = stage {
            args.extend(["--stage", stage]);
        }
        let stderr = refused(&physfit(d, &args));
        assert!(
            stderr.contains("--velocity-from applies only with --stage stiffness")
                && stderr.contains("fix:"),
            "{stage:?}: {stderr}"
        );
        assert!(!d.join("none").exists());
    }
}

/// Runs `physfit fit` as if Ctrl-C arrived at `phase`
/// (`PHYSFIT_TEST_INTERRUPT_AT`): the exit status and stderr.
fn fit_interrupted_at(d: &Path, phase: &str, args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .arg("fit")
        .args(args)
        .current_dir(d)
        .env("RUST_LOG", "warn")
        .env("PHYSFIT_TEST_INTERRUPT_AT", phase)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Ctrl-C in every phase of a fit stops at the next safe point, says so
/// and exits 130: before the first iteration nothing is kept (no
/// checkpoint, no output directory left behind); later the checkpoint
/// holds the fit and `--resume` continues it; during the outputs none is
/// written; a second Ctrl-C exits at once with the checkpoint intact.
#[test]
fn ctrl_c_in_every_phase_stops_safely_and_resume_continues() {
    let scene = scene_toml("global", "")
        .replace("rounds = 2", "rounds = 1")
        .replace("iterations = 20", "iterations = 3")
        .replace("iterations = 30", "iterations = 3");
    // The truth beside the frames makes the truth check run.
    let dir = twin(&scene, TRUTH_CONSTANT);
    let d = dir.path();
    std::fs::write(
        d.join("scan.toml"),
        scene.replace("[fit.scan]\npoints = 0", "[fit.scan]\npoints = 2"),
    )
    .unwrap();
    let files = |out: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(d.join(out))
            .map(|r| {
                r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    for (phase, scene) in [
        ("prepare", "scene.toml"),
        ("camera-check", "scene.toml"),
        ("truth-check", "scene.toml"),
        // Inside the truth check, after 2 of its 7 frames.
        ("truth-check@2", "scene.toml"),
        ("scan", "scan.toml"),
        ("velocity", "scene.toml"),
    ] {
        let out = format!("cut-{phase}");
        let (code, stderr) = fit_interrupted_at(d, phase, &[scene, "--out", &out]);
        assert_eq!(code, Some(130), "{phase}: {stderr}");
        assert!(
            stderr.contains("interrupted: stopping at the next safe point"),
            "{phase}: {stderr}"
        );
        assert!(
            stderr.contains("nothing to keep") && !stderr.contains("--resume"),
            "{phase}: {stderr}"
        );
        assert!(files(&out).is_empty(), "{phase}: {:?}", files(&out));
        assert!(!d.join(&out).exists(), "{phase}: no directory left");
    }

    // SIGTERM (what `timeout`, batch schedulers and `kill` send) alike, with
    // its own exit status.
    let (code, stderr) =
        fit_interrupted_at(d, "velocity,term", &["scene.toml", "--out", "cut-term"]);
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        stderr.contains("interrupted: stopping at the next safe point (SIGTERM")
            && stderr.contains("nothing to keep"),
        "{stderr}"
    );
    assert!(!d.join("cut-term").exists(), "no directory left");

    // During the stiffness stage the velocity stage is kept.
    let (code, stderr) = fit_interrupted_at(d, "stiffness", &["scene.toml", "--out", "cut"]);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted during the stiffness stage")
            && stderr.contains("cut/checkpoint.json")
            && stderr.contains("physfit fit scene.toml --resume --out cut"),
        "{stderr}"
    );
    assert_eq!(files("cut"), ["checkpoint.json"], "no partial outputs");

    // Resumed, and interrupted while writing the outputs: none is written.
    let (code, stderr) =
        fit_interrupted_at(d, "outputs", &["scene.toml", "--out", "cut", "--resume"]);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted while writing the outputs: none was written"),
        "{stderr}"
    );
    assert_eq!(files("cut"), ["checkpoint.json"], "no partial outputs");
    let checkpoint = std::fs::read(d.join("cut/checkpoint.json")).unwrap();

    // Twice: out at once, the checkpoint as it was.
    let (code, stderr) = fit_interrupted_at(
        d,
        "outputs,twice",
        &["scene.toml", "--out", "cut", "--resume"],
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("exiting at once"), "{stderr}");
    assert_eq!(
        std::fs::read(d.join("cut/checkpoint.json")).unwrap(),
        checkpoint
    );

    let stderr = ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "cut", "--resume"],
    ));
    let json = fit_json(&d.join("cut"));
    let stages: Vec<_> = json.stages.iter().map(|s| s.stage.clone()).collect();
    assert_eq!(stages, ["velocity", "stiffness"]);
    // The output directory first and last.
    let outputs: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("output "))
        .collect();
    assert_eq!(outputs, ["output cut", "output cut"], "{stderr}");
    assert!(
        !files("cut").iter().any(|f| f.starts_with('.')),
        "{:?}",
        files("cut")
    );

    let stderr = refused(&physfit(d, &["fit", "scene.toml", "--out", "cut"]));
    assert!(
        stderr.contains("holds an earlier fit") && stderr.contains("--force"),
        "{stderr}"
    );
}

#[test]
fn a_stiffness_only_fit_holds_the_velocity_of_an_earlier_fit() {
    let scene = under_the_stencil_rule(&scene_toml("global", ""))
        .replace("rounds = 2", "rounds = 1")
        .replace("iterations = 20", "iterations = 3")
        .replace("iterations = 30", "iterations = 3");
    let dir = twin(&scene, TRUTH_CONSTANT);
    let d = dir.path();
    ok(&physfit(
        d,
        &[
            "fit",
            "scene.toml",
            "--out",
            "v",
            "--stage",
            "velocity",
            "--quiet",
        ],
    ));
    let first =
        physfit::output::FittedDrivers::load(&d.join("v").join("drivers.safetensors")).unwrap();
    assert!(first.youngs_log10_std.is_none(), "no stiffness stage ran");
    ok(&physfit(
        d,
        &[
            "fit",
            "scene.toml",
            "--out",
            "e",
            "--stage",
            "stiffness",
            "--velocity-from",
            "v/drivers.safetensors",
            "--quiet",
        ],
    ));
    let json = fit_json(&d.join("e"));
    let stages: Vec<_> = json.stages.iter().map(|s| s.stage.clone()).collect();
    assert_eq!(stages, ["stiffness"]);
    let second =
        physfit::output::FittedDrivers::load(&d.join("e").join("drivers.safetensors")).unwrap();
    assert_eq!(second.velocity, first.velocity, "v0 held as fitted");
    assert_ne!(second.log10_youngs, first.log10_youngs, "E fitted");
    assert!(second.youngs_log10_std.is_some());

    // The fit rendered again beside its reference frames
    // (`--side-by-side`): reference on the left, the fitted motion right,
    // both under a caption strip.
    use physfit::report::CAPTION_HEIGHT as STRIP;
    let render = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "render",
            "scene.toml",
            "--params",
            "e/drivers.safetensors",
            "--frames",
            "4",
            "--camera",
            "front",
            "--out",
            out,
            "--quiet",
        ];
        args.extend_from_slice(extra);
        ok(&physfit(d, &args));
    };
    render("r", &["--side-by-side"]);
    render("plain", &[]);
    let png = |path: &Path| image::open(d.join(path)).unwrap().to_rgb8();
    let pair = png(Path::new("r/front/frame_0002.png"));
    assert_eq!(pair.dimensions(), (64, 32 + STRIP));
    let reference = png(Path::new("synth/front/frame_0002.png"));
    let fitted = png(Path::new("plain/front/frame_0002.png"));
    let at_rest = png(Path::new("synth/front/frame_0000.png"));
    let (worst, _) = panel_difference(&pair, (0, STRIP), &reference);
    assert!(
        worst <= 2,
        "left panel = reference frame 2 ({worst} codes off)"
    );
    // The right panel is the fitted motion: a plain render of the fitted
    // drivers (another run: float atomics move a pixel by a code or two).
    let (worst, _) = panel_difference(&pair, (32, STRIP), &fitted);
    assert!(
        worst <= 2,
        "right panel = the fitted render ({worst} codes off)"
    );
    // That motion is the fit's, not the reference's and not none: it comes
    // closer to the reference than the block left at rest does (after 3
    // velocity iterations, v0 a fifth of the truth's: measured 6.15 against
    // 6.92 codes), yet is not the reference itself.
    let (_, to_reference) = panel_difference(&pair, (32, STRIP), &reference);
    let (_, rest_to_reference) = panel_difference(&at_rest, (0, 0), &reference);
    eprintln!(
        "mean |Δ| to reference frame 2: fitted {to_reference:.3}, at rest {rest_to_reference:.3} codes"
    );
    assert!(
        to_reference < rest_to_reference,
        "fitted {to_reference} vs at rest {rest_to_reference}"
    );
    assert!(to_reference > 0.0, "the right panel is the reference");

    // With the front view's colour correction, --side-by-side shows the
    // render as its camera records it; a plain render stays the splats'.
    let correction = physfit::scene::ColorCorrection {
        gain: [0.8, 1.2, 1.0],
        offset: [0.1, -0.05, 0.2],
    };
    let corrected = std::fs::read_to_string(d.join("scene.toml"))
        .unwrap()
        .replacen(
            "name = \"front\"\n",
            "name = \"front\"\ncolor_correction = { gain = [0.8, 1.2, 1.0], offset = [0.1, -0.05, 0.2] }\n",
            1,
        );
    std::fs::write(d.join("corrected.toml"), corrected).unwrap();
    for (out, extra) in [("rc", Some("--side-by-side")), ("plain_c", None)] {
        let mut args = vec![
            "render",
            "corrected.toml",
            "--params",
            "e/drivers.safetensors",
            "--frames",
            "4",
            "--camera",
            "front",
            "--out",
            out,
            "--quiet",
        ];
        args.extend(extra);
        ok(&physfit(d, &args));
    }
    let (worst, _) = panel_difference(
        &png(Path::new("plain_c/front/frame_0002.png")),
        (0, 0),
        &fitted,
    );
    assert!(
        worst <= 2,
        "a plain render is uncorrected ({worst} codes off)"
    );
    let seen = image::RgbImage::from_fn(32, 32, |x, y| {
        let p = fitted.get_pixel(x, y).0.map(|v| f32::from(v) / 255.0);
        image::Rgb(correction.apply(p).map(|v| (v * 255.0).round() as u8))
    });
    let pair = png(Path::new("rc/front/frame_0002.png"));
    let (worst, _) = panel_difference(&pair, (32, STRIP), &seen);
    assert!(
        worst <= 3,
        "right panel = the fitted render through the view's correction ({worst} codes off)"
    );
}

#[test]
fn steps_that_blow_up_are_retried_at_half_the_rate_and_a_misaligned_camera_is_flagged() {
    // A velocity rate of 1,000 world units/s (3,000 after warm-up) throws
    // the block out of the box at once: the step is rejected and retried at
    // half the rate until the rollout stays in the box.
    // Per-driver fields, so that Adam (whose rate this is) fits them.
    let scene = scene_toml("drivers", "")
        .replace("rounds = 2", "rounds = 1")
        .replace(
            "[fit.velocity]\nfield = \"global\"",
            "[fit.velocity]\nfield = \"drivers\"",
        )
        .replace(
            "iterations = 30\nlearning_rate = 0.1",
            "iterations = 1\nlearning_rate = 3000.0",
        )
        .replace("iterations = 20", "iterations = 1");
    let dir = twin(&scene, TRUTH_CONSTANT);
    let d = dir.path();
    ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "fit", "--quiet"],
    ));
    let lines = std::fs::read_to_string(d.join("fit").join("loss.jsonl")).unwrap();
    let records: Vec<physfit::fit::IterationRecord> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    assert!(records[0].rejected >= 1, "{:?}", records[0]);
    assert!(records[0].learning_rate <= 1000.0 / 2.0, "{:?}", records[0]);
    let (_, velocity) = final_parameters(&d.join("fit"));
    assert!(velocity.iter().all(|v| v.is_finite()), "{velocity:?}");

    // At 2,000 (the second iteration's rate) eight halvings are not enough:
    // the fit stops naming the stage and the setting, and writes no result.
    let hopeless = scene.replace(
        "iterations = 1\nlearning_rate = 3000.0",
        "iterations = 2\nlearning_rate = 3000.0",
    );
    std::fs::write(d.join("hopeless.toml"), hopeless).unwrap();
    let stderr = refused(&physfit(d, &["fit", "hopeless.toml", "--out", "hopeless"]));
    assert!(
        stderr.contains("velocity iteration 1") && stderr.contains("learning_rate"),
        "{stderr}"
    );
    assert!(!d.join("hopeless").join("fit.json").exists());

    // The front camera turned off the block by a little: the object stays
    // in the image, frame 0 no longer matches, and the check says so.
    let turned = scene.replacen(
        "look_at = [0.175, 0.175, 0.2]",
        "look_at = [0.3, 0.175, 0.25]",
        1,
    );
    assert_ne!(turned, scene);
    std::fs::write(d.join("turned.toml"), turned).unwrap();
    let stderr = ok(&physfit(d, &["fit", "turned.toml", "--out", "turned"]));
    assert!(
        stderr.contains("WARNING: camera check: view 'front'"),
        "{stderr}"
    );
    assert!(!stderr.contains("view 'side' renders"), "{stderr}");
    assert!(
        stderr.contains("physfit align turned.toml --out DIR"),
        "the warning names the fix: {stderr}"
    );
    let picture = image::open(d.join("turned").join("camera_check").join("front.png")).unwrap();
    assert_eq!(picture.width(), 3 * 32, "reference | render | difference");
}

/// The fit does not depend on its start: from the bottom, the middle and
/// the top of `material.log10_youngs_range`, the scan and the L-BFGS
/// stages (a two-region E and a global velocity: both fields small) end at
/// the same material, within the truth's reach, and at or below the loss
/// of the truth's own parameters.
#[test]
fn fits_from_the_bottom_middle_and_top_of_the_range_agree() {
    let regions = "[fit.stiffness.regions]\ntop = [{ min = [-1, -1, 0.2], max = [1, 1, 1] }]";
    let scene = scene_toml("regions", regions).replace("[fit.scan]\npoints = 0", "[fit.scan]");
    let dir = twin(&scene, TRUTH_BOXES);
    let d = dir.path();
    let mut ends = Vec::new();
    for (name, log10) in [("bottom", 3.0), ("middle", 3.75), ("top", 4.5)] {
        let start = scene.replace(
            "youngs_modulus = 1.0e3",
            &format!("youngs_modulus = {:e}", 10f64.powf(log10)),
        );
        std::fs::write(d.join(format!("{name}.toml")), start).unwrap();
        let stderr = ok(&physfit(
            d,
            &[
                "fit",
                &format!("{name}.toml"),
                "--truth",
                "truth.toml",
                "--out",
                name,
            ],
        ));
        eprintln!("{stderr}");
        let json = fit_json(&d.join(name));
        let kinds: Vec<&str> = json.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(
            kinds,
            ["scan", "velocity", "stiffness", "velocity", "stiffness"],
            "the scan, then two rounds"
        );
        let truth = json.truth_loss.as_ref().expect("the truth's own loss");
        // Measured under the stencil anchoring (the default then): fitted
        // 0.2539 against the truth's 0.2651 from every start. The truth was simulated finer (twice the drivers and substeps),
        // so the fit's own discretisation may fit the frames better still;
        // it must not end above the truth's loss beyond its noise.
        assert!(
            json.final_loss.loss <= truth.loss * 1.02,
            "{name}: fitted loss {} above the truth's {}",
            json.final_loss.loss,
            truth.loss
        );
        let recovery = json.recovery.as_ref().unwrap();
        assert!(
            recovery.velocity_relative_error <= 0.05,
            "{name}: {recovery:?}"
        );
        // Measured (stencil): 0.108–0.109 in most runs; the float atomics' noise sends
        // the stiffness stage to a second point, 0.235, in some (both below
        // the truth's loss). A start-dependent fit missed by 0.5–1 decade.
        assert!(
            recovery.log10_youngs_median_error <= 0.3,
            "{name}: {recovery:?}"
        );
        let youngs: Vec<f64> = json
            .youngs_parameters
            .iter()
            .map(|p| p.log10_normalised)
            .collect();
        ends.push((name, youngs, json.velocity_parameters.clone()));
    }
    // Three starts 1.5 decades apart end together: log10 E within 0.15
    // (the two noise-chosen end points above are 0.13 apart; otherwise they
    // agree to 0.001), v0 within 2% of its size (measured: 0.2%).
    let (_, e0, v0) = &ends[0];
    let size = v0.iter().map(|v| v * v).sum::<f64>().sqrt();
    for (name, e, v) in &ends[1..] {
        for (a, b) in e.iter().zip(e0) {
            assert!(
                (a - b).abs() <= 0.15,
                "{name}: log10 E {e:?} vs bottom's {e0:?}"
            );
        }
        let dv = v
            .iter()
            .zip(v0)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(dv <= 0.02 * size, "{name}: v0 {v:?} vs bottom's {v0:?}");
    }
}

/// The truth check polls the stop before every frame of the truth's
/// rollout: stopped after 3 of 7 frames, it simulates no more, returns a
/// stop (not a failure) and writes nothing.
#[test]
fn the_truth_check_stops_between_frames() {
    let scene = scene_toml("global", "").replace("rounds = 2", "rounds = 1");
    let dir = twin(&scene, TRUTH_CONSTANT);
    let d = dir.path();
    let ctx = common::gpu();
    let out = d.join("out");
    let options = SessionOptions {
        out: out.clone(),
        choice: StageChoice::Both,
        velocity_from: None,
        earlier: EarlierFit::Refuse,
        truth: None,
    };
    let scene = Scene::load(&d.join("scene.toml")).unwrap();
    let prepared = FitSession::prepare(scene, options).unwrap();
    assert!(
        prepared.truth_source().is_some(),
        "the truth beside the frames"
    );
    let mut session = FitSession::open(&ctx, prepared).unwrap();
    assert_eq!(session.inputs().frames, 7);

    // Unstopped: told before each of frames 1–6.
    let mut seen = Vec::new();
    session
        .check_truth(&ctx, &mut |simulated| seen.push(simulated))
        .unwrap();
    assert_eq!(seen, [1, 2, 3, 4, 5, 6]);

    let stop = StopSignal::new();
    session.set_stop(stop.clone());
    let mut seen = Vec::new();
    let end = session.check_truth(&ctx, &mut |simulated| {
        seen.push(simulated);
        if simulated == 3 {
            stop.raise();
        }
    });
    match end {
        Err(e) => assert!(e.is_stop(), "a stop, not a failure: {e}"),
        Ok(()) => panic!("ran through a stop"),
    }
    assert_eq!(seen, [1, 2, 3], "no frame simulated after the stop");
    // The open session's lock and empty staging folder are all there is.
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".physfit.lock" && n != ".physfit-fit.staging")
        .collect();
    assert!(left.is_empty(), "nothing written: {left:?}");
    assert_eq!(
        std::fs::read_dir(out.join(".physfit-fit.staging"))
            .unwrap()
            .count(),
        0
    );
    drop(session);
    assert!(
        !out.exists(),
        "the directory the session created, left empty, is removed"
    );
}

/// Every file under `dir` (relative path → bytes).
fn snapshot(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        for entry in std::fs::read_dir(&p).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// `--force` removes the earlier fit's files only once the new fit writes
/// its own: refused by the truth check, or stopped inside it, after the
/// output directory was opened, it leaves every earlier file as it was; a
/// run that goes through replaces the fit's files and nothing else.
#[test]
fn force_keeps_the_earlier_fit_until_the_new_fit_replaces_it() {
    let scene = scene_toml("global", "")
        .replace("rounds = 2", "rounds = 1")
        .replace("iterations = 20", "iterations = 3")
        .replace("iterations = 30", "iterations = 3");
    let dir = twin(&scene, TRUTH_CONSTANT);
    let d = dir.path();
    let out = d.join("out");
    // The user's notes in a folder named as the camera check's: a fit
    // without --force leaves them (only its own pictures, by name).
    std::fs::create_dir_all(out.join("camera_check")).unwrap();
    std::fs::write(out.join("camera_check/notes.txt"), "the user's own").unwrap();
    ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "out", "--quiet"],
    ));
    std::fs::write(out.join("notes.txt"), "the user's own").unwrap();
    // Inside the fit's own compare/ and camera_check/: the user's, kept
    // when the fit is replaced (only the fit's files, by name, go).
    std::fs::write(out.join("compare/earlier.txt"), "the user's own").unwrap();
    let earlier = snapshot(&out);
    assert!(
        earlier.contains_key("fit.json") && earlier.contains_key("checkpoint.json"),
        "{:?}",
        earlier.keys()
    );

    // A truth moving far faster than the box allows: the truth check, after
    // the output directory is opened and the camera check has run, fails.
    std::fs::write(
        d.join("fast.toml"),
        TRUTH_CONSTANT.replace("value = [1.0, 0.0, 0.0]", "value = [400.0, 0.0, 0.0]"),
    )
    .unwrap();
    let stderr = refused(&physfit(
        d,
        &[
            "fit",
            "scene.toml",
            "--out",
            "out",
            "--force",
            "--truth",
            "fast.toml",
        ],
    ));
    assert!(
        stderr.contains("simulating the truth on the fit's drivers"),
        "{stderr}"
    );
    assert!(
        snapshot(&out) == earlier,
        "refused: every earlier file kept"
    );

    // Stopped inside the truth check: the same.
    let (code, stderr) = fit_interrupted_at(
        d,
        "truth-check@2",
        &["scene.toml", "--out", "out", "--force"],
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("during the truth check"), "{stderr}");
    assert!(
        snapshot(&out) == earlier,
        "stopped: every earlier file kept"
    );

    ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "out", "--force", "--quiet"],
    ));
    let now = snapshot(&out);
    assert_eq!(
        now["notes.txt"], earlier["notes.txt"],
        "the user's file kept"
    );
    for kept in ["compare/earlier.txt", "camera_check/notes.txt"] {
        assert_eq!(now[kept], earlier[kept], "{kept}: the user's file kept");
    }
    for f in [
        "fit.json",
        "checkpoint.json",
        "drivers.safetensors",
        "loss.jsonl",
    ] {
        assert!(now.contains_key(f), "{f} written again: {:?}", now.keys());
    }
}

/// A fit with a checkpoint every iteration, cut short (6 + 6 iterations).
fn short_checkpointed_fit() -> tempfile::TempDir {
    let scene = scene_toml("global", "")
        .replace("rounds = 2", "rounds = 1\ncheckpoint_every = 1")
        .replace("iterations = 20", "iterations = 6")
        .replace("iterations = 30", "iterations = 6");
    twin(&scene, TRUTH_CONSTANT)
}

/// The records a checkpoint holds (0 while there is none).
fn checkpoint_records(checkpoint: &Path) -> usize {
    std::fs::read_to_string(checkpoint)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map_or(0, |c| c["state"]["records"].as_array().map_or(0, Vec::len))
}

/// SIGKILL gives the process no chance to clean up: what it leaves (a
/// checkpoint, a staging folder, the lock file, whose lock the kernel
/// drops with the process) must not stop `--resume` from finishing the
/// fit from the last checkpoint.
#[test]
fn a_fit_killed_outright_resumes_from_its_checkpoint() {
    let dir = short_checkpointed_fit();
    let d = dir.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_physfit"))
        .args(["fit", "scene.toml", "--out", "killed", "--quiet"])
        .current_dir(d)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let checkpoint = d.join("killed").join("checkpoint.json");
    let started = Instant::now();
    while checkpoint_records(&checkpoint) < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no checkpoint with 2 iterations"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let cut_at = checkpoint_records(&checkpoint);
    assert!(cut_at < 12, "killed before the end ({cut_at} iterations)");
    assert!(!d.join("killed").join("fit.json").exists());

    let stderr = ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "killed", "--resume"],
    ));
    assert!(stderr.contains("resum"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("killed").join("fit.json")).unwrap())
            .unwrap();
    assert!(json.is_object());
    assert!(checkpoint_records(&checkpoint) > cut_at);
    assert!(d.join("killed").join("drivers.safetensors").exists());
}

/// A write that fails for lack of room (here the process's file-size
/// limit, which fails a write the way a full disk does, with the error
/// reported instead of a signal) while the outputs are written: the error
/// names the file, exit status ≠ 0, no staging and no partial output are
/// left, and the checkpoint, written before, is kept for `--resume`.
#[cfg(unix)]
#[test]
fn a_write_that_fails_for_room_is_reported_and_keeps_the_checkpoint() {
    use std::os::unix::process::CommandExt;

    let dir = short_checkpointed_fit();
    let d = dir.path();
    // The outputs' sizes, from a fit that has room: the limit lets the
    // checkpoint through and stops a larger output.
    ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "roomy", "--quiet"],
    ));
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let checkpoint_bytes = size(&d.join("roomy").join("checkpoint.json"));
    let limit = (checkpoint_bytes * 2).max(16 * 1024);
    let largest = ["fitted.ply", "loss.png", "fit.json", "drivers.safetensors"]
        .iter()
        .map(|f| size(&d.join("roomy").join(f)))
        .max()
        .unwrap();
    assert!(
        largest > limit,
        "an output must exceed the limit: largest {largest} B, limit {limit} B"
    );

    let mut command = Command::new(env!("CARGO_BIN_EXE_physfit"));
    command
        .args(["fit", "scene.toml", "--out", "full", "--quiet"])
        .current_dir(d)
        .env("RUST_LOG", "warn");
    // SAFETY: only async-signal-safe libc calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rlimit = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("full"), "the error names where: {stderr}");
    let out = d.join("full");
    assert!(out.join("checkpoint.json").exists(), "{stderr}");
    assert!(!out.join("fit.json").exists(), "no partial outputs");
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("staging"))
        .collect();
    assert!(left.is_empty(), "staging left behind: {left:?}");
    // With room again, --resume writes the outputs.
    ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "full", "--resume", "--quiet"],
    ));
    assert!(out.join("fit.json").exists());
}
