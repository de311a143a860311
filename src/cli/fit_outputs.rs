//! The outputs of `physfit fit` (issue 13, "Outputs"), each written
//! atomically (temporary file, then rename), `fit.json` last: its presence
//! marks a complete fit.
//!
//! | file | what |
//! | --- | --- |
//! | `drivers.safetensors` | everything a re-simulation needs ([`FittedDrivers`]) |
//! | `fitted.ply` | every splat with `youngs_modulus` (world units), `simulated`, `anchored`, `vx vy vz`, `youngs_confidence` |
//! | `loss.jsonl` | one [`physfit::fit::IterationRecord`] per line |
//! | `loss.png` | the loss and PSNR curves per stage |
//! | `compare/<view>/frame_NNNN.png` | reference \| fitted \| 4×\|difference\| per frame |
//! | `stiffness.png` | the object at rest coloured by log10 E (world units), with a colour bar |
//! | `fit.json` | settings (every input by its scene.toml name, as the checkpoint's fingerprint), adapter, final loss, PSNR and SSIM per frame and view, time per stage, recovery |

use std::path::Path;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use physfit::fit::checkpoint::FitFingerprint;
use physfit::fit::preflight::FitInputs;
use physfit::fit::{FitProblem, FitState, ParamMap, Selection, StagePlan};
use physfit::gpu::GpuContext;
use physfit::io::atomic_write::write_atomic;
use physfit::io::png::write_png;
use physfit::output::fitted_ply::{write_fitted_ply, SplatMaterial};
use physfit::output::{youngs_world, FittedDrivers};
use physfit::report::loss_plot::LOSS_PLOT_SIZE;
use physfit::report::{
    loss_plot, recolored, rgb8, stiffness_colours, triptych, with_colorbar, LossCurve, LossPoint,
};
use physfit::scene::frames::Frame;
use physfit::scene::Scene;
use physfit::splat::{Rasterizer, SplatBuffers};

use super::fit::TruthCheck;

/// The files (and the directory) a fit writes: an output directory holding
/// any of them holds an earlier fit.
pub const OUTPUT_FILES: [&str; 7] = [
    "fit.json",
    "drivers.safetensors",
    "fitted.ply",
    "loss.jsonl",
    "loss.png",
    "stiffness.png",
    "compare",
];

/// The colour-bar label of `stiffness.png`.
pub const STIFFNESS_LABEL: &str = "log10 E (world units)";

/// Per-driver `log10 E` and velocity (3 per driver) of `state`.
pub fn per_driver(
    youngs: &ParamMap,
    velocity: &ParamMap,
    state: &FitState,
) -> Result<(Vec<f64>, Vec<f64>)> {
    Ok((
        youngs.apply(&state.log10_youngs)?,
        velocity.apply(&state.velocity)?,
    ))
}

fn write_text(path: &Path, text: &str) -> Result<()> {
    write_atomic(path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

/// `loss.png`: one curve per stage run.
fn loss_curves(plan: &[StagePlan], state: &FitState) -> Vec<LossCurve> {
    plan.iter()
        .map(|stage| LossCurve {
            label: stage.label(),
            points: state
                .records
                .iter()
                .filter(|r| r.round == stage.round && r.stage == stage.kind)
                .map(|r| LossPoint {
                    iteration: r.iteration as usize,
                    loss: r.loss,
                    psnr: r.psnr,
                })
                .collect(),
        })
        .collect()
}

/// `stiffness.png`: the scene at rest in view `view`, every simulated splat
/// coloured by its log10 E in world units (static splats grey), with a
/// colour bar over the scene's `log10_youngs_range` in world units.
fn stiffness_picture(
    ctx: &GpuContext,
    scene: &Scene,
    material: &SplatMaterial,
    side: f64,
    view: usize,
    path: &Path,
) -> Result<()> {
    let log10: Vec<f64> = material
        .youngs_modulus
        .iter()
        .zip(&material.simulated)
        .map(|(&e, &s)| {
            if s > 0.0 {
                f64::from(e).log10()
            } else {
                f64::NAN
            }
        })
        .collect();
    let shift = youngs_world(1.0, side).log10();
    let [low, high] = scene.material.log10_youngs_range.map(|v| v + shift);
    let colours = stiffness_colours(&log10, low, high)?;
    let gaussians = recolored(scene.gaussians(), &colours)?;
    let splats = SplatBuffers::upload(ctx, &gaussians)?;
    let mut raster = Rasterizer::new(ctx)?;
    let camera = &scene.views[view].camera;
    let out = raster.render(ctx, &splats, camera, scene.background)?;
    let frame = Frame {
        width: out.width,
        height: out.height,
        pixels: raster.read_image(ctx, &out)?,
    };
    write_png(
        path,
        &with_colorbar(&rgb8(&frame), low, high, STIFFNESS_LABEL)?,
    )?;
    Ok(())
}

/// Writes every output of a finished fit into `out` (module doc).
#[allow(clippy::too_many_arguments)]
pub fn write_outputs(
    ctx: &GpuContext,
    scene: &Scene,
    problem: &mut FitProblem,
    plan: &[StagePlan],
    state: &FitState,
    stage_seconds: &[f64],
    camera_check: &[(String, f64)],
    truth: Option<&TruthCheck>,
    inputs: &FitInputs,
    settings: &FitFingerprint,
    out: &Path,
    quiet: bool,
) -> Result<()> {
    let drivers = problem.drivers().clone();
    let (log10, velocity) = per_driver(problem.youngs_map(), problem.velocity_map(), state)?;
    let confidence: Option<Vec<f64>> = match &state.confidence {
        Some(c) => Some(
            problem
                .youngs_map()
                .apply(c)?
                .into_iter()
                .zip(&drivers.anchored)
                .map(|(c, &a)| if a { 0.0 } else { c })
                .collect(),
        ),
        None => None,
    };
    let side = drivers.sim_box.side;

    let fitted = FittedDrivers::new(scene, &drivers, &log10, &velocity, confidence.as_deref())?;
    fitted.save(&out.join("drivers.safetensors"))?;
    let material = SplatMaterial::new(scene, &drivers, &log10, &velocity, confidence.as_deref())?;
    write_fitted_ply(&out.join("fitted.ply"), scene, &material)?;

    let mut jsonl = String::new();
    for r in &state.records {
        jsonl.push_str(&serde_json::to_string(r)?);
        jsonl.push('\n');
    }
    write_text(&out.join("loss.jsonl"), &jsonl)?;
    let (w, h) = LOSS_PLOT_SIZE;
    write_png(
        &out.join("loss.png"),
        &loss_plot(&loss_curves(plan, state), w, h)?,
    )?;

    // The fitted rollout: its loss on every frame and view, and compare/.
    let params = state.parameters();
    let all = Selection {
        frames: (1..inputs.frames).collect(),
        views: inputs.views.clone(),
    };
    let report = problem
        .loss(ctx, &params, &all)
        .context("the fitted rollout")?;
    let rollout = problem.forward_states(ctx, &params, inputs.frames - 1)?;
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new((inputs.frames * inputs.views.len()) as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{prefix:>18} {bar:30} {pos}/{len} [{elapsed}, eta {eta}]")
            .expect("valid template"),
    );
    bar.set_prefix("compare frames");
    for &v in &inputs.views {
        let view = &scene.views[v];
        let dir = out.join("compare").join(&view.name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let frames = view.frames.as_ref().expect("views with frames");
        for (k, state) in rollout.frames.iter().enumerate() {
            let rendered = problem.render_state(ctx, state, v)?;
            let reference = frames.load(k)?;
            write_png(
                &dir.join(format!("frame_{k:04}.png")),
                &triptych(&reference, &rendered)?,
            )?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    stiffness_picture(
        ctx,
        scene,
        &material,
        side,
        inputs.views[0],
        &out.join("stiffness.png"),
    )?;

    let recovery = truth.map(|t| t.recovery(&drivers, &log10, &velocity));
    let per_frame: Vec<_> = report
        .images
        .iter()
        .map(|t| {
            json!({
                "frame": t.frame,
                "view": scene.views[t.view].name,
                "psnr": t.terms.psnr(),
                "ssim": t.terms.ssim(),
                "l1": t.terms.l1,
            })
        })
        .collect();
    let (psnr, ssim) = physfit::fit::fitter::mean_quality(&report);
    let stages: Vec<_> = plan
        .iter()
        .zip(stage_seconds)
        .map(|(p, s)| {
            json!({
                "round": p.round,
                "stage": p.kind.name(),
                "iterations": p.settings.iterations,
                "learning_rate": p.settings.learning_rate,
                "frames": p.selection.frames,
                "seconds": s,
            })
        })
        .collect();
    let info = &ctx.adapter_info;
    let world = |l: f64| youngs_world(10f64.powf(l), side);
    let youngs_parameters: Vec<_> = state
        .log10_youngs
        .iter()
        .map(|l| json!({ "log10_normalised": l, "world": world(*l) }))
        .collect();
    let summary = json!({
        "scene": scene.path.display().to_string(),
        "units": {
            "youngs_normalised": "the simulator's: the box mapped to [0,1]^3, as scene.toml's material values (PhysDreamer's convention)",
            "youngs_world": "E_normalised * box_side^2 with box_side in the .ply's length unit (Pa for metres at the scene's density)",
            "box_side": side,
            "velocity": "world units / s",
        },
        "settings": {
            "inputs": &settings.0,
            "fit.velocity.iterations": scene.fit.velocity.iterations,
            "fit.stiffness.iterations": scene.fit.stiffness.iterations,
            "fit.checkpoint_every": scene.fit.checkpoint_every,
            "drivers": drivers.len(),
            "grid_res": scene.simulation.grid_res,
            "substeps": scene.simulation.substeps,
            "log10_youngs_range": scene.material.log10_youngs_range,
            "start_youngs_modulus": scene.material.youngs_modulus,
        },
        "adapter": {
            "name": info.name,
            "backend": format!("{:?}", info.backend),
            "driver": format!("{} {}", info.driver, info.driver_info),
            "software": ctx.is_software(),
        },
        "camera_check_psnr": camera_check.iter().map(|(v, db)| json!({"view": v, "psnr": db})).collect::<Vec<_>>(),
        "stages": stages,
        "final": {
            "loss": report.loss,
            "image": report.image,
            "tv": report.tv,
            "mean_psnr": psnr,
            "mean_ssim": ssim,
            "frames": per_frame,
        },
        "youngs_parameters": youngs_parameters,
        "velocity_parameters": state.velocity,
        "recovery": recovery,
    });
    write_text(
        &out.join("fit.json"),
        &serde_json::to_string_pretty(&summary)?,
    )?;
    if !quiet {
        eprintln!(
            "fitted rollout: mean PSNR {psnr:.2} dB, SSIM {ssim:.4} over {} frames × {} views",
            all.frames.len(),
            all.views.len()
        );
        if let Some(r) = &recovery {
            eprintln!("recovery of the truth: {}", r.summary());
        }
        eprintln!(
            "wrote {}: fitted.ply, drivers.safetensors, fit.json, loss.jsonl, loss.png, stiffness.png, compare/",
            out.display()
        );
    }
    Ok(())
}
