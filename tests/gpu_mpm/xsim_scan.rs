//! The fit's own loss around the truth of the other engine's twin
//! (scenes/xsim): physfit's forward at the truth's velocity and a grid of
//! (stem, leaf) log10 E, on the frames and weights the fit uses (the
//! scene's, frames 1–6, both views), so that a fit's result can be placed
//! against physfit's own optimum on frames another simulator made, where
//! the mismatch between the engines moves it off the truth
//! (docs/benchmarks.md, "The other engine's twin").
//!
//! cargo test --release --test gpu_mpm xsim_loss_scan -- --ignored --nocapture
//!
//! `PHYSFIT_XSIM_FIT=DIR` also scores a fit's `DIR/drivers.safetensors`
//! with the same loss.

use std::path::PathBuf;

use physfit::drive::DriverSet;
use physfit::fit::{FitProblem, FitProblemOptions, Selection};
use physfit::output::FittedDrivers;
use physfit::scene::Scene;
use physfit::synth::Truth;

use crate::common::gpu;

const STEM: [f64; 6] = [5.9, 6.0, 6.1, 6.2, 6.3, 6.4];
const LEAF: [f64; 4] = [5.1, 5.2, 5.3, 5.4];

fn truth_text(stem: f64, leaf: f64) -> String {
    format!(
        "frames = 13\n[youngs]\nkind = \"boxes\"\ndefault = {stem}\n\
         boxes = [{{ min = [0.1, -0.2, 0.4], max = [0.6, 0.2, 0.65], log10 = {leaf} }}]\n\
         [velocity]\nkind = \"uniform\"\nvalue = [0.0, 0.6, -0.6]\n"
    )
}

#[test]
#[ignore = "minutes on a CPU: the figures of docs/benchmarks.md (module doc)"]
fn xsim_loss_scan() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scene = Scene::load(&repo.join("scenes/xsim/xsim.toml")).unwrap();
    let ctx = gpu();
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let options = FitProblemOptions::from_scene(&scene, &drivers, &scene.fit.velocity).unwrap();
    let mut problem = FitProblem::from_drivers(&ctx, &scene, drivers.clone(), &options).unwrap();
    let frames = scene.views[0].frames.as_ref().unwrap().paths.len();
    let selection = Selection {
        frames: (1..frames).collect(),
        views: (0..scene.views.len()).collect(),
    };
    let dir = tempfile::tempdir().unwrap();
    let mut best = (f64::INFINITY, 0.0, 0.0);
    println!(
        "loss (mean PSNR dB) over frames 1–{}, both views",
        frames - 1
    );
    print!("{:>6}", "stem\\leaf");
    for leaf in LEAF {
        print!(" {leaf:>16}");
    }
    println!();
    for stem in STEM {
        print!("{stem:>9}");
        for leaf in LEAF {
            let path = dir.path().join("truth.toml");
            std::fs::write(&path, truth_text(stem, leaf)).unwrap();
            let truth = Truth::load(&path, scene.material.log10_youngs_range).unwrap();
            let values = truth.per_driver(&drivers);
            let report = problem
                .loss_of_drivers(
                    &ctx,
                    &values.log10_youngs,
                    &values.velocity,
                    Some(&values.velocity_gradient),
                    &selection,
                )
                .unwrap();
            let psnr = report.images.iter().map(|t| t.terms.psnr()).sum::<f64>()
                / report.images.len() as f64;
            print!(" {:>8.4} ({:>5.2})", report.loss, psnr);
            if report.loss < best.0 {
                best = (report.loss, stem, leaf);
            }
        }
        println!();
    }
    println!(
        "lowest: loss {:.4} at stem {}, leaf {} (contrast ×{:.2})",
        best.0,
        best.1,
        best.2,
        10f64.powf(best.1 - best.2)
    );
    if let Some(fit) = std::env::var_os("PHYSFIT_XSIM_FIT") {
        let fitted = FittedDrivers::load(&PathBuf::from(fit).join("drivers.safetensors")).unwrap();
        let velocity: Vec<f64> = fitted.velocity.iter().flatten().copied().collect();
        let gradient: Option<Vec<f64>> = fitted
            .velocity_gradient
            .as_ref()
            .map(|g| g.as_flattened().as_flattened().to_vec());
        let report = problem
            .loss_of_drivers(
                &ctx,
                &fitted.log10_youngs,
                &velocity,
                gradient.as_deref(),
                &selection,
            )
            .unwrap();
        println!("the fit's drivers: loss {:.4}", report.loss);
    }
    assert!(best.0.is_finite());
}
