//! `physfit fit scene.toml [--out DIR] [--stage velocity|stiffness|both]
//! [--velocity-from FILE] [--resume] [--force] [--truth truth.toml]
//! [--quiet]`: the two-stage fit (docs/design.md § Loss, parameters, fit). The
//! fit itself is the library's session ([`FitSession`]); this command only
//! turns flags into its options, prints, draws the progress bars, turns
//! SIGINT and SIGTERM into a stop ([`super::interrupt`]: a checkpoint, then exit status 130 or 143) and adds the
//! flags to use to the session's refusals.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::fit::checkpoint::CheckpointError;
use physfit::fit::record::mean_quality;
use physfit::fit::session::{RunEnd, TruthSource, CHECKPOINT_FILE};
use physfit::fit::stages::ROUND_TOLERANCE;
use physfit::fit::{
    Control, EarlierFit, FinishedStage, FitObserver, FitSession, FitState, SessionError,
    SessionOptions, StageChoice, StagePlan,
};
use physfit::stop::StopCause;

use super::interrupt::Interrupt;
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::io::shown::shown;
use physfit::scene::Scene;

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
    /// With `--stage stiffness` (refused otherwise): the drivers.safetensors
    /// of an earlier fit whose velocity to hold (default: the output
    /// directory's).
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
    /// The global `--quiet` (one flag for every command, set by `main`).
    #[arg(skip)]
    pub quiet: bool,
}

/// How `physfit fit` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitOutcome {
    /// Every stage ran and the outputs are written.
    Finished,
    /// SIGINT or SIGTERM: stopped at a safe point, the checkpoint kept;
    /// exit with the cause's status (130 or 143).
    Interrupted(StopCause),
}

/// Progress bars and Ctrl-C.
struct CliProgress {
    quiet: bool,
    bar: ProgressBar,
    interrupt: Interrupt,
    /// The stage running, for the interruption message.
    phase: Phase,
}

impl FitObserver for CliProgress {
    fn stage_started(&mut self, plan: &StagePlan, state: &FitState) {
        self.phase = Phase::of_stage(plan.kind);
        self.interrupt.enter(self.phase.name());
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
            "(frames {} × {} views)",
            frame_span(&plan.selection.frames),
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
        if self.interrupt.raised() {
            Control::Stop
        } else {
            Control::Continue
        }
    }

    fn stage_finished(&mut self, plan: &StagePlan, _: &FitState, finished: &FinishedStage<'_>) {
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
                100.0 * ROUND_TOLERANCE
            );
        }
        if let Some(r) = &finished.recovery {
            eprintln!("{}: recovery: {}", plan.label(), r.summary());
        }
    }
}

/// Frame indices as a span, `1–3` (a stage fits consecutive frames from
/// 1), or a list when they are not consecutive.
fn frame_span(frames: &[usize]) -> String {
    match frames {
        [] => "none".to_string(),
        [one] => one.to_string(),
        [first, .., last] if last - first + 1 == frames.len() => format!("{first}–{last}"),
        _ => format!("{frames:?}"),
    }
}

/// The session's refusal with the flags that fix it.
fn with_flag_advice(error: SessionError, args: &FitArgs) -> anyhow::Error {
    let advice = match &error {
        SessionError::EarlierFit { .. } => Some(
            "fix: --resume to continue it, --force to replace those files (nothing else in it is \
             touched), or --out another directory",
        ),
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

/// The phases of `physfit fit`, as the interruption hook
/// ([`super::interrupt::INTERRUPT_HOOK`]) names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Prepare,
    CameraCheck,
    TruthCheck,
    Scan,
    Velocity,
    Stiffness,
    Outputs,
}

impl Phase {
    const ALL: [Phase; 7] = [
        Phase::Prepare,
        Phase::CameraCheck,
        Phase::TruthCheck,
        Phase::Scan,
        Phase::Velocity,
        Phase::Stiffness,
        Phase::Outputs,
    ];

    fn name(self) -> &'static str {
        match self {
            Phase::Prepare => "prepare",
            Phase::CameraCheck => "camera-check",
            Phase::TruthCheck => "truth-check",
            Phase::Scan => "scan",
            Phase::Velocity => "velocity",
            Phase::Stiffness => "stiffness",
            Phase::Outputs => "outputs",
        }
    }

    /// What the interruption message says the fit was doing.
    fn doing(self) -> &'static str {
        match self {
            Phase::Prepare => "while preparing the fit",
            Phase::CameraCheck => "during the camera check",
            Phase::TruthCheck => "during the truth check",
            Phase::Scan => "during the scan",
            Phase::Velocity => "during the velocity stage",
            Phase::Stiffness => "during the stiffness stage",
            Phase::Outputs => "while writing the outputs",
        }
    }

    fn of_stage(kind: physfit::fit::StageKind) -> Self {
        match kind {
            physfit::fit::StageKind::Scan => Phase::Scan,
            physfit::fit::StageKind::Velocity => Phase::Velocity,
            physfit::fit::StageKind::Stiffness => Phase::Stiffness,
        }
    }
}

/// SIGINT/SIGTERM and the hook, with the fit's phase names.
fn install_interrupt() -> Result<Interrupt> {
    let names: Vec<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
    Interrupt::install(&names, &[Phase::TruthCheck.name()])
}

/// How a `--resume` of this run reads.
fn resume_command(args: &FitArgs) -> String {
    let mut command = format!("physfit fit {} --resume", shown(&args.scene));
    if let Some(o) = &args.out {
        command.push_str(&format!(" --out {}", shown(o)));
    }
    if args.stage != StageArg::Both {
        command.push_str(&format!(
            " --stage {}",
            args.stage
                .to_possible_value()
                .expect("no skipped value")
                .get_name()
        ));
    }
    if let Some(v) = &args.velocity_from {
        command.push_str(&format!(" --velocity-from {}", shown(v)));
    }
    if let Some(t) = &args.truth {
        command.push_str(&format!(" --truth {}", shown(t)));
    }
    command
}

/// The flags that would be ignored: refused, naming when they apply.
fn check_flags(args: &FitArgs) -> Result<()> {
    if args.velocity_from.is_some() && args.stage != StageArg::Stiffness {
        anyhow::bail!(
            "--velocity-from applies only with --stage stiffness (the velocity a stiffness-only \
             fit holds; the velocity stage fits its own); fix: add --stage stiffness, or drop \
             --velocity-from"
        );
    }
    Ok(())
}

/// Runs `physfit fit`.
pub fn run(args: &FitArgs) -> Result<FitOutcome> {
    check_flags(args)?;
    // Installed first, so that a signal is honoured in every phase.
    let interrupt = install_interrupt()?;
    interrupt.enter(Phase::Prepare.name());
    let scene = Scene::load(&args.scene)?;
    let out = args.out.clone().unwrap_or_else(|| scene.output_dir.clone());
    let options = SessionOptions {
        out: out.clone(),
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
    let resumed = prepared.resumed().is_some();
    // What an interruption says: the phase, and whether the earlier
    // checkpoint stands.
    let cause = || interrupt.stop().cause().unwrap_or(StopCause::Interrupt);
    let stopped = |phase: Phase, checkpointed: bool| {
        if checkpointed || resumed {
            eprintln!(
                "interrupted {}: the fit is checkpointed in {}; continue it with `{}`",
                phase.doing(),
                shown(&out.join(CHECKPOINT_FILE)),
                resume_command(args)
            );
        } else {
            eprintln!(
                "interrupted {}: no iteration had finished, so there was nothing to keep and no \
                 checkpoint was written; run the same command again to start the fit",
                phase.doing()
            );
        }
        Ok(FitOutcome::Interrupted(cause()))
    };
    if interrupt.raised() {
        return stopped(Phase::Prepare, false);
    }
    if !args.quiet {
        eprintln!("output {}", shown(&out));
        if let Some(TruthSource::BesideFrames(path)) = prepared.truth_source() {
            eprintln!(
                "twin experiment: the frames were made by `physfit synth`; measuring the recovery of {}",
                shown(path)
            );
        }
        if let Some(c) = prepared.resumed() {
            eprintln!(
                "resuming from {} ({} iterations recorded)",
                shown(&prepared.checkpoint_path()),
                c.state.records.len()
            );
        }
    }
    let ctx = GpuContext::new(&GpuOptions::default())?;
    // Before opening (which allocates the fit on the GPU). An earlier fit
    // that --force replaces stays until the fit writes its first checkpoint
    // or its outputs (`EarlierFit::Replace`), so that every refusal and
    // stop from here on keeps it.
    if interrupt.raised() {
        return stopped(Phase::Prepare, false);
    }
    // Nothing kept: the session, dropped, removes its staging folder and
    // the output directory if this run made it and left it empty.
    let stopped_early = |phase: Phase| stopped(phase, false);
    let mut session = FitSession::open(&ctx, prepared).map_err(advise)?;
    session.set_stop(interrupt.stop().clone());
    if !args.quiet {
        let d = session.drivers();
        eprintln!(
            "fitting {}: {} drivers ({} anchored), {} frames (0–{}, 0 the rest frame) × {} views, adapter {}",
            shown(&args.scene),
            d.len(),
            d.anchored.iter().filter(|a| **a).count(),
            session.inputs().frames,
            session.inputs().frames - 1,
            session.inputs().views.len(),
            ctx.adapter_info.name
        );
    }
    interrupt.enter(Phase::CameraCheck.name());
    let checks = match session.check_cameras(&ctx) {
        Err(e) if e.is_stop() => return stopped_early(Phase::CameraCheck),
        other => other.map_err(advise)?,
    };
    for check in checks {
        match &check.picture {
            Some(picture) => eprintln!(
                "WARNING: camera check: view '{}' renders frame 0 at only {:.1} dB PSNR against {} (below {} dB).\n\
                 WARNING: a misaligned camera is the commonest way a fit fails; compare reference | render | difference in {}\n\
                 WARNING: (docs/your-own-object.md, \"The camera check\").\n\
                 WARNING: fix: `physfit align {} --out DIR` fits the view's pose and colour (exposure, white balance) to its frame 0.",
                check.view,
                check.psnr,
                shown(&check.reference),
                physfit::fit::camera_check::CAMERA_CHECK_DB,
                shown(picture),
                shown(&args.scene)
            ),
            None if !args.quiet => {
                eprintln!("camera check: view '{}' frame 0 PSNR {:.1} dB", check.view, check.psnr)
            }
            None => {}
        }
    }
    if interrupt.raised() {
        return stopped_early(Phase::CameraCheck);
    }
    interrupt.enter(Phase::TruthCheck.name());
    match session.check_truth(&ctx, &mut |simulated| {
        interrupt.reach(Phase::TruthCheck.name(), simulated)
    }) {
        Err(e) if e.is_stop() => return stopped_early(Phase::TruthCheck),
        other => other.map_err(advise)?,
    }
    if interrupt.raised() {
        return stopped_early(Phase::TruthCheck);
    }

    let mut progress = CliProgress {
        quiet: args.quiet,
        bar: ProgressBar::hidden(),
        interrupt: interrupt.clone(),
        phase: Phase::Scan,
    };
    let end = session
        .run(&ctx, &mut progress)
        .map_err(advise)
        .with_context(|| format!("fitting {}", shown(&args.scene)));
    progress.bar.finish_and_clear();
    if let RunEnd::Stopped { checkpointed } = end? {
        return if checkpointed || resumed {
            stopped(progress.phase, true)
        } else {
            stopped_early(progress.phase)
        };
    }

    interrupt.enter(Phase::Outputs.name());
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
    let summary = match session.write_outputs(&ctx, &mut || bar.inc(1)) {
        Err(e) if e.is_stop() => {
            bar.finish_and_clear();
            eprintln!(
                "interrupted while writing the outputs: none was written; the finished fit is \
                 checkpointed in {}; write its outputs with `{}`",
                shown(&session.checkpoint_path()),
                resume_command(args)
            );
            return Ok(FitOutcome::Interrupted(cause()));
        }
        other => other.map_err(advise)?,
    };
    bar.finish_and_clear();
    if !args.quiet {
        let f = &summary.final_loss;
        eprintln!(
            "fitted rollout: mean PSNR {:.2} dB, SSIM {:.4} over frames 1–{} × {} views",
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
            "wrote fitted.ply, drivers.safetensors, fit.json, loss.jsonl, loss.png, stiffness.png, compare/"
        );
        eprintln!("output {}", shown(session.out()));
    }
    if interrupt.raised() {
        // Ctrl-C after the last compare frame: the outputs are whole.
        eprintln!("interrupted after the outputs were written: the fit is complete");
    }
    Ok(FitOutcome::Finished)
}
