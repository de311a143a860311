//! The one trait through which whoever runs a fit is told of it and may
//! stop it: the stage loop ([`super::stages::run_fit`]) tells it, the
//! session ([`super::session`]) adds its checkpoints and the truth's
//! recovery and passes it on to its caller's (`physfit fit`'s progress
//! bars, a test's counter).

use super::discretisation::Resolution;
use super::evaluation::LossReport;
use super::plan::StagePlan;
use super::recovery::Recovery;
use super::state::FitState;
use super::summary::Solver;
pub use crate::solve::Control;

/// Progress, checkpoints and interruption, outside the fit's loop.
pub trait FitObserver {
    /// A stage starts (or resumes at `state.iteration`).
    fn stage_started(&mut self, plan: &StagePlan, state: &FitState);
    /// An iteration was taken; its record is `state.records.last()`.
    /// [`Control::Stop`] stops the fit there (the state is consistent).
    fn iteration_done(&mut self, plan: &StagePlan, state: &FitState) -> Control;
    /// An evaluation of the loss ended, inside an iteration (a line-search
    /// trial, a scan's velocity fit): progress between iterations, which
    /// can be far apart. The fit's state is mid-iteration, so none is
    /// given.
    fn evaluation_done(&mut self, plan: &StagePlan, done: &EvaluationDone) {
        let _ = (plan, done);
    }
    /// The stages are done and E is refitted at the level `refined` (its
    /// grid, drivers and substeps) from its values at `previous` (the fit's
    /// or the previous level's) to measure how far the discretisation
    /// moves it ([`super::discretisation_check`]), in at most `cap`
    /// evaluations.
    fn discretisation_check_started(
        &mut self,
        previous: Resolution,
        refined: Resolution,
        cap: u32,
        stiffness: Solver,
    ) {
        let _ = (previous, refined, cap, stiffness);
    }
    /// An evaluation of that refit ended.
    fn discretisation_evaluation_done(&mut self, done: &EvaluationDone) {
        let _ = done;
    }
    /// A stage ended; `state` is already at the start of the next stage (a
    /// checkpoint written here resumes there).
    fn stage_finished(&mut self, plan: &StagePlan, state: &FitState, finished: &FinishedStage<'_>);
}

/// What [`FitObserver::evaluation_done`] reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EvaluationDone {
    /// Its loss; `None` when the simulation blew up.
    pub loss: Option<f64>,
    /// It computed the gradient too (else the loss alone: a line-search
    /// trial, a scan candidate's measure).
    pub with_gradient: bool,
    /// It is at a point not evaluated just before, so it counts against
    /// the stage's cap; false for the gradient of a point whose loss was
    /// just measured (the accepted trial of a line search).
    pub counted: bool,
    /// What the loss is over: the stage's frames, or (inside a scan) the
    /// velocity frames of a candidate's velocity fit.
    pub purpose: EvaluationPurpose,
}

/// Which loss an [`EvaluationDone`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvaluationPurpose {
    /// The stage's own loss, on its frames.
    Stage,
    /// A scan candidate's velocity fit, on the velocity frames.
    ScanVelocity,
}

/// Told of each evaluation as it ends ([`FitObserver::evaluation_done`],
/// through the objective that runs it).
pub type EvaluationHook<'a> = &'a dyn Fn(&EvaluationDone);

/// What [`FitObserver::stage_finished`] reports.
pub struct FinishedStage<'a> {
    /// The loss at the stage's final parameters.
    pub final_loss: &'a LossReport,
    /// Its wall seconds (since it started or resumed).
    pub seconds: f64,
    /// Its accepted steps (a scan: candidates scanned), over every run
    /// of it (a resumed stage's earlier ones included).
    pub steps: u32,
    /// Its evaluations of the loss (what its cap counts for L-BFGS:
    /// line-search trials included; rejected Adam steps; a scan's
    /// velocity fits).
    pub evaluations: u32,
    /// It stopped because its loss flattened, not at its cap.
    pub converged: bool,
    /// The rounds converged: the stages left are skipped.
    pub rounds_converged: bool,
    /// The recovery of the truth, on a twin experiment (the session adds
    /// it; the stage loop knows no truth).
    pub recovery: Option<Recovery>,
}
