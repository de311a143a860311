//! `physfit fit scene.toml [--out DIR] [--stage velocity|stiffness|both]
//! [--velocity-from FILE] [--resume] [--force] [--truth truth.toml]
//! [--quiet]`: the two-stage fit (docs/design.md § Loss, parameters, fit). The
//! fit itself is the library's session ([`FitSession`]); this command only
//! turns flags into its options, prints, draws the progress bars, turns
//! Ctrl-C into a stop (a checkpoint, then exit status 130) and adds the
//! flags to use to the session's refusals.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::fit::checkpoint::CheckpointError;
use physfit::fit::fitter::mean_quality;
use physfit::fit::session::{FinishedStage, RunEnd, TruthSource};
use physfit::fit::{
    Control, EarlierFit, FitProgress, FitSession, FitState, SessionError, SessionOptions,
    StageChoice, StagePlan,
};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::scene::Scene;

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

/// Progress bars and Ctrl-C.
struct CliProgress {
    quiet: bool,
    bar: ProgressBar,
    interrupted: Arc<AtomicBool>,
}

impl FitProgress for CliProgress {
    fn stage_started(&mut self, plan: &StagePlan, state: &FitState) {
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
        if self.interrupted.load(Ordering::SeqCst) {
            Control::Stop
        } else {
            Control::Continue
        }
    }

    fn stage_finished(&mut self, plan: &StagePlan, finished: &FinishedStage<'_>) {
        self.bar.finish_and_clear();
        if self.quiet {
            return;
        }
        let (psnr, _) = mean_quality(finished.final_loss);
        let how = if plan.kind == physfit::fit::StageKind::Scan {
            "candidates".to_string()
        } else if finished.converged {
            format!("iterations (converged; cap {})", plan.settings.iterations)
        } else {
            "iterations (its cap)".to_string()
        };
        eprintln!(
            "{}: {} {how} in {:.0} s, final loss {:.4e}, PSNR {:.2} dB",
            plan.label(),
            finished.iterations,
            finished.seconds,
            finished.final_loss.loss,
            psnr
        );
        if !finished.converged {
            eprintln!(
                "WARNING: {} stopped at its cap while the loss still fell; raise `fit.{}.iterations` to let it converge",
                plan.label(),
                plan.kind.name()
            );
        }
        if finished.rounds_converged {
            eprintln!(
                "{}: the round gained less than {:.0}% over the previous one; the fit has converged",
                plan.label(),
                100.0 * physfit::fit::fitter::ROUND_TOLERANCE
            );
        }
        if let Some(r) = &finished.recovery {
            eprintln!("{}: recovery: {}", plan.label(), r.summary());
        }
    }
}

/// The session's refusal with the flags that fix it.
fn with_flag_advice(error: SessionError, args: &FitArgs) -> anyhow::Error {
    let advice = match &error {
        SessionError::EarlierFit { .. } => {
            Some("fix: --resume to continue it, --force to replace it, or --out another directory")
        }
        SessionError::NoCheckpoint { .. } => Some("fix: run without --resume"),
        SessionError::Checkpoint(CheckpointError::Format { .. }) => {
            Some("fix: run without --resume, with --force to start over")
        }
        SessionError::Checkpoint(CheckpointError::Mismatch { .. }) => {
            Some("fix: restore them, or start over with --force")
        }
        SessionError::HeldVelocity { .. } if args.velocity_from.is_none() => Some(
            "(--stage stiffness holds the velocity of the output directory's earlier fit; \
             give another with --velocity-from, or run --stage velocity first)",
        ),
        _ => None,
    };
    match advice {
        Some(a) => anyhow::anyhow!("{error}; {a}"),
        None => anyhow::Error::new(error),
    }
}

/// Runs `physfit fit`.
pub fn run(args: &FitArgs) -> Result<FitOutcome> {
    let scene = Scene::load(&args.scene)?;
    let out = args.out.clone().unwrap_or_else(|| scene.output_dir.clone());
    let options = SessionOptions {
        out,
        choice: StageChoice::from(args.stage),
        velocity_from: args.velocity_from.clone(),
        earlier: if args.resume {
            EarlierFit::Resume
        } else if args.force {
            EarlierFit::Replace
        } else {
            EarlierFit::Refuse
        },
        truth: args.truth.clone(),
    };
    let advise = |e: SessionError| with_flag_advice(e, args);
    let prepared = FitSession::prepare(scene, options).map_err(advise)?;
    if !args.quiet {
        if let Some(TruthSource::BesideFrames(path)) = prepared.truth_source() {
            eprintln!(
                "twin experiment: the frames were made by `physfit synth`; measuring the recovery of {}",
                path.display()
            );
        }
        if let Some(c) = prepared.resumed() {
            eprintln!(
                "resuming from {} ({} iterations recorded)",
                prepared.checkpoint_path().display(),
                c.state.records.len()
            );
        }
    }
    let ctx = GpuContext::new(&GpuOptions::default())?;
    let mut session = FitSession::open(&ctx, prepared).map_err(advise)?;
    if !args.quiet {
        let d = session.drivers();
        eprintln!(
            "fitting {}: {} drivers ({} anchored), {} frames × {} views, adapter {}",
            args.scene.display(),
            d.len(),
            d.anchored.iter().filter(|a| **a).count(),
            session.inputs().frames,
            session.inputs().views.len(),
            ctx.adapter_info.name
        );
    }
    for check in session.check_cameras(&ctx).map_err(advise)? {
        match &check.picture {
            Some(picture) => eprintln!(
                "WARNING: camera check: view '{}' renders frame 0 at only {:.1} dB PSNR against {} (below {} dB).\n\
                 WARNING: a misaligned camera is the commonest way a fit fails; compare reference | render | difference in {}\n\
                 WARNING: (docs/your-own-object.md, \"The camera check\").\n\
                 WARNING: fix: `physfit align {} --out DIR` fits the view's pose and colour (exposure, white balance) to its frame 0.",
                check.view,
                check.psnr,
                check.reference.display(),
                physfit::fit::camera_check::CAMERA_CHECK_DB,
                picture.display(),
                args.scene.display()
            ),
            None if !args.quiet => {
                eprintln!("camera check: view '{}' frame 0 PSNR {:.1} dB", check.view, check.psnr)
            }
            None => {}
        }
    }
    session.check_truth(&ctx).map_err(advise)?;

    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst))
            .context("installing the Ctrl-C handler")?;
    }
    let mut progress = CliProgress {
        quiet: args.quiet,
        bar: ProgressBar::hidden(),
        interrupted,
    };
    let end = session
        .run(&ctx, &mut progress)
        .map_err(advise)
        .with_context(|| format!("fitting {}", args.scene.display()));
    progress.bar.finish_and_clear();
    if end? == RunEnd::Stopped {
        eprintln!(
            "interrupted: the fit is checkpointed in {}; continue it with `physfit fit {} --resume{}`",
            session.checkpoint_path().display(),
            args.scene.display(),
            args.out
                .as_ref()
                .map(|o| format!(" --out {}", o.display()))
                .unwrap_or_default()
        );
        return Ok(FitOutcome::Interrupted);
    }

    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(session.compare_frames() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{prefix:>18} {bar:30} {pos}/{len} [{elapsed}, eta {eta}]")
            .expect("valid template"),
    );
    bar.set_prefix("compare frames");
    let summary = session
        .write_outputs(&ctx, &mut || bar.inc(1))
        .map_err(advise)?;
    bar.finish_and_clear();
    if !args.quiet {
        let f = &summary.final_loss;
        eprintln!(
            "fitted rollout: mean PSNR {:.2} dB, SSIM {:.4} over {} frames × {} views",
            f.mean_psnr,
            f.mean_ssim,
            session.inputs().frames - 1,
            session.inputs().views.len()
        );
        if let Some(r) = &summary.recovery {
            eprintln!("recovery of the truth: {}", r.summary());
        }
        if let Some(t) = &summary.truth_loss {
            let verdict = if f.loss <= t.loss {
                "at or below it: the optimiser did its job"
            } else {
                "above it: the optimiser stopped short of the truth"
            };
            eprintln!(
                "the truth's own parameters: loss {:.4e}, mean PSNR {:.2} dB (the ceiling the model leaves); the fitted loss {:.4e} is {verdict}",
                t.loss, t.mean_psnr, f.loss
            );
        }
        eprintln!(
            "wrote {}: fitted.ply, drivers.safetensors, fit.json, loss.jsonl, loss.png, stiffness.png, compare/",
            session.out().display()
        );
    }
    Ok(FitOutcome::Finished)
}
