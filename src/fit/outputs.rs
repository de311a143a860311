//! The outputs of a finished fit, each written atomically (temporary file,
//! then rename), `fit.json` last: its presence marks a complete fit.
//!
//! | file | what |
//! | --- | --- |
//! | `drivers.safetensors` | everything a re-simulation needs ([`FittedDrivers`]) |
//! | `fitted.ply` | every splat with `youngs_modulus` (world units: the finest level's E, and a fitted ν, when the discretisation check converged, the fit's own otherwise; `drivers.safetensors` keeps the fit's own), `simulated`, `anchored`, `vx vy vz`, `youngs_log10_std` (the data's error bar, with the discretisation's error in quadrature once a level ran: [`super::material_answer`]; [`crate::output::fitted_ply`]) |
//! | `loss.jsonl` | one [`super::IterationRecord`] per line |
//! | `loss.png` | the loss and PSNR curves per stage, the scan's candidates against log10 E |
//! | `compare/<view>/frame_NNNN.png` | reference \| fitted \| 4×\|difference\| per frame (the fitted render with the view's colour correction, as the loss compares it), captioned with the frame number and the PSNR |
//! | `stiffness.png` | the object at rest coloured by log10 E (world units), with a colour bar ([`crate::output::stiffness`]); beside it, when the fit estimated error bars, the same view coloured by `fitted.ply`'s error bar of log10 E: where E is known and where it is the regulariser's guess ([`crate::output::error_bar_colouring`]) |
//! | `fit.json` | [`FitSummary`] |

use std::path::Path;

use image::RgbImage;

use super::camera_check::CameraCheck;
use super::checkpoint::FitFingerprint;
use super::evaluation::{LossReport, Selection};
use super::material_answer::{material_answer, MaterialAnswer};
use super::output_plan::COMPARE_DIR;
use super::plan::{StageKind, StagePlan};
use super::preflight::FitInputs;
use super::problem::{FitProblem, RolloutValues};
use super::record::{jsonl_lines, mean_quality};
use super::result::per_driver;
use super::session_error::SessionError;
use super::state::FitState;
use super::summary::{
    Adapter, FinalLoss, FitSummary, FrameQuality, Units, SUMMARY_FORMAT, SUMMARY_VERSION,
};
use super::summary_build;
use super::truth_check::TruthCheck;
use crate::forward::SceneRenderer;
use crate::gpu::GpuContext;
use crate::io::atomic_write::write_atomic;
use crate::io::png::write_png;
use crate::output::error_bar_colouring::ErrorBarColouring;
use crate::output::fitted_ply::{write_fitted_ply, SplatMaterial};
use crate::output::stiffness::{stiffness_range_world, StiffnessColouring};
use crate::output::FittedDrivers;
use crate::report::captioned;
use crate::report::loss_plot::LOSS_PLOT_SIZE;
use crate::report::{
    frame_triptych, loss_plot_with_scan, rgb8, LossCurve, LossPoint, ScanCandidate,
};
use crate::scene::Scene;

/// The legend of the exact-gradient step's point on `loss.png`.
const EXACT_STEP_LABEL: &str = "exact-gradient step";

/// `loss.png`: one curve per stage run (the scan is no stage run: its
/// candidates are [`scan_candidates`]), then, when the exact-gradient step
/// ([`super::exact_step`]) was kept, one point after them: the last
/// stiffness stage's loss at the stepped E (the same objective as that
/// stage's records). Its PSNR was not measured, so the PSNR panel leaves
/// it out.
fn loss_curves(plan: &[StagePlan], state: &FitState) -> Vec<LossCurve> {
    let mut curves = stage_curves(plan, state);
    if let Some(step) = state.exact_step.as_ref().filter(|s| s.fraction > 0.0) {
        curves.push(LossCurve {
            label: EXACT_STEP_LABEL.to_string(),
            points: vec![LossPoint {
                iteration: 0,
                loss: step.loss[1],
                psnr: f64::NAN,
            }],
        });
    }
    curves
}

/// One curve per stage run that recorded an iteration.
fn stage_curves(plan: &[StagePlan], state: &FitState) -> Vec<LossCurve> {
    plan.iter()
        .filter(|stage| stage.kind != StageKind::Scan)
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
        // Stages skipped because the rounds converged draw nothing.
        .filter(|curve| !curve.points.is_empty())
        .collect()
}

/// `loss.png`'s scan panels: every scanned candidate of E, its log10 E
/// from the scan's state and its PSNR from its record (both appended
/// together, one per candidate, in order). The candidates of ν's scan, all
/// at one E, are left out: the panels' axis is E.
fn scan_candidates(state: &FitState) -> Vec<ScanCandidate> {
    let Some(scan) = &state.scan else {
        return Vec::new();
    };
    let records = state.records.iter().filter(|r| r.stage == StageKind::Scan);
    scan.points
        .iter()
        .zip(records)
        .filter(|(point, _)| point.poisson.is_none())
        .map(|(point, record)| ScanCandidate {
            log10_youngs: point.log10_youngs,
            loss: point.loss,
            psnr: record.psnr,
        })
        .collect()
}

/// `stiffness.png`: the scene at rest in view `view`, coloured by the one
/// stiffness colouring ([`StiffnessColouring`]), and beside it by the
/// error bars when the fit has them ([`ErrorBarColouring`]).
fn stiffness_picture(
    ctx: &GpuContext,
    scene: &Scene,
    (material, answer): (&SplatMaterial, &MaterialAnswer),
    view: usize,
    path: &Path,
) -> Result<(), SessionError> {
    let fitted = &answer.drivers;
    let colouring = StiffnessColouring::new(
        material,
        stiffness_range_world(
            fitted.settings.log10_youngs_range,
            fitted.settings.sim_box.side,
        ),
    );
    let camera = &scene.views[view].camera;
    let render = |gaussians: &crate::scene::Gaussians| -> Result<RgbImage, SessionError> {
        let mut renderer = SceneRenderer::at_rest(ctx, gaussians, scene.background)
            .map_err(super::FitError::from)?;
        let frame = renderer
            .render(ctx, camera)
            .map_err(super::FitError::from)?;
        Ok(rgb8(&frame))
    };
    let stiffness = render(
        &colouring
            .recoloured(scene.gaussians())
            .map_err(SessionError::output)?,
    )?;
    let image = colouring
        .with_colorbar(&stiffness)
        .map_err(SessionError::output)?;
    let name = &scene.views[view].name;
    let fitted_caption = format!("{}, view '{name}'", answer.caption);
    let mut panels = vec![(fitted_caption, image)];
    if fitted.youngs_log10_std.is_some() {
        let errors = ErrorBarColouring::new(material, fitted.settings.log10_youngs_range);
        let panel = render(
            &errors
                .recoloured(scene.gaussians())
                .map_err(SessionError::output)?,
        )?;
        let panel = errors.with_colorbar(&panel).map_err(SessionError::output)?;
        panels.push((answer.error_caption.to_string(), panel));
    }
    let panels: Vec<(&str, &RgbImage)> = panels.iter().map(|(c, p)| (c.as_str(), p)).collect();
    let image = captioned("stiffness.png", &panels).map_err(SessionError::output)?;
    write_png(path, &image).map_err(SessionError::output)
}

/// `report` as `fit.json` has it.
fn final_loss(scene: &Scene, report: &LossReport) -> FinalLoss {
    let (mean_psnr, mean_ssim) = mean_quality(report);
    FinalLoss {
        loss: report.loss,
        image: report.image,
        tv: report.tv,
        mean_psnr,
        mean_ssim,
        frames: report
            .images
            .iter()
            .map(|t| FrameQuality {
                frame: t.frame,
                view: scene.views[t.view].name.clone(),
                psnr: t.terms.psnr(),
                ssim: t.terms.ssim(),
                l1: f64::from(t.terms.l1),
            })
            .collect(),
    }
}

/// What a finished fit hands the outputs.
pub struct FinishedFit<'a> {
    /// The scene.
    pub scene: &'a Scene,
    /// The views and frames fitted.
    pub inputs: &'a FitInputs,
    /// The stages run.
    pub plan: &'a [StagePlan],
    /// The final state.
    pub state: &'a FitState,
    /// Seconds per stage.
    pub stage_seconds: &'a [f64],
    /// The camera check.
    pub camera_check: &'a [CameraCheck],
    /// The truth, on a twin experiment.
    pub truth: Option<&'a TruthCheck>,
    /// Every input by name.
    pub settings: &'a FitFingerprint,
}

/// Writes every output of `fit` into `out` (module doc); `progress` is
/// called after each compare frame (frames × views of them), and an error
/// it returns (a stop) ends the writing there.
pub fn write_outputs(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    fit: &FinishedFit<'_>,
    out: &Path,
    progress: &mut dyn FnMut() -> Result<(), SessionError>,
) -> Result<FitSummary, SessionError> {
    let (scene, inputs, state) = (fit.scene, fit.inputs, fit.state);
    let drivers = problem.drivers().clone();
    let (log10, velocity) = per_driver(problem.youngs_map(), problem.velocity_map(), state)?;
    let log10_std: Option<Vec<f64>> = state
        .uncertainty
        .as_ref()
        .filter(|u| !u.youngs_log10_std.is_empty())
        .map(|u| {
            u.driver_youngs_log10_std(problem.youngs_map(), scene.material.log10_youngs_range)
        });
    let side = drivers.sim_box.side;

    let mut fitted = FittedDrivers::new(scene, &drivers, &log10, &velocity, log10_std.as_deref())
        .map_err(SessionError::output)?;
    if problem.poisson_map().is_some() {
        fitted = fitted
            .with_poisson(problem.driver_poisson(&state.poisson)?)
            .map_err(SessionError::output)?;
    }
    // The start of APIC's C that the fit's rollouts had, so that
    // `render --params` starts where the fit did (a rigid field's spin).
    if !problem.velocity_gradient_map().entries.is_empty() {
        let gradient = problem.velocity_gradient_map().apply(&state.velocity)?;
        fitted = fitted
            .with_velocity_gradient(&gradient)
            .map_err(SessionError::output)?;
    }
    fitted
        .save(&out.join("drivers.safetensors"))
        .map_err(SessionError::output)?;
    // fitted.ply and stiffness.png carry the material's answer and its
    // error bar (src/fit/material_answer.rs); drivers.safetensors keeps the
    // fit's own E, the one its recorded substeps reproduce the compare
    // frames with, and the data's bar.
    let answer = material_answer(scene, problem, state, &fitted)?;
    let material =
        SplatMaterial::from_fitted(scene, &answer.drivers).map_err(SessionError::output)?;
    write_fitted_ply(&out.join("fitted.ply"), scene, &material).map_err(SessionError::output)?;

    let jsonl = jsonl_lines(&state.records).map_err(SessionError::output)?;
    let path = out.join("loss.jsonl");
    write_atomic(&path, jsonl.as_bytes()).map_err(SessionError::io(&path))?;
    let (w, h) = LOSS_PLOT_SIZE;
    write_png(
        &out.join("loss.png"),
        &loss_plot_with_scan(&loss_curves(fit.plan, state), &scan_candidates(state), w, h)
            .map_err(SessionError::output)?,
    )
    .map_err(SessionError::output)?;

    // The fitted rollout: its loss on every frame and view, and compare/.
    let params = state.parameters();
    let all = Selection {
        frames: (1..inputs.frames).collect(),
        views: inputs.views.clone(),
    };
    let report = problem.loss(ctx, &params, &all)?;
    let rollout = problem.forward_states(ctx, &params, inputs.frames - 1)?;
    for &v in &inputs.views {
        let view = &scene.views[v];
        let dir = out.join(COMPARE_DIR).join(&view.name);
        std::fs::create_dir_all(&dir).map_err(SessionError::io(&dir))?;
        let frames = view.frames.as_ref().expect("views with frames");
        for (k, state) in rollout.frames.iter().enumerate() {
            let rendered = problem.render_state_corrected(ctx, state, v)?;
            let reference = frames.load(k).map_err(SessionError::output)?;
            let psnr = report
                .images
                .iter()
                .find(|t| t.frame == k && t.view == v)
                .map(|t| t.terms.psnr())
                .or_else(|| {
                    // Frame 0 is in no stage's loss: the camera check measured it.
                    let check = fit.camera_check.iter().find(|c| c.view == view.name);
                    check.filter(|_| k == 0).map(|c| c.psnr)
                });
            write_png(
                &dir.join(format!("frame_{k:04}.png")),
                &frame_triptych(&reference, &rendered, k, psnr).map_err(SessionError::output)?,
            )
            .map_err(SessionError::output)?;
            progress()?;
        }
    }
    stiffness_picture(
        ctx,
        scene,
        (&material, &answer),
        inputs.views[0],
        &out.join("stiffness.png"),
    )?;

    let poisson = problem.driver_poisson(&state.poisson)?;
    let truth_loss = match fit.truth {
        Some(t) => {
            // The truth's own ν when it gives one, then the fit's again.
            let truth_poisson = t.values.poisson_ratio.map(|nu| vec![nu; poisson.len()]);
            let values = RolloutValues {
                log10_youngs: &t.values.log10_youngs,
                velocity: &t.values.velocity,
                velocity_gradient: Some(&t.values.velocity_gradient),
                poisson: truth_poisson.as_deref(),
            };
            let loss = problem.loss_of_drivers_with_poisson(ctx, &values, &all);
            problem.set_poisson(ctx, &poisson)?;
            Some(final_loss(scene, &loss?))
        }
        None => None,
    };
    let info = &ctx.adapter_info;
    let velocity_errors = summary_build::velocity_error_bars(state);
    let summary = FitSummary {
        format: SUMMARY_FORMAT.into(),
        version: SUMMARY_VERSION,
        scene: crate::io::shown::shown(&scene.path).to_string(),
        units: Units {
            youngs_normalised: "the simulator's: the box mapped to [0,1]^3, as scene.toml's material values (PhysDreamer's convention)".into(),
            youngs_world: "E_normalised * box_side^2 with box_side in the .ply's length unit (Pa for metres at the scene's density)".into(),
            box_side: side,
            velocity: "world units / s".into(),
        },
        settings: summary_build::settings(scene, &drivers, state, fit.settings),
        adapter: Adapter {
            name: info.name.clone(),
            backend: info.backend.to_str().into(),
            driver: format!("{} {}", info.driver, info.driver_info),
            software: ctx.is_software(),
        },
        camera_check: fit.camera_check.to_vec(),
        stages: summary_build::stages(fit.plan, state, fit.stage_seconds),
        final_loss: final_loss(scene, &report),
        youngs_parameters: summary_build::youngs_parameters(scene, &drivers, state, side),
        velocity_parameters: state.velocity.clone(),
        velocity_discretisation_error: velocity_errors.0,
        velocity_error_bar: velocity_errors.1,
        poisson_parameters: summary_build::poisson_parameters(scene, &drivers, state),
        uncertainty: state.uncertainty.clone(),
        exact_step: state.exact_step.clone(),
        discretisation: state.discretisation.clone(),
        recovery: fit.truth.map(|t| t.recovery(&drivers, &log10, &velocity, &poisson)),
        truth_loss,
    };
    summary
        .write(&out.join("fit.json"))
        .map_err(SessionError::output)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::evaluation::Parameters;
    use crate::fit::exact_step::ExactStep;

    fn stepped(fraction: f64) -> FitState {
        let mut state = FitState::start(
            Parameters {
                log10_youngs: vec![4.0],
                velocity: vec![0.0; 3],
                poisson: Vec::new(),
            },
            &[],
        );
        state.exact_step = Some(ExactStep {
            log10_youngs: vec![-0.02 * fraction],
            poisson_z: Vec::new(),
            fraction,
            loss: [2.28e-2, if fraction > 0.0 { 2.27e-2 } else { 2.28e-2 }],
            predicted_decrease: 5e-5,
            steps: u32::from(fraction > 0.0),
        });
        state
    }

    /// A kept exact-gradient step is one more point after the stages'
    /// curves, at the stepped loss and without a PSNR; a refused one
    /// (fraction 0) adds nothing.
    #[test]
    fn a_kept_exact_step_is_a_point_after_the_stages() {
        let curves = loss_curves(&[], &stepped(0.5));
        assert_eq!(curves.len(), 1);
        assert_eq!(curves[0].label, EXACT_STEP_LABEL);
        let [point] = curves[0].points.as_slice() else {
            panic!("{curves:?}");
        };
        assert_eq!((point.iteration, point.loss), (0, 2.27e-2));
        assert!(point.psnr.is_nan());
        assert!(loss_curves(&[], &stepped(0.0)).is_empty());
    }
}
