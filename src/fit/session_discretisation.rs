//! The session's discretisation check ([`super::discretisation_check`],
//! docs/design.md § Error bars, "From the discretisation"): after the
//! stages and the error bars, when `fit.check_discretisation` asks for
//! it, E is refitted level by level at doubled substeps until two
//! consecutive levels agree within the tolerance, the cap on levels is
//! reached or the next level does not fit the memory left. Each finished
//! level is kept in the fit's state and checkpointed: a fit stopped inside
//! a level resumes at that level (from the fit's stiffness curvature, the
//! level's own start), and a finished check is not run again.

use std::cell::RefCell;

use super::discretisation_check::{
    checkable, level_fits_memory, refined, refit_level, DiscretisationCheck, RefinementEnd,
};
use super::observer::{EvaluationDone, FitObserver};
use super::plan::StageKind;
use super::session::FitSession;
use super::session_error::SessionError;
use crate::gpu::GpuContext;

impl FitSession {
    /// The check (module doc), once every stage has run; nothing when it
    /// is not asked for, already finished, or cannot measure this fit
    /// ([`super::discretisation_check::NotChecked`]).
    pub(super) fn check_discretisation(
        &mut self,
        ctx: &GpuContext,
        progress: &mut dyn FitObserver,
    ) -> Result<(), SessionError> {
        let finished = self
            .state
            .discretisation
            .as_ref()
            .is_some_and(|d| d.end.is_some());
        if !self.scene.fit.check_discretisation || finished || !self.state.done(&self.plan) {
            return Ok(());
        }
        let fitted = self.state.parameters();
        let Ok(stage) = checkable(&self.plan, &fitted) else {
            return Ok(());
        };
        let stage = stage.clone();
        let mut check = self.state.discretisation.take().unwrap_or_else(|| {
            DiscretisationCheck::start(
                self.scene.simulation.substeps,
                fitted.log10_youngs.clone(),
                self.scene.fit.discretisation_levels,
            )
        });
        // A resumed check starts its next level from the finest level's E
        // (ν and the velocity from the fit) and the fit's curvature.
        let mut from = fitted;
        from.log10_youngs = check.finest().1.to_vec();
        let mut pairs = self.state.curvature_of(StageKind::Stiffness).to_vec();
        loop {
            self.state.discretisation = Some(check.clone());
            if let Err(why) = check.next() {
                check.finish(why);
                break;
            }
            let previous = check.finest().0;
            let fits = refined(previous)
                .ok_or_else(|| format!("{previous} × 2 substeps overflow"))
                .and_then(|n| level_fits_memory(ctx, &self.scene, n).map(|()| n));
            let substeps = match fits {
                Ok(n) => n,
                Err(refusal) => {
                    log::warn!(
                        "the discretisation check stops at {previous} substeps per frame: the next level does not fit ({refusal})"
                    );
                    check.finish(RefinementEnd::Memory);
                    break;
                }
            };
            progress.discretisation_check_started(previous, substeps, stage.settings.iterations);
            let run = {
                let progress = RefCell::new(&mut *progress);
                let hook = |done: &EvaluationDone| {
                    progress.borrow_mut().discretisation_evaluation_done(done)
                };
                refit_level(
                    ctx,
                    &self.scene,
                    &self.drivers,
                    &stage,
                    &from,
                    &pairs,
                    substeps,
                    self.stop.as_ref(),
                    &hook,
                )?
            };
            check.push_level(
                substeps,
                run.params.log10_youngs.clone(),
                run.loss,
                run.evaluations,
                run.seconds,
            );
            (from, pairs) = (run.params, run.pairs);
            self.state.discretisation = Some(check.clone());
            // Kept: a fit stopped in the next level resumes there.
            self.save_checkpoint()?;
        }
        self.state.discretisation = Some(check);
        // Kept: a fit stopped while writing its outputs does not refit.
        self.save_checkpoint()
    }
}
