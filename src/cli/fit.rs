//! `physfit fit scene.toml [--out DIR] [--stage velocity|stiffness|both]
//! [--velocity-from FILE] [--resume] [--force] [--truth truth.toml]
//! [--quiet]`: the two-stage fit (issue 13; DESIGN.md § Loss, parameters,
//! fit), as a pipeline read top to bottom:
//!
//! 1. refuse what cannot work ([`physfit::fit::preflight`], an earlier fit
//!    in the output directory) before any simulation time is spent;
//! 2. build the drivers and the fit problem, and run the **camera check**:
//!    frame 0 rendered in every view against reference frame 0, its PSNR
//!    (the fit's loss terms: over the mask where a view has one) printed, a loud warning and `DIR/camera_check/<view>.png` below
//!    [`CAMERA_CHECK_DB`];
//! 3. run the stages ([`physfit::fit::run_fit`]) with a progress bar each,
//!    a checkpoint every `fit.checkpoint_every` iterations and at every
//!    stage end, and Ctrl-C writing a checkpoint and exiting with 130;
//! 4. write the outputs ([`super::fit_outputs`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::drive::DriverSet;
use physfit::fit::checkpoint::{Checkpoint, FitFingerprint};
use physfit::fit::fitter::mean_quality;
use physfit::fit::preflight::{check_memory, memory_available, memory_needed, preflight};
use physfit::fit::recovery::{deforming_drivers, Recovery};
use physfit::fit::{
    plan_stages, run_fit, Control, FitEnd, FitObserver, FitProblem, FitProblemOptions, FitState,
    LossReport, Parameters, Selection, StageChoice, StagePlan, VelocityField,
};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::io::png::write_png;
use physfit::output::FittedDrivers;
use physfit::report::triptych;
use physfit::scene::Scene;
use physfit::synth::{Truth, TruthValues};

use super::fit_outputs::{per_driver, write_outputs, OUTPUT_FILES};

/// PSNR of frame 0 below which the camera check warns (issue 13).
pub const CAMERA_CHECK_DB: f64 = 25.0;
/// The checkpoint's file name in the output directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";
/// The exit status after Ctrl-C (128 + SIGINT).
pub const INTERRUPTED_STATUS: i32 = 130;

/// `--stage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StageArg {
    /// Stage 1 only: the initial velocity, E frozen at `material.youngs_modulus`.
    Velocity,
    /// Stage 2 only: log10 E, with the velocity of an earlier fit (`--velocity-from`).
    Stiffness,
    /// Both, `fit.rounds` times.
    Both,
}

impl From<StageArg> for StageChoice {
    fn from(s: StageArg) -> Self {
        match s {
            StageArg::Velocity => StageChoice::Velocity,
            StageArg::Stiffness => StageChoice::Stiffness,
            StageArg::Both => StageChoice::Both,
        }
    }
}

/// Options of `physfit fit`.
#[derive(Args, Debug)]
pub struct FitArgs {
    /// The scene description (with reference frames in at least one view).
    pub scene: PathBuf,
    /// Output directory (default: the scene's `output.directory`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Which stages to run.
    #[arg(long, value_enum, default_value_t = StageArg::Both)]
    pub stage: StageArg,
    /// For `--stage stiffness`: the drivers.safetensors of an earlier fit
    /// whose velocity to hold (default: the output directory's).
    #[arg(long)]
    pub velocity_from: Option<PathBuf>,
    /// Continue the fit checkpointed in the output directory (iterations may be raised).
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Replace an earlier fit in the output directory.
    #[arg(long)]
    pub force: bool,
    /// A twin experiment's truth file (docs/truth.md): report how well the fit recovers it
    /// (default: the `truth.toml` that `physfit synth` left beside the frames, if any).
    #[arg(long)]
    pub truth: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long)]
    pub quiet: bool,
}

/// How `physfit fit` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitOutcome {
    /// Every stage ran and the outputs are written.
    Finished,
    /// Ctrl-C: a checkpoint is written; exit with [`INTERRUPTED_STATUS`].
    Interrupted,
}

/// The truth of a twin experiment on the fit's drivers, with the drivers
/// that deform in its rollout.
pub struct TruthCheck {
    /// Per-driver truth values.
    pub values: TruthValues,
    /// Per driver: deforms in the truth ([`deforming_drivers`]).
    pub deforming: Vec<bool>,
}

impl TruthCheck {
    /// The recovery of per-driver `log10_youngs` and `velocity`.
    pub fn recovery(
        &self,
        drivers: &DriverSet,
        log10_youngs: &[f64],
        velocity: &[f64],
    ) -> Recovery {
        Recovery::measure(
            log10_youngs,
            velocity,
            &self.values.log10_youngs,
            &self.values.velocity,
            &drivers.anchored,
            &self.deforming,
        )
    }
}

/// Simulates `truth` on the fit's drivers (a per-driver problem of its own)
/// and marks the drivers that deform.
fn truth_check(
    ctx: &GpuContext,
    scene: &Scene,
    drivers: &DriverSet,
    truth: &Truth,
    frames: usize,
) -> Result<TruthCheck> {
    let values = truth.per_driver(drivers);
    let options = FitProblemOptions::per_driver(&scene.fit.velocity);
    let mut problem = FitProblem::from_drivers(ctx, scene, drivers.clone(), &options)?;
    let params = Parameters {
        log10_youngs: values.log10_youngs.clone(),
        velocity: values.velocity.clone(),
    };
    let rollout = problem
        .forward_states(ctx, &params, frames - 1)
        .context("simulating the truth on the fit's drivers")?;
    let states = rollout
        .frames
        .iter()
        .map(|b| problem.simulator().read_state(ctx, b))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TruthCheck {
        values,
        deforming: deforming_drivers(&states),
    })
}

/// The camera check (module doc): PSNR of frame 0 per view.
fn camera_check(
    ctx: &GpuContext,
    scene: &Scene,
    problem: &mut FitProblem,
    start: &Parameters,
    views: &[usize],
    out: &Path,
    quiet: bool,
) -> Result<Vec<(String, f64)>> {
    // The pictures of an earlier check are stale whatever this one finds.
    let dir = out.join("camera_check");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    // Frame 0 through the fit's own loss (its PSNR, over a view's mask
    // where it has one), so the check measures what the fit will compare.
    let frame0 = Selection {
        frames: vec![0],
        views: views.to_vec(),
    };
    let report = problem.loss(ctx, start, &frame0)?;
    let mut results = Vec::new();
    for t in &report.images {
        let (v, db) = (t.view, t.terms.psnr());
        let view = &scene.views[v];
        let frames = view.frames.as_ref().expect("views with frames");
        if db < CAMERA_CHECK_DB {
            let rendered = problem.render_frames(ctx, start, v, 0)?.remove(0);
            let reference = frames.load(0)?;
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let path = dir.join(format!("{}.png", view.name));
            write_png(&path, &triptych(&reference, &rendered)?)?;
            eprintln!(
                "WARNING: camera check: view '{}' renders frame 0 at only {db:.1} dB PSNR against {} (below {CAMERA_CHECK_DB} dB).\n\
                 WARNING: a misaligned camera is the commonest way a fit fails; compare reference | render | difference in {}\n\
                 WARNING: (docs/your-own-object.md, \"The camera check\").",
                view.name,
                frames.paths[0].display(),
                path.display()
            );
        } else if !quiet {
            eprintln!("camera check: view '{}' frame 0 PSNR {db:.1} dB", view.name);
        }
        results.push((view.name.clone(), db));
    }
    Ok(results)
}

/// Progress bars, checkpoints, Ctrl-C and the per-stage truth report.
struct CliObserver<'a> {
    quiet: bool,
    bar: ProgressBar,
    checkpoint_every: u32,
    checkpoint: PathBuf,
    fingerprint: FitFingerprint,
    interrupted: Arc<AtomicBool>,
    stage_start: Instant,
    stage_seconds: Vec<f64>,
    truth: Option<&'a TruthCheck>,
    drivers: &'a DriverSet,
    youngs_map: physfit::fit::ParamMap,
    velocity_map: physfit::fit::ParamMap,
    error: Option<anyhow::Error>,
}

impl CliObserver<'_> {
    fn save(&mut self, state: &FitState) {
        let c = Checkpoint::new(
            self.fingerprint.clone(),
            state.clone(),
            self.stage_seconds.clone(),
        );
        if let Err(e) = c.save(&self.checkpoint) {
            self.error.get_or_insert(e.into());
        }
    }
}

impl FitObserver for CliObserver<'_> {
    fn stage_started(&mut self, plan: &StagePlan, state: &FitState) {
        self.stage_start = Instant::now();
        self.bar = if self.quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(u64::from(plan.settings.iterations))
        };
        self.bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>18} {bar:30} {pos}/{len} {msg} [{per_sec}, {elapsed}, eta {eta}]",
            )
            .expect("valid template"),
        );
        self.bar.set_prefix(plan.label());
        self.bar.set_position(u64::from(state.iteration));
        self.bar.set_message(format!(
            "({} frames × {} views)",
            plan.selection.frames.len(),
            plan.selection.views.len()
        ));
    }

    fn iteration_done(&mut self, _plan: &StagePlan, state: &FitState) -> Control {
        if let Some(r) = state.records.last() {
            self.bar.set_message(format!(
                "loss {:.4e} PSNR {:.2} dB{}",
                r.loss,
                r.psnr,
                if r.rejected > 0 {
                    format!(" ({} halvings)", r.rejected)
                } else {
                    String::new()
                }
            ));
        }
        self.bar.set_position(u64::from(state.iteration));
        let interrupted = self.interrupted.load(Ordering::SeqCst);
        if interrupted || state.iteration.is_multiple_of(self.checkpoint_every) {
            self.save(state);
        }
        if interrupted || self.error.is_some() {
            Control::Stop
        } else {
            Control::Continue
        }
    }

    fn stage_finished(&mut self, plan: &StagePlan, state: &FitState, final_loss: &LossReport) {
        self.stage_seconds
            .push(self.stage_start.elapsed().as_secs_f64());
        self.save(state);
        self.bar.finish_and_clear();
        if self.quiet {
            return;
        }
        let (psnr, _) = mean_quality(final_loss);
        eprintln!(
            "{}: {} iterations in {:.0} s, final loss {:.4e}, PSNR {:.2} dB",
            plan.label(),
            plan.settings.iterations,
            self.stage_seconds.last().unwrap(),
            final_loss.loss,
            psnr
        );
        if let Some(truth) = self.truth {
            match per_driver(&self.youngs_map, &self.velocity_map, state) {
                Ok((log10, velocity)) => eprintln!(
                    "{}: recovery: {}",
                    plan.label(),
                    truth.recovery(self.drivers, &log10, &velocity).summary()
                ),
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
        }
    }
}

/// Where a stiffness-only fit takes its velocity from: per-driver values
/// of an earlier fit of the same scene and drivers.
fn earlier_velocity(path: &Path, scene: &Scene, drivers: &DriverSet) -> Result<Vec<f64>> {
    let fitted = FittedDrivers::load(path).with_context(|| {
        format!(
            "--stage stiffness holds the velocity of an earlier fit; fix: run `physfit fit {} --stage velocity` first or give --velocity-from",
            scene.path.display()
        )
    })?;
    fitted.check_against(scene)?;
    if fitted.rest != drivers.rest {
        bail!(
            "{}: its {} drivers are not the scene's {} (the K-Means drivers differ); fix: refit the velocity with this scene",
            path.display(),
            fitted.len(),
            drivers.len()
        );
    }
    Ok(fitted.velocity.iter().flatten().copied().collect())
}

/// The truth of frames that `physfit synth` wrote: its output directory
/// holds `synth.json` and `truth.toml` beside the view folders
/// (`DIR/<view>/frame_NNNN.png`), so a fit of such frames reports the
/// recovery without `--truth`.
fn synth_truth(scene: &Scene) -> Option<PathBuf> {
    let frames = scene.views.iter().find_map(|v| v.frames.as_ref())?;
    let dir = frames.paths.first()?.parent()?.parent()?;
    let truth = dir.join("truth.toml");
    (dir.join("synth.json").is_file() && truth.is_file()).then_some(truth)
}

/// Runs `physfit fit`.
pub fn run(args: &FitArgs) -> Result<FitOutcome> {
    // 1. Refusals.
    let scene = Scene::load(&args.scene)?;
    let choice = StageChoice::from(args.stage);
    let inputs = preflight(&scene, choice)?;
    let out = args.out.clone().unwrap_or_else(|| scene.output_dir.clone());
    let checkpoint_path = out.join(CHECKPOINT_FILE);
    let earlier: Vec<&str> = OUTPUT_FILES
        .iter()
        .chain(&[CHECKPOINT_FILE])
        .copied()
        .filter(|f| out.join(f).exists())
        .collect();
    if args.resume && !checkpoint_path.exists() {
        bail!(
            "--resume: {} holds no {CHECKPOINT_FILE} to continue from; fix: run without --resume",
            out.display()
        );
    }
    if !args.resume && !args.force && !earlier.is_empty() {
        bail!(
            "{} holds an earlier fit ({}); fix: --resume to continue it, --force to replace it, or --out another directory",
            out.display(),
            earlier.join(", ")
        );
    }
    let velocity_from = match choice {
        StageChoice::Stiffness => Some(
            args.velocity_from
                .clone()
                .unwrap_or_else(|| out.join("drivers.safetensors")),
        ),
        _ => None,
    };
    let truth_path = args.truth.clone().or_else(|| synth_truth(&scene));
    let truth = match &truth_path {
        Some(path) => {
            if args.truth.is_none() && !args.quiet {
                eprintln!(
                    "twin experiment: the frames were made by `physfit synth`; measuring the recovery of {}",
                    path.display()
                );
            }
            Some(Truth::load(path, scene.material.log10_youngs_range)?)
        }
        None => None,
    };
    let fingerprint = FitFingerprint::of(
        &scene,
        choice,
        velocity_from
            .as_ref()
            .map(|p| p.display().to_string())
            .as_deref(),
    )?;
    let resumed = if args.resume {
        Some(Checkpoint::load(&checkpoint_path, &fingerprint)?)
    } else {
        None
    };

    // 2. Drivers, problem, camera check.
    let ctx = GpuContext::new(&GpuOptions::default())?;
    let drivers = DriverSet::from_scene(&scene)?;
    let held_velocity = match &velocity_from {
        Some(path) => Some(earlier_velocity(path, &scene, &drivers)?),
        None => None,
    };
    let mut options = FitProblemOptions::from_scene(&scene, &drivers, &scene.fit.velocity)?;
    if held_velocity.is_some() {
        options.velocity = VelocityField::PerDriver;
        options.velocity_regions.clear();
    }
    let mut problem = FitProblem::from_drivers(&ctx, &scene, drivers.clone(), &options)?;
    let needed = memory_needed(
        ctx.memory.current(),
        drivers.len(),
        scene.simulation.substeps,
        inputs.frames,
    );
    check_memory(&scene, needed, memory_available(ctx.is_software()))?;
    let start = Parameters {
        log10_youngs: vec![scene.material.youngs_modulus.log10(); problem.youngs_map().params],
        velocity: held_velocity.unwrap_or_else(|| vec![0.0; problem.velocity_map().params]),
    };
    if args.force {
        for f in &earlier {
            let path = out.join(f);
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.with_context(|| format!("--force: removing {}", path.display()))?;
        }
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    if !args.quiet {
        eprintln!(
            "fitting {}: {} drivers ({} anchored), {} frames × {} views, adapter {}",
            args.scene.display(),
            drivers.len(),
            drivers.anchored.iter().filter(|a| **a).count(),
            inputs.frames,
            inputs.views.len(),
            ctx.adapter_info.name
        );
    }
    let camera = camera_check(
        &ctx,
        &scene,
        &mut problem,
        &start,
        &inputs.views,
        &out,
        args.quiet,
    )?;
    let truth_check = match &truth {
        Some(t) => Some(truth_check(&ctx, &scene, &drivers, t, inputs.frames)?),
        None => None,
    };

    // 3. The stages.
    let plan = plan_stages(
        &scene,
        &inputs.views,
        inputs.frames,
        scene.fit.rounds,
        choice,
    );
    let (mut state, stage_seconds) = match resumed {
        Some(c) => {
            if let Some(stage) = plan.get(c.state.stage) {
                if c.state.iteration > stage.settings.iterations {
                    bail!(
                        "{}: the checkpoint is at iteration {} of {}, past its `iterations` = {} now; fix: raise it again (iterations may only grow on --resume)",
                        checkpoint_path.display(),
                        c.state.iteration,
                        stage.label(),
                        stage.settings.iterations
                    );
                }
            }
            if !args.quiet {
                eprintln!(
                    "resuming from {} ({} iterations recorded)",
                    checkpoint_path.display(),
                    c.state.records.len()
                );
            }
            (c.state, c.stage_seconds)
        }
        None => (FitState::start(start, &plan), Vec::new()),
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst))
            .context("installing the Ctrl-C handler")?;
    }
    let mut observer = CliObserver {
        quiet: args.quiet,
        bar: ProgressBar::hidden(),
        checkpoint_every: scene.fit.checkpoint_every.max(1),
        checkpoint: checkpoint_path.clone(),
        fingerprint: fingerprint.clone(),
        interrupted,
        stage_start: Instant::now(),
        stage_seconds,
        truth: truth_check.as_ref(),
        drivers: &drivers,
        youngs_map: problem.youngs_map().clone(),
        velocity_map: problem.velocity_map().clone(),
        error: None,
    };
    let end = run_fit(
        &ctx,
        &mut problem,
        &plan,
        &mut state,
        scene.material.log10_youngs_range,
        &mut observer,
    );
    observer.bar.finish_and_clear();
    if let Some(e) = observer.error.take() {
        return Err(e.context("writing the checkpoint"));
    }
    match end.with_context(|| format!("fitting {}", args.scene.display()))? {
        FitEnd::Stopped => {
            eprintln!(
                "interrupted: the fit is checkpointed in {}; continue it with `physfit fit {} --resume{}`",
                checkpoint_path.display(),
                args.scene.display(),
                args.out
                    .as_ref()
                    .map(|o| format!(" --out {}", o.display()))
                    .unwrap_or_default()
            );
            return Ok(FitOutcome::Interrupted);
        }
        FitEnd::Finished(_) => {}
    }

    // 4. Outputs.
    write_outputs(
        &ctx,
        &scene,
        &mut problem,
        &plan,
        &state,
        &observer.stage_seconds,
        &camera,
        truth_check.as_ref(),
        &inputs,
        &fingerprint,
        &out,
        args.quiet,
    )?;
    Ok(FitOutcome::Finished)
}
