//! The fit's own loss around the truth of the drop twin (scenes/xdrop, made
//! by tools/xdrop/generate.py, another engine): physfit's forward at the
//! truth's velocity (its drop and spin) over a grid of (log10 E, Poisson's
//! ratio ν), on the frames and weights the stiffness stage fits (frames
//! 1–20, all four views). The scan sets ν per point through
//! `material.poisson_ratio` (what `loss_of_drivers` simulates at, the
//! scene's fit of ν notwithstanding), at the scene's explicit substeps, so
//! that only the material changes. It prints the truth's per-frame PSNR
//! (physfit's ceiling on these frames) and where the loss's optimum lies
//! against the truth (docs/benchmarks.md, "physfit's ceiling on a dropped
//! object").
//!
//! cargo test --release --test gpu_mpm xdrop_loss_scan -- --ignored --nocapture
//!
//! `PHYSFIT_XDROP_E` and `PHYSFIT_XDROP_NU` (comma-separated) replace the
//! grid's log10 E and ν values.

use std::path::PathBuf;

use physfit::drive::DriverSet;
use physfit::fit::{FitProblem, FitProblemOptions, LossReport, Selection};
use physfit::scene::Scene;
use physfit::synth::Truth;

use crate::common::gpu;

/// The truth is log10 E = 5.5 and ν = 0.2 (scenes/xdrop/truth.toml,
/// tools/xdrop/generate.py).
const LOG10_E: [f64; 5] = [4.9, 5.2, 5.5, 5.8, 6.1];
const NU: [f64; 4] = [0.1, 0.2, 0.3, 0.4];
const TRUE_LOG10_E: f64 = 5.5;
const TRUE_NU: f64 = 0.2;

fn grid(var: &str, default: &[f64]) -> Vec<f64> {
    match std::env::var(var) {
        Ok(s) => s
            .split(',')
            .map(|v| v.trim().parse().unwrap_or_else(|_| panic!("{var}: {v}")))
            .collect(),
        Err(_) => default.to_vec(),
    }
}

fn mean_psnr(report: &LossReport) -> f64 {
    report.images.iter().map(|t| t.terms.psnr()).sum::<f64>() / report.images.len() as f64
}

/// The vertex of the parabola through the lowest point of `losses` and its
/// two neighbours (`None` at an end of the grid).
fn vertex(xs: &[f64], losses: &[f64]) -> Option<f64> {
    let i = (0..losses.len()).min_by(|&a, &b| losses[a].total_cmp(&losses[b]))?;
    if i == 0 || i + 1 == losses.len() {
        return None;
    }
    let (x0, x1, x2) = (xs[i - 1], xs[i], xs[i + 1]);
    let (y0, y1, y2) = (losses[i - 1], losses[i], losses[i + 1]);
    let d = (x0 - x1) * (x0 - x2) * (x1 - x2);
    let a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / d;
    let b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / d;
    Some(-b / (2.0 * a))
}

#[test]
#[ignore = "minutes on a CPU: the figures of docs/benchmarks.md (module doc)"]
fn xdrop_loss_scan() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scene = Scene::load(&repo.join("scenes/xdrop/xdrop.toml")).unwrap();
    let truth = Truth::load(
        &repo.join("scenes/xdrop/truth.toml"),
        scene.material.log10_youngs_range,
    )
    .unwrap();
    let ctx = gpu();
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let values = truth.per_driver(&drivers);
    let frames = scene.frame_count().unwrap();
    let selection = Selection {
        frames: (1..frames).collect(),
        views: (0..scene.views.len()).collect(),
    };
    let (log10_e, nu) = (
        grid("PHYSFIT_XDROP_E", &LOG10_E),
        grid("PHYSFIT_XDROP_NU", &NU),
    );
    println!(
        "{} drivers, {} substeps/frame; loss (mean PSNR dB) over frames 1–{} × {} views",
        drivers.len(),
        scene.simulation.substeps,
        frames - 1,
        scene.views.len()
    );
    print!("{:>9}", "ν \\ log10E");
    for e in &log10_e {
        print!(" {e:>16}");
    }
    println!();
    let mut best = (f64::INFINITY, 0.0, 0.0);
    let mut truth_report = None;
    for &n in &nu {
        let mut at = scene.clone();
        at.material.poisson_ratio = n;
        let options = FitProblemOptions::from_scene(&at, &drivers, &at.fit.stiffness).unwrap();
        let mut problem = FitProblem::from_drivers(&ctx, &at, drivers.clone(), &options).unwrap();
        let mut losses = Vec::new();
        print!("{n:>10}");
        for &e in &log10_e {
            let youngs = vec![e; drivers.len()];
            let report = problem
                .loss_of_drivers(
                    &ctx,
                    &youngs,
                    &values.velocity,
                    Some(&values.velocity_gradient),
                    &selection,
                )
                .unwrap();
            print!(" {:>8.4} ({:>5.2})", report.loss, mean_psnr(&report));
            losses.push(report.loss);
            if report.loss < best.0 {
                best = (report.loss, e, n);
            }
            if e == TRUE_LOG10_E && n == TRUE_NU {
                // The same rollout with APIC's C started at 0 rather than
                // at the spin's gradient: what the initial affine velocity
                // changes in the free fall.
                let without_c0 = problem
                    .loss_of_drivers(&ctx, &youngs, &values.velocity, None, &selection)
                    .unwrap();
                truth_report = Some((report, without_c0));
            }
        }
        match vertex(&log10_e, &losses) {
            Some(v) => println!("  parabola: log10 E {v:.3}"),
            None => println!("  lowest at an end of the grid"),
        }
    }
    println!(
        "lowest: loss {:.4} at log10 E {}, ν {} (truth {TRUE_LOG10_E}, {TRUE_NU})",
        best.0, best.1, best.2
    );
    if let Some((report, without_c0)) = &truth_report {
        at_truth(&scene, report, "C0 = the spin's gradient");
        at_truth(&scene, without_c0, "C0 = 0");
    }
    assert!(best.0.is_finite());
}

/// Prints the truth's loss and its PSNR per frame in every view (physfit's
/// ceiling on these frames), when the grid holds the truth: started as the
/// fit starts a rigid field (APIC's `C` at the spin's gradient, as xdrop
/// starts it), and with `C = 0` for comparison.
fn at_truth(scene: &Scene, report: &LossReport, start: &str) {
    println!(
        "at the truth, {start}: loss {:.4} (image {:.4}), mean PSNR {:.2} dB",
        report.loss,
        report.image,
        mean_psnr(report)
    );
    for (v, view) in scene.views.iter().enumerate() {
        let psnr: Vec<String> = report
            .images
            .iter()
            .filter(|t| t.view == v)
            .map(|t| format!("{:.1}", t.terms.psnr()))
            .collect();
        println!("  {:>6} (dB, frames 1–): {}", view.name, psnr.join(" "));
    }
}
