//! `physfit fit scene.toml [--out DIR] [--stage velocity|stiffness|both]
//! [--velocity-from FILE] [--resume] [--force] [--truth truth.toml]
//! [--quiet]`: the two-stage fit (docs/design.md § Loss, parameters, fit). The
//! fit itself is the library's session ([`FitSession`]); this command only
//! turns flags into its options, prints, draws the progress bars, turns
//! SIGINT and SIGTERM into a stop ([`super::interrupt`]: a checkpoint, then exit status 130 or 143) and adds the
//! flags to use to the session's refusals.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::fit::{EarlierFit, FitSession, SessionError, SessionOptions, StageChoice};
use physfit::fit::{RunEnd, TruthSource, CHECKPOINT_FILE};
use physfit::fit::{COMPARE_DIR, OUTPUT_FILES};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::io::shown;
use physfit::scene::Scene;
use physfit::stop::StopCause;

use super::count::count;
use super::discretisation_line::discretisation_line;
use super::exact_step_line::exact_step_line;
pub use super::fit_args::FitArgs;
use super::fit_args::{check_flags, resume_command, with_flag_advice};
use super::fit_phase::{install_interrupt, Phase};
use super::fit_progress::CliProgress;
use super::fitted_line::fitted_line;
use super::plain_progress::PlainProgress;

/// How `physfit fit` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitOutcome {
    /// Every stage ran and the outputs are written.
    Finished,
    /// SIGINT or SIGTERM: stopped at a safe point, the checkpoint kept;
    /// exit with the cause's status (130 or 143).
    Interrupted(StopCause),
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
                "resuming from {} ({} recorded)",
                shown(&prepared.checkpoint_path()),
                count(c.state.records.len(), "iteration", "iterations")
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
    if resumed && session.outputs_current() {
        // Writing the same outputs again would only cost the rollout.
        if !args.quiet {
            eprintln!(
                "nothing left to do: every stage of the checkpointed fit has finished (none stopped \
                 at a cap the scene now raises) and {} holds its outputs; to fit again from the \
                 start, run `physfit fit {}{}` with --force instead of --resume",
                shown(&out),
                shown(&args.scene),
                args.out
                    .as_ref()
                    .map_or(String::new(), |o| format!(" --out {}", shown(o)))
            );
        }
        return Ok(FitOutcome::Finished);
    }
    if let Some(c) = session.continued() {
        if !args.quiet {
            eprintln!(
                "{} stopped at its cap of {}; the scene now caps it at {}: continuing it from its \
                 last step, then the stages after it",
                c.label, c.cap_was, c.cap
            );
        }
    }
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
                physfit::fit::CAMERA_CHECK_DB,
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

    let followed = session.follow_loss();
    if !args.quiet {
        eprintln!("follow the loss as it runs: tail -F {}", shown(&followed));
    }
    let mut progress = CliProgress::new(args.quiet, interrupt.clone());
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
    let mut plain = PlainProgress::new(args.quiet);
    let total = session.compare_frames();
    let summary = match session.write_outputs(&ctx, &mut || {
        bar.inc(1);
        plain.line(|| {
            format!(
                "writing the outputs: compare frame {} of {total}",
                bar.position()
            )
        });
    }) {
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
        if let Some(line) = exact_step_line(&summary) {
            eprintln!("{line}");
        }
        eprintln!("{}", fitted_line(&summary));
        let f = &summary.final_loss;
        eprintln!(
            "fitted rollout: mean PSNR {:.2} dB, SSIM {:.4} over frames 1–{} × {} views",
            f.mean_psnr,
            f.mean_ssim,
            session.inputs().frames - 1,
            session.inputs().views.len()
        );
        eprintln!("{}", discretisation_line(&summary));
        if let Some(r) = &summary.recovery {
            eprintln!("recovery of the truth: {}", r.summary());
        }
        if let (Some(t), Some(reached)) = (&summary.truth_loss, summary.reached_the_truths_loss()) {
            let verdict = if reached {
                "at or below it: the optimiser did its job"
            } else {
                "above it: the optimiser stopped short of the truth"
            };
            eprintln!(
                "the truth's own parameters: loss {:.4e}, mean PSNR {:.2} dB (the ceiling the model leaves); the fitted loss {:.4e} is {verdict}",
                t.loss, t.mean_psnr, f.loss
            );
        }
        eprintln!("wrote {}, {COMPARE_DIR}/", OUTPUT_FILES.join(", "));
        eprintln!("output {}", shown(session.out()));
    }
    if interrupt.raised() {
        // Ctrl-C after the last compare frame: the outputs are whole.
        eprintln!("interrupted after the outputs were written: the fit is complete");
    }
    Ok(FitOutcome::Finished)
}
