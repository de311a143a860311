//! What `physfit fit` shows while its stages run: a progress bar per
//! stage (plain lines instead where stderr is not a terminal,
//! [`PlainProgress`]), and at each stage end its iterations, loss, convergence and (on
//! a twin experiment) the recovery so far; and the stop it asks for on
//! SIGINT or SIGTERM ([`super::interrupt`]).

use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use physfit::fit::evaluations_so_far;
use physfit::fit::mean_quality;
use physfit::fit::stage_solver;
use physfit::fit::Resolution;
use physfit::fit::Solver;
use physfit::fit::MAX_NEWTON_STEPS;
use physfit::fit::ROUND_TOLERANCE;
use physfit::fit::{
    Control, EvaluationDone, EvaluationPurpose, FinishedStage, FitObserver, FitState, StagePlan,
};

use super::count::count;
use super::fit_phase::Phase;
use super::interrupt::Interrupt;
use super::plain_progress::PlainProgress;

/// Progress bars and Ctrl-C.
pub(super) struct CliProgress {
    pub(super) quiet: bool,
    pub(super) bar: ProgressBar,
    pub(super) interrupt: Interrupt,
    /// The stage running, for the interruption message.
    pub(super) phase: Phase,
    /// Plain lines where stderr is not a terminal.
    pub(super) plain: PlainProgress,
    /// When the running stage started (or resumed).
    pub(super) started: Instant,
    /// How the running stage is solved.
    solver: Solver,
    /// The running stage's evaluations that count against its cap so far.
    evaluations: u32,
    /// Its accepted steps (a scan: candidates) so far.
    steps: u32,
}

impl CliProgress {
    /// Bars on stderr (plain lines where it is no terminal), nothing when
    /// `quiet`; `interrupt` asks the fit to stop.
    pub(super) fn new(quiet: bool, interrupt: Interrupt) -> Self {
        Self {
            quiet,
            bar: ProgressBar::hidden(),
            interrupt,
            phase: Phase::Scan,
            plain: PlainProgress::new(quiet),
            started: Instant::now(),
            solver: Solver::Scan,
            evaluations: 0,
            steps: 0,
        }
    }

    /// The bar's position: what its length (the stage's cap) counts.
    fn position(&self) -> u64 {
        u64::from(match self.solver {
            Solver::Lbfgs => self.evaluations,
            Solver::Scan | Solver::Adam => self.steps,
        })
    }
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
        self.plain.restart();
        self.started = Instant::now();
        self.solver = stage_solver(plan.kind, state);
        // A stage starting afresh has evaluated nothing yet (what
        // `evaluations_so_far` counts after its first iteration includes
        // the start).
        self.evaluations = if state.iteration == 0 {
            0
        } else {
            evaluations_so_far(plan, state)
        };
        self.steps = steps_so_far(self.solver, state);
        self.bar.set_position(self.position());
        self.bar.set_message(format!(
            "(frames {} × {} views)",
            frame_span(&plan.selection.frames),
            plan.selection.views.len()
        ));
    }

    fn iteration_done(&mut self, plan: &StagePlan, state: &FitState) -> Control {
        self.evaluations = evaluations_so_far(plan, state);
        self.steps = steps_so_far(self.solver, state);
        let started = self.started;
        self.plain
            .line(|| running_line(plan, state, started.elapsed().as_secs_f64()));
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
        self.bar.set_position(self.position());
        if self.interrupt.raised() {
            Control::Stop
        } else {
            Control::Continue
        }
    }

    fn evaluation_done(&mut self, plan: &StagePlan, done: &EvaluationDone) {
        if done.counted {
            self.evaluations += 1;
        }
        self.bar.set_position(self.position());
        let seconds = self.started.elapsed().as_secs_f64();
        let (solver, evaluations, steps) = (self.solver, self.evaluations, self.steps);
        self.plain
            .line(|| evaluation_line(plan, solver, evaluations, steps, done, seconds));
    }

    fn discretisation_check_started(
        &mut self,
        previous: Resolution,
        refined: Resolution,
        cap: u32,
        stiffness: Solver,
    ) {
        self.phase = Phase::Discretisation;
        self.interrupt.enter(self.phase.name());
        self.solver = Solver::Lbfgs;
        self.evaluations = 0;
        self.steps = 0;
        self.plain.restart();
        self.started = Instant::now();
        if self.quiet {
            return;
        }
        self.bar.finish_and_clear();
        eprintln!(
            "checking the discretisation: refitting E at {refined} (from the values at {previous}), at most {}{}",
            count(cap as usize, "evaluation", "evaluations"),
            match stiffness {
                Solver::Adam => {
                    " (the per-driver E by Adam; E, the velocity, then E again when the velocity \
                     is fitted)"
                        .to_string()
                }
                _ => format!(
                    " (E and the velocity in turn until E settles), then up to \
                     {MAX_NEWTON_STEPS} Newton steps from the exact gradient"
                ),
            }
        );
        self.bar = ProgressBar::new(u64::from(cap));
        self.bar.set_style(
            ProgressStyle::with_template("{prefix:>18} {bar:30} {pos}/{len} {msg} [{elapsed}]")
                .expect("valid template"),
        );
        self.bar.set_prefix("discretisation");
    }

    fn discretisation_evaluation_done(&mut self, done: &EvaluationDone) {
        if done.counted {
            self.evaluations += 1;
        }
        self.bar.set_position(u64::from(self.evaluations));
        if let Some(loss) = done.loss {
            self.bar.set_message(format!("loss {loss:.4e}"));
        }
        let seconds = self.started.elapsed().as_secs_f64();
        let evaluations = self.evaluations;
        self.plain.line(|| {
            let loss = done
                .loss
                .map_or(", the simulation blew up".to_string(), |l| {
                    format!(", loss {l:.4e}")
                });
            format!("discretisation check: evaluation {evaluations}{loss} ({seconds:.0} s)")
        });
    }

    fn stage_finished(&mut self, plan: &StagePlan, state: &FitState, finished: &FinishedStage<'_>) {
        self.bar.finish_and_clear();
        if self.quiet {
            return;
        }
        eprintln!("{}", finished_line(plan, state, finished));
        if !finished.converged && finished.steps > 0 {
            eprintln!(
                "WARNING: {} stopped at its cap while the loss still fell; raise `fit.{}.iterations` to let it converge",
                plan.label(),
                plan.kind.name()
            );
        } else if !finished.converged && finished.evaluations > 1 {
            eprintln!(
                "WARNING: {} found no lower point within its cap ({}); raise `fit.{}.iterations` to search further",
                plan.label(),
                count(finished.evaluations as usize, "evaluation", "evaluations"),
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

/// A finished stage in one line: its steps and evaluations (what its cap
/// counts named), how it ended, and its loss with the frames and views
/// that loss is over, since consecutive stages fit different frames and
/// their losses cannot be compared.
pub(super) fn finished_line(
    plan: &StagePlan,
    state: &FitState,
    finished: &FinishedStage<'_>,
) -> String {
    let (psnr, _) = mean_quality(finished.final_loss);
    let cap = plan.settings.iterations;
    let (counts, how) = match stage_solver(plan.kind, state) {
        Solver::Scan => (
            format!(
                "{} ({})",
                count(finished.steps as usize, "candidate", "candidates"),
                count(finished.evaluations as usize, "evaluation", "evaluations")
            ),
            "best".to_string(),
        ),
        solver => {
            let capped = if solver == Solver::Lbfgs {
                count(cap as usize, "evaluation", "evaluations")
            } else {
                count(cap as usize, "step", "steps")
            };
            let ending = if finished.converged {
                format!("converged; cap {capped}")
            } else {
                format!("its cap of {capped}")
            };
            (
                format!(
                    "{}, {} ({ending})",
                    count(finished.steps as usize, "step", "steps"),
                    count(finished.evaluations as usize, "evaluation", "evaluations")
                ),
                "final".to_string(),
            )
        }
    };
    format!(
        "{}: {counts} in {:.0} s; {how} loss {:.4e} over frames {} × {}, PSNR {:.2} dB",
        plan.label(),
        finished.seconds,
        finished.final_loss.loss,
        frame_span(&plan.selection.frames),
        count(plan.selection.views.len(), "view", "views"),
        psnr
    )
}

/// A running stage in one plain line (where no bar is drawn): how far it
/// is against its cap, and the last loss with the frames it is over.
fn running_line(plan: &StagePlan, state: &FitState, seconds: f64) -> String {
    let evaluations = evaluations_so_far(plan, state);
    let cap = plan.settings.iterations;
    let progress = match stage_solver(plan.kind, state) {
        Solver::Scan => format!(
            "candidate {} of {}, {}",
            state.iteration,
            plan.scan.as_ref().map_or(0, |s| s.most_candidates()),
            count(evaluations as usize, "evaluation", "evaluations")
        ),
        Solver::Lbfgs => format!(
            "{}, evaluation {evaluations} of at most {cap}",
            count(state.iteration.saturating_sub(1) as usize, "step", "steps")
        ),
        Solver::Adam => format!(
            "step {} of at most {cap}, {}",
            state.iteration,
            count(evaluations as usize, "evaluation", "evaluations")
        ),
    };
    let loss = state.records.last().map_or(String::new(), |r| {
        format!(
            ", loss {:.4e} over frames {}",
            r.loss,
            frame_span(&plan.selection.frames)
        )
    });
    format!("{}: {progress}{loss} ({seconds:.0} s)", plan.label())
}

/// A stage's accepted steps by `state` (a scan: its candidates).
fn steps_so_far(solver: Solver, state: &FitState) -> u32 {
    match solver {
        // The start's record, then one per accepted step.
        Solver::Lbfgs => state.iteration.saturating_sub(1),
        Solver::Scan | Solver::Adam => state.iteration,
    }
}

/// An evaluation within a stage in one plain line (where no bar is
/// drawn): the stage's progress as [`running_line`] gives it, which
/// evaluation this was, and its loss with the frames it is over.
fn evaluation_line(
    plan: &StagePlan,
    solver: Solver,
    evaluations: u32,
    steps: u32,
    done: &EvaluationDone,
    seconds: f64,
) -> String {
    let cap = plan.settings.iterations;
    let what = match (done.purpose, done.with_gradient, done.counted) {
        (EvaluationPurpose::ScanVelocity, _, _) => " (a candidate's velocity fit)",
        (_, false, _) if solver == Solver::Scan => " (the candidate's loss)",
        (_, false, _) => " (a line-search trial)",
        (_, true, false) => " (the accepted point's gradient)",
        (_, true, true) => "",
    };
    let progress = match solver {
        Solver::Scan => format!(
            "candidate {} of {}, evaluation {evaluations}{what}",
            steps + 1,
            plan.scan.as_ref().map_or(0, |s| s.most_candidates())
        ),
        Solver::Lbfgs => format!(
            "{}, evaluation {evaluations} of at most {cap}{what}",
            count(steps as usize, "step", "steps")
        ),
        Solver::Adam => format!(
            "step {} of at most {cap}, evaluation {evaluations}{what}",
            steps + 1
        ),
    };
    let loss = match (done.purpose, done.loss) {
        (EvaluationPurpose::ScanVelocity, _) => String::new(),
        (EvaluationPurpose::Stage, Some(loss)) => format!(
            ", loss {loss:.4e} over frames {}",
            frame_span(&plan.selection.frames)
        ),
        (EvaluationPurpose::Stage, None) => ", the simulation blew up".to_string(),
    };
    format!("{}: {progress}{loss} ({seconds:.0} s)", plan.label())
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
