//! The session's observer around the caller's: a checkpoint every
//! `fit.checkpoint_every` iterations, at every stage end and on a stop,
//! each iteration's records appended to the followed loss log when the
//! caller asked for one ([`LiveLoss`]), and the recovery of a twin experiment's truth at each stage end
//! (docs/design.md § Loss, parameters, fit).

use std::path::Path;

use super::checkpoint::{Checkpoint, FitFingerprint};
use super::live_loss::LiveLoss;
use super::observer::{Control, EvaluationDone, FinishedStage, FitObserver};
use super::output_plan::CHECKPOINT_FILE;
use super::plan::StagePlan;
use super::result::per_driver;
use super::session_error::SessionError;
use super::state::FitState;
use super::truth_check::TruthCheck;
use crate::drive::DriverSet;
use crate::io::output_dir::OutputDir;

/// Writes `checkpoint` in place in the output directory (first removing
/// an earlier fit being replaced).
pub(super) fn save_checkpoint(
    output: &mut OutputDir,
    checkpoint: &Checkpoint,
) -> Result<(), SessionError> {
    let path = output.target().join(CHECKPOINT_FILE);
    let bytes = checkpoint.to_json(&path)?;
    output.write_in_place(Path::new(CHECKPOINT_FILE), &bytes)?;
    Ok(())
}

/// The checkpoints and per-stage reports around the caller's progress.
pub(super) struct SessionObserver<'a> {
    pub(super) progress: &'a mut dyn FitObserver,
    pub(super) checkpoint_every: u32,
    pub(super) output: &'a mut OutputDir,
    pub(super) fingerprint: &'a FitFingerprint,
    pub(super) stage_seconds: &'a mut Vec<f64>,
    pub(super) truth: Option<&'a TruthCheck>,
    pub(super) drivers: &'a DriverSet,
    pub(super) youngs_map: super::ParamMap,
    pub(super) velocity_map: super::ParamMap,
    /// ν per driver from the state's `z` (the truth's recovery measures it).
    pub(super) poisson: super::poisson::DriverPoisson,
    pub(super) error: Option<SessionError>,
    /// The loss log followed while the fit runs, when asked for.
    pub(super) live: Option<&'a mut LiveLoss>,
}

impl SessionObserver<'_> {
    fn save(&mut self, state: &FitState) {
        let c = Checkpoint::new(
            self.fingerprint.clone(),
            state.clone(),
            self.stage_seconds.clone(),
        );
        if let Err(e) = save_checkpoint(self.output, &c) {
            self.error.get_or_insert(e);
        }
    }
}

impl FitObserver for SessionObserver<'_> {
    fn stage_started(&mut self, plan: &StagePlan, state: &FitState) {
        self.progress.stage_started(plan, state);
    }

    fn iteration_done(&mut self, plan: &StagePlan, state: &FitState) -> Control {
        if let Some(live) = self.live.as_deref_mut() {
            if let Err(e) = live.append(&state.records) {
                self.error.get_or_insert(e);
            }
        }
        let control = self.progress.iteration_done(plan, state);
        if control == Control::Stop || state.iteration.is_multiple_of(self.checkpoint_every) {
            self.save(state);
        }
        if self.error.is_some() {
            Control::Stop
        } else {
            control
        }
    }

    fn evaluation_done(&mut self, plan: &StagePlan, done: &EvaluationDone) {
        self.progress.evaluation_done(plan, done);
    }

    /// Keeps the stage's seconds, checkpoints, and adds the recovery of
    /// the truth so far for the caller.
    fn stage_finished(&mut self, plan: &StagePlan, state: &FitState, finished: &FinishedStage<'_>) {
        self.stage_seconds.push(finished.seconds);
        self.save(state);
        let recovery = match self.truth {
            Some(truth) => match per_driver(&self.youngs_map, &self.velocity_map, state).and_then(
                |(log10, velocity)| {
                    let poisson = self.poisson.apply(&state.poisson)?;
                    Ok(truth.recovery(self.drivers, &log10, &velocity, &poisson))
                },
            ) {
                Ok(recovery) => Some(recovery),
                Err(e) => {
                    self.error.get_or_insert(e);
                    None
                }
            },
            None => None,
        };
        self.progress.stage_finished(
            plan,
            state,
            &FinishedStage {
                recovery,
                ..*finished
            },
        );
    }
}
