//! The error bars of a fit (src/fit/uncertainty_estimate.rs) against the
//! truth, on the small block twin of fit_cli.rs: a soft top (log10 E 3.5)
//! on a stiffer base (4.0), pushed sideways at 1 world unit/s, fitted with
//! one E per region (the truth's own boxes) and one global velocity, so
//! that the five fitted values get their errors from the joint Hessian.
//!
//! Calibration: the fraction of fitted values whose truth lies within two
//! standard errors. With noisy frames of the fit's own discretisation,
//! converged tightly and without the TV term, the data are the whole
//! story, and every truth must lie inside. Without noise the residual is
//! the model's error, and with synth's finer discretisation the fit
//! carries the discretisation's bias, which error bars from the data do
//! not cover (docs/benchmarks.md, "Error bars"): those figures are
//! measured by the ignored test.

use std::path::Path;

use physfit::fit::uncertainty::CurvatureMethod;
use physfit::fit::FitSummary;

use super::fit_cli::{fit_json, scene_toml, twin_simulated_by, twin_with, TRUTH_BOXES};
use crate::common::cli::{ok, physfit};

/// The regions of the truth's boxes, as a stiffness field.
const REGIONS: &str = r#"
[fit.stiffness.regions]
top = [{ min = [-1.0, -1.0, 0.2], max = [1.0, 1.0, 1.0] }]
"#;

/// The truth of every fitted value: `(name, truth, fitted, standard error)`.
fn against_truth(json: &FitSummary) -> Vec<(String, f64, f64, Option<f64>)> {
    let truth_youngs = |name: &str| match name {
        "top" => 3.5,
        "rest of the object" => 4.0,
        other => panic!("unexpected region {other}"),
    };
    let u = json.uncertainty.as_ref().expect("error bars");
    let mut rows: Vec<_> = json
        .youngs_parameters
        .iter()
        .map(|p| {
            (
                format!("log10 E {}", p.name),
                truth_youngs(&p.name),
                p.log10_normalised,
                p.log10_std,
            )
        })
        .collect();
    for (i, (&v, &s)) in json
        .velocity_parameters
        .iter()
        .zip(&u.velocity_std)
        .enumerate()
    {
        rows.push((format!("v0[{i}]"), [1.0, 0.0, 0.0][i], v, s));
    }
    rows
}

/// Adds independent noise of standard deviation `sigma` (in [0, 1] units)
/// to every colour value of every reference frame but the rest frame 0
/// (which the camera check compares), as 8-bit values again; a fixed seed.
/// The frames' values must lie well inside (0, 1), or the clipping biases
/// the noise.
fn add_noise(dir: &Path, sigma: f64, seed: u64) {
    let mut state = seed;
    let mut uniform = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    for view in ["front", "side"] {
        let mut frames: Vec<_> = std::fs::read_dir(dir.join("synth").join(view))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "png"))
            .collect();
        frames.sort();
        for path in &frames[1..] {
            let mut image = image::open(path).unwrap().to_rgb8();
            for p in image.pixels_mut() {
                for c in &mut p.0 {
                    // Box–Muller.
                    let (u, v) = (uniform().max(1e-300), uniform());
                    let n = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                    *c = (f64::from(*c) + 255.0 * sigma * n)
                        .round()
                        .clamp(0.0, 255.0) as u8;
                }
            }
            image.save(path).unwrap();
        }
    }
}

/// How a twin is made and fitted.
struct Twin<'a> {
    label: &'a str,
    synth_flags: &'a [&'a str],
    /// The frames' noise (standard deviation, [0, 1] units) and its seed.
    noise: Option<(f64, u64)>,
    /// Added to `[fit.stiffness]`.
    stiffness: &'a str,
    /// Added to `[fit.velocity]`.
    velocity: &'a str,
    /// Under the `stencil` anchoring rule instead of the default.
    stencil: bool,
}

/// Fits `twin` and returns its values against the truth, printing each
/// (with Newton's step from it, in standard errors) and the fraction
/// within 2σ.
fn fitted_against_truth(twin: &Twin<'_>) -> Vec<(String, f64, f64, Option<f64>)> {
    let label = twin.label;
    let mut scene = scene_toml("regions", &format!("{}\n{REGIONS}", twin.stiffness))
        .replace("frames = 4\n", &format!("frames = 4\n{}\n", twin.velocity));
    if twin.stencil {
        scene = crate::fit_cli::under_the_stencil_rule(&scene);
    }
    if twin.noise.is_some() {
        // Noise clipped at a black background would brighten it on
        // average: a bias the fit would explain by moving the block.
        scene.push_str("\n[reference]\nbackground = [0.5, 0.5, 0.5]\n");
    }
    let dir = twin_with(&scene, TRUTH_BOXES, twin.synth_flags);
    let d = dir.path();
    if let Some((sigma, seed)) = twin.noise {
        add_noise(d, sigma, seed);
    }
    ok(&physfit(
        d,
        &[
            "fit",
            "scene.toml",
            "--truth",
            "truth.toml",
            "--out",
            "fit",
            "--quiet",
        ],
    ));
    let json = fit_json(&d.join("fit"));
    let u = json.uncertainty.as_ref().expect("error bars in fit.json");
    eprintln!(
        "{label}: N = {} residuals, image loss {:.4e}, scale {:.3e}, {} evaluations",
        u.residuals, u.image_loss, u.scale, u.evaluations
    );
    let c = u
        .correlations
        .as_ref()
        .expect("the joint Hessian's correlations");
    assert_eq!(c.names.len(), 5);
    let rows = against_truth(&json);
    let mut inside = 0;
    for ((name, truth, fitted, std), newton) in rows.iter().zip(&c.newton_step) {
        let sigmas = |x: f64| std.map(|s| x / s);
        eprintln!(
            "{label}: {name}: fitted {fitted:.4} truth {truth:.4} std {std:?} \
             (fitted − truth)/std {:?} Newton step/std {:?}",
            sigmas(fitted - truth),
            newton.and_then(sigmas)
        );
        inside += usize::from(sigmas(fitted - truth).is_some_and(|z| z.abs() <= 2.0));
    }
    eprintln!(
        "{label}: {inside} of {} truths within 2 standard errors",
        rows.len()
    );
    assert_eq!(u.youngs_method, Some(CurvatureMethod::Hessian));
    assert_eq!(u.velocity_method, Some(CurvatureMethod::Hessian));
    assert!(u.residuals > 0 && u.scale > 0.0);
    rows
}

/// Converged tightly (the stages' default tolerance stops where the loss
/// is flat to 0.2%, which on noisy frames is several standard errors from
/// the optimum), and without the TV term, whose pull between the regions
/// is a bias no error bar from the data covers.
const TIGHT: &str = "tolerance = 1e-7";

/// Noise of 2% on frames of the fit's own discretisation: the data are
/// the whole story, and every truth must lie within 3σ. Not 2σ: with error
/// bars that are right, each of the five values lies within 2σ 95% of the
/// time and all five only 77% of the time, and the float atomics' noise
/// moves a value near the edge across it from run to run (one run put v0[2]
/// at 2.2σ, the next at 1.87σ). Within 3σ all five hold 98.5% of the time,
/// while bars half as wide as they should be fail every other run. The
/// fraction within 2σ,
/// the calibration itself, is measured in docs/benchmarks.md ("Error
/// bars").
#[test]
fn the_truth_lies_within_three_standard_errors_on_a_noisy_twin_of_the_fits_discretisation() {
    let rows = fitted_against_truth(&Twin {
        label: "same discretisation, noise 0.02",
        synth_flags: &["--same-discretisation"],
        noise: Some((0.02, 0x1234_5678_9ABC_DEF0)),
        stiffness: &format!("{TIGHT}\ntv_weight = 0.0"),
        velocity: TIGHT,
        // Under `splats` (the default) the top's E is looser on these noisy
        // frames (σ 0.13 decades), and in one of three runs the joint
        // Hessian, by differences of float-atomic gradients, was not
        // positive definite: the fit then takes the stiffness block's bars
        // and reports no correlations, which this test requires.
        stencil: true,
    });
    for (name, truth, fitted, std) in rows {
        let std = std.unwrap_or_else(|| panic!("{name}: no error bar"));
        assert!(std.is_finite() && std > 0.0, "{name}: {std}");
        assert!(
            (fitted - truth).abs() <= 3.0 * std,
            "{name}: fitted {fitted}, truth {truth}, 3σ {}",
            3.0 * std
        );
    }
}

/// The calibration without noise, with the fit's default settings, on
/// frames of its own and of synth's finer discretisation (docs/benchmarks.md,
/// "Error bars"): printed; it asserts only that every value got a finite
/// error bar.
#[test]
#[ignore = "a measurement for docs/benchmarks.md"]
fn calibration_with_default_settings() {
    for (label, synth_flags) in [
        (
            "same discretisation, defaults",
            &["--same-discretisation"][..],
        ),
        ("finer truth, defaults", &[][..]),
        ("finer truth, tight, no TV", &[][..]),
    ] {
        let tight = label.contains("tight");
        let rows = fitted_against_truth(&Twin {
            label,
            synth_flags,
            noise: None,
            stencil: false,
            stiffness: if tight {
                "tolerance = 1e-7\ntv_weight = 0.0"
            } else {
                ""
            },
            velocity: if tight { TIGHT } else { "" },
        });
        for (name, _, _, std) in rows {
            assert!(std.is_some_and(f64::is_finite), "{label}: {name}: {std:?}");
        }
    }
}

/// The calibration over more noise draws of the test above
/// (docs/benchmarks.md, "Error bars"): printed per draw and in total; it
/// asserts that at least half of the truths lie within 2σ, far below the
/// 95% a calibrated error bar gives, so that it fails only when the bars
/// are far too narrow.
#[test]
#[ignore = "a measurement for docs/benchmarks.md"]
fn calibration_over_noise_draws() {
    let (mut inside, mut total) = (0, 0);
    for seed in 1..=4u64 {
        let label = format!("noise 0.02, draw {seed}");
        let rows = fitted_against_truth(&Twin {
            label: &label,
            synth_flags: &["--same-discretisation"],
            noise: Some((0.02, seed)),
            stiffness: &format!("{TIGHT}\ntv_weight = 0.0"),
            velocity: TIGHT,
            stencil: true,
        });
        for (_, truth, fitted, std) in rows {
            total += 1;
            inside += usize::from(std.is_some_and(|s| (fitted - truth).abs() <= 2.0 * s));
        }
    }
    eprintln!("over the draws: {inside} of {total} truths within 2 standard errors");
    assert!(2 * inside >= total, "{inside} of {total}");
}

/// A region whose E ends at an end of the E range gets no error bar: the
/// bound holds it there, not the frames, and the loss's optimum lies
/// outside the range, so a curvature at the bound would claim a precision
/// the frames do not give. The block's "rest of the object" (truth 10^4.0)
/// is fitted in a range that stops at 3.8; the top region (3.5) keeps its
/// error bar.
#[test]
fn a_region_held_at_the_end_of_the_range_gets_no_error_bar() {
    // The frames are made in the full range (synth refuses a truth outside
    // its scene's range); the fit's range stops short of the rest's truth.
    let made = scene_toml("regions", REGIONS).replace("rounds = 2", "rounds = 1");
    let scene = made.replace(
        "log10_youngs_range = [3.0, 4.5]",
        "log10_youngs_range = [3.0, 3.8]",
    );
    assert!(scene.contains("[3.0, 3.8]"));
    let dir = twin_simulated_by(&scene, &made, TRUTH_BOXES, &["--same-discretisation"]);
    let d = dir.path();
    // A plain fit of the frames: the twin's record would check its truth
    // against the fit's narrower range and refuse it.
    for record in ["truth.toml", "synth.json"] {
        let _ = std::fs::remove_file(d.join("synth").join(record));
    }
    ok(&physfit(
        d,
        &["fit", "scene.toml", "--out", "fit", "--quiet"],
    ));
    let json = fit_json(&d.join("fit"));
    let u = json.uncertainty.as_ref().expect("error bars");
    for (i, p) in json.youngs_parameters.iter().enumerate() {
        eprintln!(
            "{}: 10^{} std {:?}",
            p.name, p.log10_normalised, p.log10_std
        );
        match p.name.as_str() {
            "rest of the object" => {
                assert!((p.log10_normalised - 3.8).abs() < 1e-4, "held at the top");
                assert_eq!(p.log10_std, None);
                assert!(!u.youngs_constrained[i]);
            }
            _ => {
                assert!(p.log10_std.is_some_and(|s| s.is_finite() && s > 0.0));
                assert!(u.youngs_constrained[i]);
            }
        }
    }
}
