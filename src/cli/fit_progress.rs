//! What `physfit fit` shows while its stages run: a progress bar per
//! stage, and at each stage end its iterations, loss, convergence and (on
//! a twin experiment) the recovery so far; and the stop it asks for on
//! SIGINT or SIGTERM ([`super::interrupt`]).

use indicatif::{ProgressBar, ProgressStyle};

use physfit::fit::record::mean_quality;
use physfit::fit::ROUND_TOLERANCE;
use physfit::fit::{Control, FinishedStage, FitObserver, FitState, StagePlan};

use super::fit_phase::Phase;
use super::interrupt::Interrupt;

/// Progress bars and Ctrl-C.
pub(super) struct CliProgress {
    pub(super) quiet: bool,
    pub(super) bar: ProgressBar,
    pub(super) interrupt: Interrupt,
    /// The stage running, for the interruption message.
    pub(super) phase: Phase,
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
