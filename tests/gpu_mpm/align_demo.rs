//! `physfit align` on the demo scene, the figures of docs/benchmarks.md
//! ("Camera alignment"). Minutes on a CPU, so not part of the default run:
//!
//! ```text
//! cargo test --release --test gpu_mpm align_demo -- --ignored --nocapture --test-threads 1
//! ```
//!
//! With `PHYSFIT_KEEP=1` the working directories are kept (their paths
//! printed), for the pictures.
//!
//! Both views' cameras are put off by 3° about a skew axis and 3% of the
//! object's distance (then 10° and 10%), and the frames are re-recorded
//! with a gain of 0.85 and an offset of +0.04. Align must bring the
//! rotation within 0.1° and the centre within 0.5% of the distance, and
//! the gain and offset within 0.01; a fit
//! of the aligned scene must recover the material within 0.02 of median
//! |Δ log10 E| and 1 point of v0 error of a fit with the true cameras.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::common::cameras::{perturbed, write_recoloured};
use crate::common::cli::{ok, physfit};
use glam::Vec3;
use physfit::align::chart::rotation_angle_degrees;
use physfit::align::view_align::object_extent;
use physfit::fit::FitSummary;
use physfit::scene::{Camera, Scene};
use toml_edit::{value, Array, DocumentMut, Value};

const GAIN: f32 = 0.85;
const OFFSET: f32 = 0.04;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn array(v: [f32; 3]) -> Value {
    Value::Array(
        v.iter()
            .map(|&x| Value::from(f64::from(x)))
            .collect::<Array>(),
    )
}

/// A copy of the demo in `dir`: recoloured frames, cameras off by
/// `degrees` and `percent` of the distance, the fit's output in `dir/fit`.
fn perturbed_demo(dir: &Path, degrees: f32, percent: f32) -> PathBuf {
    let scene = Scene::load(&repo().join("scenes/fox.toml")).unwrap();
    let centres: Vec<Vec3> = scene
        .splats
        .gaussians
        .means
        .iter()
        .map(|&m| Vec3::from(m))
        .collect();
    let (centroid, _) = object_extent(&centres);
    let text = std::fs::read_to_string(repo().join("scenes/fox.toml")).unwrap();
    let mut doc: DocumentMut = text.parse().unwrap();
    doc["gaussians"]["path"] = value(repo().join("assets/fox.ply").display().to_string());
    doc["output"]["directory"] = value("fit");
    let axes = [Vec3::new(0.4, -0.7, 0.3), Vec3::new(-0.5, 0.2, 0.8)];
    let shifts = [Vec3::new(0.5, 0.3, -0.8), Vec3::new(-0.6, 0.6, 0.5)];
    for (i, view) in scene.views.iter().enumerate() {
        std::fs::create_dir_all(dir.join(format!("frames/{}", view.name))).unwrap();
        for (k, path) in view.frames.as_ref().unwrap().paths.iter().enumerate() {
            let to = dir.join(format!("frames/{}/frame_{k:04}.png", view.name));
            write_recoloured(path, &to, GAIN, OFFSET);
        }
        let c = &view.camera;
        let distance = (centroid.as_vec3() - c.position()).length();
        let (r, t) = perturbed(
            (c.rotation, c.translation),
            axes[i],
            degrees,
            shifts[i].normalize() * (percent / 100.0 * distance),
        );
        let v = &mut doc["views"][i];
        v["frames"] = value(format!("frames/{}/*.png", view.name));
        let cam = v["camera"].as_table_like_mut().unwrap();
        for key in ["position", "look_at", "up"] {
            cam.remove(key);
        }
        let mut rows = Array::new();
        for k in 0..3 {
            rows.push(array(r.row(k).to_array()));
        }
        cam.insert("rotation", toml_edit::Item::Value(Value::Array(rows)));
        cam.insert("translation", toml_edit::Item::Value(array(t.to_array())));
    }
    let path = dir.join("scene.toml");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

fn check_cameras(truth: &Scene, aligned: &Scene, label: &str) {
    let centres: Vec<Vec3> = truth
        .splats
        .gaussians
        .means
        .iter()
        .map(|&m| Vec3::from(m))
        .collect();
    let (centroid, _) = object_extent(&centres);
    for (t, a) in truth.views.iter().zip(&aligned.views) {
        let true_camera: &Camera = &t.camera;
        let distance = (centroid.as_vec3() - true_camera.position()).length();
        let rotation = rotation_angle_degrees(true_camera, &a.camera);
        let shift = 100.0 * (a.camera.position() - true_camera.position()).length() / distance;
        println!(
            "{label} {}: rotation error {rotation:.4}°, centre error {shift:.3}% of {distance:.3}, gain {:?}, offset {:?}",
            t.name, a.color_correction.gain, a.color_correction.offset
        );
        assert!(
            rotation < 0.1,
            "{label} {}: rotation off by {rotation}°",
            t.name
        );
        assert!(shift < 0.5, "{label} {}: centre off by {shift}%", t.name);
        for c in 0..3 {
            assert!(
                (a.color_correction.gain[c] - GAIN).abs() < 0.01
                    && (a.color_correction.offset[c] - OFFSET).abs() < 0.01,
                "{label} {}: colour {:?} {:?}",
                t.name,
                a.color_correction.gain,
                a.color_correction.offset
            );
        }
    }
}

/// A working directory, kept when `PHYSFIT_KEEP` is set.
fn workdir(label: &str) -> (Option<tempfile::TempDir>, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    if std::env::var_os("PHYSFIT_KEEP").is_some() {
        let path = dir.keep();
        println!("{label}: working directory {}", path.display());
        (None, path)
    } else {
        let path = dir.path().to_path_buf();
        (Some(dir), path)
    }
}

fn align(dir: &Path, label: &str) -> Scene {
    let started = Instant::now();
    let run = physfit(dir, &["align", "scene.toml", "--out", "aligned"]);
    println!("{}", String::from_utf8_lossy(&run.stdout));
    ok(&run);
    println!(
        "{label}: align took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Scene::load(&dir.join("aligned/scene.toml")).unwrap()
}

#[test]
#[ignore = "minutes on a CPU: the demo's alignment figures (module doc)"]
fn align_demo_three_degrees_then_fit() {
    let truth = Scene::load(&repo().join("scenes/fox.toml")).unwrap();
    let (_keep, dir) = workdir("3°/3%");
    perturbed_demo(&dir, 3.0, 3.0);
    let aligned = align(&dir, "3°/3%");
    check_cameras(&truth, &aligned, "3°/3%");
    // The fit after align against a fit with the true cameras.
    let truth_file = repo().join("scenes/fox_frames/truth.toml");
    let truth_arg = truth_file.display().to_string();
    let started = Instant::now();
    ok(&physfit(
        &dir,
        &[
            "fit",
            "aligned/scene.toml",
            "--truth",
            &truth_arg,
            "--quiet",
        ],
    ));
    println!(
        "fit after align took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let after = FitSummary::read(&dir.join("fit/fit.json")).unwrap();
    let reference_out = dir.join("true_cameras");
    let reference_arg = reference_out.display().to_string();
    ok(&physfit(
        &repo(),
        &["fit", "scenes/fox.toml", "--out", &reference_arg, "--quiet"],
    ));
    let reference = FitSummary::read(&reference_out.join("fit.json")).unwrap();
    let (a, r) = (after.recovery.unwrap(), reference.recovery.unwrap());
    println!(
        "fit after align: v0 {:.2}%, median |Δ log10 E| {:.4}; with the true cameras: v0 {:.2}%, median {:.4}",
        100.0 * a.velocity_relative_error,
        a.log10_youngs_median_error,
        100.0 * r.velocity_relative_error,
        r.log10_youngs_median_error
    );
    assert!((a.log10_youngs_median_error - r.log10_youngs_median_error).abs() <= 0.02);
    assert!((a.velocity_relative_error - r.velocity_relative_error).abs() <= 0.01);
}

#[test]
#[ignore = "minutes on a CPU: the demo's alignment figures (module doc)"]
fn align_demo_ten_degrees() {
    let truth = Scene::load(&repo().join("scenes/fox.toml")).unwrap();
    let (_keep, dir) = workdir("10°/10%");
    perturbed_demo(&dir, 10.0, 10.0);
    let aligned = align(&dir, "10°/10%");
    check_cameras(&truth, &aligned, "10°/10%");
}
