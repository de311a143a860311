//! The session's discretisation check ([`super::discretisation_check`],
//! docs/design.md § Error bars, "From the discretisation"): after the
//! stages and the error bars, when `fit.check_discretisation` asks for
//! it, E is refitted level by level on a doubled grid, at least doubled
//! substeps and drivers rebuilt for the grid
//! ([`super::discretisation_grid`]) until two consecutive levels agree
//! within the tolerance, the cap on levels is reached, the next level
//! does not fit the memory left, or `fit.discretisation_seconds` is spent:
//! a level predicted to take more than what is left
//! ([`DiscretisationCheck::predicted_next_seconds`]) is not started, and
//! one still running when it is spent stops after its current step,
//! unconverged. Each finished level is kept in the fit's
//! state and checkpointed: a level's grid, drivers and substeps follow
//! from the scene and its index, so a fit stopped inside a level resumes
//! at that level (its drivers rebuilt, from the fit's stiffness curvature),
//! and a finished check is not run again.

use std::cell::RefCell;

use super::discretisation::{at_range_end, LevelFit};
use super::discretisation_carry::carry_parameters;
use super::discretisation_check::{
    checkable, level_fits_memory, refit_level, refitted_velocity, DiscretisationCheck, LevelStages,
    RefinementEnd, YoungsStatistic,
};
use super::discretisation_grid::{level_scene, scene_resolution};
use super::discretisation_round::e_refits;
use super::error::FitError;
use super::objective::by_lbfgs;
use super::observer::{EvaluationDone, FitObserver};
use super::plan::StageKind;
use super::session::FitSession;
use super::session_error::SessionError;
use super::summary::Solver;
use crate::drive::DriverSet;
use crate::gpu::GpuContext;
use std::time::{Duration, Instant};

impl FitSession {
    /// The check (module doc), once every stage has run; nothing when it
    /// is not asked for, already finished, or cannot measure this fit
    /// ([`super::discretisation_check::NotChecked`]).
    pub(super) fn check_discretisation(
        &mut self,
        ctx: &GpuContext,
        progress: &mut dyn FitObserver,
    ) -> Result<(), SessionError> {
        // A check kept from before a change of `fit.discretisation_refine`
        // measured another refinement: it is run again.
        let refinement = self.scene.fit.discretisation_refine;
        if let Some(d) = self
            .state
            .discretisation
            .take_if(|d| d.refinement != refinement)
        {
            log::warn!(
                "the checkpoint's discretisation check refined by `{}`; the scene now asks for \
                 `fit.discretisation_refine = \"{}\"`: its {} level(s) are dropped and the check \
                 runs again",
                d.refinement.word(),
                refinement.word(),
                d.levels.len()
            );
        }
        let finished = self
            .state
            .discretisation
            .as_ref()
            .is_some_and(|d| d.end.is_some());
        if !self.scene.fit.check_discretisation || finished || !self.state.done(&self.plan) {
            return Ok(());
        }
        let fitted = self.state.parameters();
        let Ok((stage, statistic)) = checkable(&self.plan, &self.scene.fit.stiffness.field) else {
            return Ok(());
        };
        let stage = stage.clone();
        let poisson_range = self.scene.fit.stiffness.poisson_range;
        let poisson_of =
            |z: &[f64]| -> Vec<f64> { z.iter().map(|&z| poisson_range.poisson_of(z)).collect() };
        let velocity_stage =
            refitted_velocity(&self.plan, &self.scene.fit.velocity.field, &fitted).cloned();
        let mut check = self.state.discretisation.take().unwrap_or_else(|| {
            let check = DiscretisationCheck::start(
                scene_resolution(&self.scene),
                statistic.of(&fitted.log10_youngs, &self.drivers.anchored),
                poisson_of(&fitted.poisson),
                self.scene.fit.discretisation_levels,
            )
            .refining(refinement)
            .comparing(statistic);
            match velocity_stage {
                Some(_) => check.refitting_velocity(fitted.velocity.clone()),
                None => check,
            }
        });
        // A resumed check starts its next level from the finest level's
        // drivers (rebuilt: they follow from the scene and the level's
        // index) and E, ν and the velocity from the fit carried onto them,
        // and the fit's curvature.
        let finished_levels = check.levels.len() as u32;
        let mut from_drivers = match finished_levels {
            0 => self.drivers.clone(),
            n => {
                let level = level_scene(&self.scene, n).map_err(|why| {
                    FitError::Parameterisation(format!(
                        "the discretisation check's level {n} cannot be rebuilt on resuming: {why}"
                    ))
                })?;
                DriverSet::from_scene(&level).map_err(FitError::from)?
            }
        };
        let mut from = carry_parameters(&self.scene, &self.drivers, &from_drivers, &fitted)
            .map_err(|e| FitError::Parameterisation(e.to_string()))?;
        // (A per-driver field's levels keep only its median: a resumed
        // check carries the fit's own field onto the finest level's drivers.)
        if check.youngs_statistic == YoungsStatistic::Parameters {
            from.log10_youngs = check.finest().1.to_vec();
        }
        // A resumed check's finest ν (a checkpoint of an earlier physfit
        // kept none: the fit's own then).
        if check.finest_poisson().len() == from.poisson.len() {
            from.poisson = check
                .finest_poisson()
                .iter()
                .map(|&nu| poisson_range.z_of(nu))
                .collect();
        }
        // And its finest velocity, where the levels refit it.
        if let Some(v) = check.levels.last().map(|l| &l.velocity) {
            if !v.is_empty() && v.len() == from.velocity.len() {
                from.velocity = v.clone();
            }
        }
        let mut pairs = self.state.curvature_of(StageKind::Stiffness).to_vec();
        let mut velocity_pairs = self.state.curvature_of(StageKind::Velocity).to_vec();
        let budget = self
            .scene
            .fit
            .discretisation_seconds
            .seconds(self.stage_seconds.iter().sum());
        loop {
            self.state.discretisation = Some(check.clone());
            if let Err(why) = check.next() {
                check.finish(why);
                break;
            }
            let previous = check.finest().0;
            // What is left of the budget (a resumed check's earlier levels
            // counted), and whether the next level would fit in it.
            let left = budget.map(|b| b - check.seconds());
            if let Some(left) = left {
                let predicted = check.predicted_next_seconds().unwrap_or(0.0);
                if left <= 0.0 || predicted > left {
                    log::warn!(
                        "the discretisation check stops at {previous}: the next level would take \
                         about {predicted:.0} s, and {:.0} s of `fit.discretisation_seconds` are left",
                        left.max(0.0)
                    );
                    check.finish(RefinementEnd::Budget);
                    break;
                }
            }
            let deadline = left.map(|l| Instant::now() + Duration::from_secs_f64(l));
            let index = check.levels.len() as u32 + 1;
            let level = level_scene(&self.scene, index)
                .and_then(|level| level_fits_memory(ctx, &level).map(|()| level));
            let level = match level {
                Ok(level) => level,
                Err(refusal) => {
                    log::warn!(
                        "the discretisation check stops at {previous}: the next level does not fit ({refusal})"
                    );
                    check.finish(RefinementEnd::Memory);
                    break;
                }
            };
            let drivers = DriverSet::from_scene(&level).map_err(FitError::from)?;
            let start = match carry_parameters(&self.scene, &from_drivers, &drivers, &from) {
                Ok(start) => start,
                Err(refusal) => {
                    log::warn!("the discretisation check stops at {previous}: {refusal}");
                    check.finish(RefinementEnd::Regions);
                    break;
                }
            };
            let at = scene_resolution(&level);
            // E refits alternate with the velocity's, at most `fit.rounds`
            // of E's (src/fit/discretisation_round.rs).
            let lbfgs = by_lbfgs(stage.kind, &start);
            let rounds = e_refits(&level, velocity_stage.is_some(), lbfgs);
            let cap = rounds * stage.settings.iterations
                + (rounds - 1) * velocity_stage.as_ref().map_or(0, |v| v.settings.iterations);
            let solver = match statistic {
                YoungsStatistic::Parameters => Solver::Lbfgs,
                YoungsStatistic::FreeDriverMedian => Solver::Adam,
            };
            progress.discretisation_check_started(previous, at, cap, solver);
            let run = {
                let progress = RefCell::new(&mut *progress);
                let hook = |done: &EvaluationDone| {
                    progress.borrow_mut().discretisation_evaluation_done(done)
                };
                let stages = LevelStages {
                    velocity: velocity_stage
                        .as_ref()
                        .map(|v| (v, velocity_pairs.as_slice())),
                    stiffness: (&stage, &pairs),
                };
                refit_level(
                    ctx,
                    &level,
                    &drivers,
                    &stages,
                    &start,
                    self.stop.as_ref(),
                    deadline,
                    &hook,
                )?
            };
            check.push_level(
                at,
                LevelFit {
                    log10_youngs: statistic.of(&run.params.log10_youngs, &drivers.anchored),
                    poisson: poisson_of(&run.params.poisson),
                    velocity: match velocity_stage {
                        Some(_) => run.params.velocity.clone(),
                        None => Vec::new(),
                    },
                    loss: run.loss,
                    evaluations: run.evaluations,
                    newton_steps: run.newton_steps,
                    rounds: run.rounds,
                    seconds: run.seconds,
                },
            );
            let held = at_range_end(check.finest().1, level.material.log10_youngs_range);
            (from, from_drivers, pairs) = (run.params, drivers, run.pairs);
            if velocity_stage.is_some() {
                velocity_pairs = run.velocity_pairs;
            }
            if held {
                log::warn!(
                    "the discretisation check's level at {at} ended at an end of \
                     `material.log10_youngs_range`: the frames put its optimum outside the \
                     range, so it does not count as converged"
                );
                check.mark_range_end();
            }
            if run.stopped_for_budget {
                log::warn!(
                    "the discretisation check's level at {at} was stopped when \
                     `fit.discretisation_seconds` ran out, before its refit converged"
                );
                check.mark_stopped_for_budget();
                check.finish(RefinementEnd::Budget);
                break;
            }
            self.state.discretisation = Some(check.clone());
            // Kept: a fit stopped in the next level resumes there.
            self.save_checkpoint()?;
        }
        self.state.discretisation = Some(check);
        // Kept: a fit stopped while writing its outputs does not refit.
        self.save_checkpoint()
    }
}
