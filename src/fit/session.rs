//! A fit from a scene to its outputs, as a library session: everything
//! `physfit fit` does apart from printing, progress bars and Ctrl-C, so
//! that a command line, a binding or a batch runner drive the same steps
//! (docs/design.md § Loss, parameters, fit):
//!
//! 1. [`FitSession::prepare`] refuses what cannot work before any GPU time
//!    is spent ([`super::preflight`], an earlier fit in the output
//!    directory, a checkpoint of other inputs);
//! 2. [`FitSession::open`] builds the drivers and the problem, checks the
//!    memory, holds an earlier fit's velocity for a stiffness-only fit and
//!    sets the start;
//! 3. [`FitSession::check_cameras`] renders frame 0 in every view against
//!    reference frame 0 ([`super::camera_check`]), and
//!    [`FitSession::check_truth`] simulates a twin experiment's truth on
//!    the fit's drivers ([`TruthCheck`]);
//! 4. [`FitSession::run`] runs the stages, writing a checkpoint every
//!    `fit.checkpoint_every` iterations, at every stage end and when the
//!    caller stops it (the only file it writes, with the loss log in the
//!    staging folder when the caller follows it,
//!    [`FitSession::follow_loss`]), estimates the error bars
//!    ([`super::uncertainty_estimate`]) and returns the fit's result in
//!    memory ([`FitResult`]);
//! 5. [`FitSession::write_outputs`], when the caller wants files, writes
//!    the outputs ([`super::outputs`]).
//!
//! The output directory is opened in step 1 through the one writer
//! discipline of every command ([`crate::io::output_dir`], with the fit's
//! files in [`super::output_plan`]): refused where it holds or lies inside
//! the fit's inputs, locked for this run, checked writable, before any
//! work. An earlier fit that the session is asked to replace
//! ([`EarlierFit::Replace`]) stays as it is until this fit writes its first
//! file of its own in the output directory (its first checkpoint, or its
//! outputs; a camera-check picture replaces only the earlier picture of
//! its view): every step before that may still
//! refuse or be stopped, and a refused or stopped replacement must leave
//! the earlier fit whole. Only the fit's own files, by exact name and
//! pattern, are ever removed; no folder is removed whole.

use std::path::{Path, PathBuf};

use super::camera_check::{camera_check, CameraCheck};
use super::checkpoint::{Checkpoint, FitFingerprint};
use super::evaluation::Parameters;
use super::exact_step::take_exact_step;
use super::held_velocity::held_velocity;
use super::live_loss::LiveLoss;
use super::observer::FitObserver;
use super::options::FitProblemOptions;
use super::outputs::{write_outputs, FinishedFit};
use super::params::VelocityField;
use super::plan::{plan_stages, StagePlan};
use super::preflight::FitInputs;
use super::problem::FitProblem;
use super::result::FitResult;
use super::session_error::SessionError;
use super::session_observer::{save_checkpoint, SessionObserver};
use super::stages::{run_fit, FitEnd};
use super::state::FitState;
use super::summary::FitSummary;
use super::truth_check::TruthCheck;
use super::uncertainty_estimate::estimate_uncertainty;
use crate::drive::DriverSet;
use crate::gpu::GpuContext;
use crate::io::output_dir::OutputDir;
use crate::scene::Scene;
use crate::stop::StopSignal;
use crate::synth::Truth;

pub use super::output_plan::CHECKPOINT_FILE;
pub use super::session_options::{EarlierFit, SessionOptions, TruthSource};
pub use super::session_prepare::PreparedFit;

/// How [`FitSession::run`] ended.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// Every stage ran: the fit's result, in memory. The outputs are not
    /// written yet ([`FitSession::write_outputs`], the caller's step 5).
    Finished(Box<FitResult>),
    /// The caller stopped it ([`FitSession::set_stop`] or
    /// [`Control::Stop`](super::Control::Stop)).
    Stopped {
        /// A checkpoint holds the state: false only when the fit was
        /// stopped before its first iteration, with nothing to keep.
        checkpointed: bool,
    },
}

/// A fit opened on a GPU (module doc).
pub struct FitSession {
    pub(super) scene: Scene,
    out: PathBuf,
    inputs: FitInputs,
    pub(super) drivers: DriverSet,
    problem: FitProblem,
    pub(super) plan: Vec<StagePlan>,
    pub(super) state: FitState,
    pub(super) stage_seconds: Vec<f64>,
    fingerprint: FitFingerprint,
    truth_file: Option<Truth>,
    truth: Option<TruthCheck>,
    camera: Vec<CameraCheck>,
    pub(super) stop: Option<StopSignal>,
    /// The output directory, opened and locked (module doc).
    output: OutputDir,
    /// A finished stage continued under a raised cap.
    continued: Option<ContinuedStage>,
    /// Whether [`FitSession::run`] keeps the followed loss log.
    follow: bool,
}

/// A finished stage that stopped at its cap, continued by a resume whose
/// scene raised that cap ([`FitSession::continued`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinuedStage {
    /// Its index in the plan.
    pub stage: usize,
    /// "round 1 stiffness".
    pub label: String,
    /// The cap it stopped at.
    pub cap_was: u32,
    /// The cap it continues to.
    pub cap: u32,
}

impl FitSession {
    /// Step 1 (module doc): every refusal that needs no GPU.
    pub fn prepare(scene: Scene, options: SessionOptions) -> Result<PreparedFit, SessionError> {
        PreparedFit::prepare(scene, options)
    }

    /// Step 2 (module doc). An earlier fit to replace is not touched yet
    /// ([`EarlierFit::Replace`]).
    pub fn open(ctx: &GpuContext, prepared: PreparedFit) -> Result<Self, SessionError> {
        let PreparedFit {
            scene,
            options,
            inputs,
            output,
            fingerprint,
            resumed,
            truth,
            velocity_from,
        } = prepared;
        let out = options.out;
        // Before anything is allocated (drivers, buffers): the scene's
        // estimate against the host and this context's adapter.
        crate::budget::estimate(&scene, &crate::budget::Workload::Fit)
            .check(&scene.path, &crate::budget::MachineMemory::of_context(ctx))?;
        let drivers = DriverSet::from_scene(&scene).map_err(super::FitError::from)?;
        let held_velocity = match &velocity_from {
            Some(path) => Some(held_velocity(path, &scene, &drivers)?),
            None => None,
        };
        let mut problem_options =
            FitProblemOptions::from_scene(&scene, &drivers, &scene.fit.velocity)?;
        if held_velocity.is_some() {
            problem_options.velocity = VelocityField::PerDriver;
            problem_options.velocity_regions.clear();
        }
        let problem = FitProblem::from_drivers(ctx, &scene, drivers.clone(), &problem_options)?;
        let plan = plan_stages(
            &scene,
            &inputs.views,
            inputs.frames,
            scene.fit.rounds,
            options.choice,
        );
        let mut continued = None;
        let (state, stage_seconds) = match resumed {
            Some(c) => {
                if let Some(stage) = plan.get(c.state.stage) {
                    if c.state.iteration > stage.settings.iterations {
                        return Err(SessionError::PastIterations {
                            path: out.join(CHECKPOINT_FILE),
                            stage: stage.label(),
                            iteration: c.state.iteration,
                            cap: stage.settings.iterations,
                        });
                    }
                }
                let (start, range) = (
                    scene.material.youngs_modulus.log10(),
                    scene.material.log10_youngs_range,
                );
                c.check_against(
                    &out.join(CHECKPOINT_FILE),
                    &plan,
                    problem.youngs_map().params,
                    problem.velocity_map().params,
                    problem.poisson_map().map_or(0, |m| m.params),
                    (range[0].min(start), range[1].max(start)),
                )?;
                let (mut state, mut seconds) = (c.state, c.stage_seconds);
                let before = state.tallies.clone();
                if let Some(stage) = state.continue_raised_cap(&plan) {
                    // The stage's earlier run is counted again when it ends.
                    seconds.truncate(stage);
                    continued = before.get(stage).map(|t| ContinuedStage {
                        stage,
                        label: plan[stage].label(),
                        cap_was: t.cap,
                        cap: plan[stage].settings.iterations,
                    });
                }
                (state, seconds)
            }
            None => {
                let start = Parameters {
                    log10_youngs: vec![
                        scene.material.youngs_modulus.log10();
                        problem.youngs_map().params
                    ],
                    velocity: held_velocity
                        .unwrap_or_else(|| vec![0.0; problem.velocity_map().params]),
                    poisson: problem.start_poisson(),
                };
                (FitState::start(start, &plan), Vec::new())
            }
        };
        Ok(Self {
            scene,
            out,
            inputs,
            drivers,
            problem,
            plan,
            state,
            stage_seconds,
            fingerprint,
            truth_file: truth.map(|(_, t)| t),
            truth: None,
            camera: Vec::new(),
            stop: None,
            output,
            continued,
            follow: false,
        })
    }

    /// Asks [`FitSession::run`] to keep the loss log as it runs, where
    /// it can be followed (`tail -F`) without a terminal; returns its
    /// path ([`LiveLoss`]: in the staging folder, never left behind as an
    /// output).
    pub fn follow_loss(&mut self) -> PathBuf {
        self.follow = true;
        LiveLoss::path_in(self.output.staging())
    }

    /// On a resume: the finished stage that stopped at its cap and
    /// continues because the scene raised the cap (the stages after it
    /// run again).
    pub fn continued(&self) -> Option<&ContinuedStage> {
        self.continued.as_ref()
    }

    /// True when a resumed fit has nothing left to do: every stage has
    /// finished (none continues under a raised cap) and the output
    /// directory's `fit.json` was written from this very state (its
    /// stages, with their caps, counts and seconds, are this state's), so
    /// writing the outputs again would only repeat them.
    pub fn outputs_current(&self) -> bool {
        if !self.state.done(&self.plan) {
            return false;
        }
        FitSummary::read(&self.out.join(super::output_plan::SUMMARY_FILE)).is_ok_and(|written| {
            written.stages
                == super::summary_build::stages(&self.plan, &self.state, &self.stage_seconds)
        })
    }

    /// Stops the session at its next safe point once `stop` is raised:
    /// every evaluation of the problem (the camera check, the stages, the
    /// outputs' rollout), every frame of the truth check's rollout and
    /// every compare frame is one. A stopped step
    /// returns [`SessionError::Fit`] of [`super::FitError::Stopped`]
    /// ([`SessionError::is_stop`]), or [`RunEnd::Stopped`] from
    /// [`FitSession::run`].
    pub fn set_stop(&mut self, stop: StopSignal) {
        self.problem.set_stop(stop.clone());
        self.stop = Some(stop);
    }

    fn check_stop(&self) -> Result<(), SessionError> {
        match &self.stop {
            Some(s) if s.raised() => Err(super::FitError::Stopped.into()),
            _ => Ok(()),
        }
    }

    /// The scene.
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    /// The output directory.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// The checkpoint's path.
    pub fn checkpoint_path(&self) -> PathBuf {
        self.out.join(CHECKPOINT_FILE)
    }

    /// The views and frames fitted.
    pub fn inputs(&self) -> &FitInputs {
        &self.inputs
    }

    /// The drivers.
    pub fn drivers(&self) -> &DriverSet {
        &self.drivers
    }

    /// The stages.
    pub fn plan(&self) -> &[StagePlan] {
        &self.plan
    }

    /// The fit's state.
    pub fn state(&self) -> &FitState {
        &self.state
    }

    /// The problem.
    pub fn problem(&self) -> &FitProblem {
        &self.problem
    }

    /// Step 3 (module doc): the camera check at the start parameters.
    pub fn check_cameras(&mut self, ctx: &GpuContext) -> Result<&[CameraCheck], SessionError> {
        let start = self.state.parameters();
        self.camera = camera_check(
            ctx,
            &self.scene,
            &mut self.problem,
            &start,
            &self.inputs.views,
            &mut self.output,
        )?;
        Ok(&self.camera)
    }

    /// Step 3 (module doc): the truth of a twin experiment on the fit's
    /// drivers; nothing without one. Before each frame of the truth's
    /// rollout, `progress` is told the frames simulated so far (the rest
    /// frame 0 included) and then the stop ([`FitSession::set_stop`]) is
    /// polled: a stopped check returns [`SessionError::is_stop`] and keeps
    /// nothing of the rollout.
    pub fn check_truth(
        &mut self,
        ctx: &GpuContext,
        progress: &mut dyn FnMut(usize),
    ) -> Result<(), SessionError> {
        if let Some(truth) = &self.truth_file {
            let stop = self.stop.clone();
            let mut go_on = |simulated: usize| {
                progress(simulated);
                !stop.as_ref().is_some_and(StopSignal::raised)
            };
            let check = TruthCheck::simulate(
                ctx,
                &self.scene,
                &self.drivers,
                truth,
                self.inputs.frames,
                &mut go_on,
            )
            .map_err(|e| match e {
                crate::synth::SynthError::Stopped { .. } => super::FitError::Stopped.into(),
                e => SessionError::Truth {
                    path: truth.path.clone(),
                    problem: format!("simulating the truth on the fit's drivers: {e}"),
                },
            })?;
            self.truth = Some(check);
        }
        Ok(())
    }

    /// Writes a checkpoint of the current state (first removing an earlier
    /// fit being replaced, [`EarlierFit::Replace`]).
    pub fn save_checkpoint(&mut self) -> Result<(), SessionError> {
        save_checkpoint(
            &mut self.output,
            &Checkpoint::new(
                self.fingerprint.clone(),
                self.state.clone(),
                self.stage_seconds.clone(),
            ),
        )
    }

    /// Step 4 (module doc).
    pub fn run(
        &mut self,
        ctx: &GpuContext,
        progress: &mut dyn FitObserver,
    ) -> Result<RunEnd, SessionError> {
        let mut live = match self.follow {
            true => Some(LiveLoss::start(self.output.staging(), &self.state.records)?),
            false => None,
        };
        let mut observer = SessionObserver {
            progress,
            checkpoint_every: self.scene.fit.checkpoint_every.max(1),
            output: &mut self.output,
            fingerprint: &self.fingerprint,
            stage_seconds: &mut self.stage_seconds,
            truth: self.truth.as_ref(),
            drivers: &self.drivers,
            youngs_map: self.problem.youngs_map().clone(),
            velocity_map: self.problem.velocity_map().clone(),
            poisson: self.problem.driver_poisson_map(),
            error: None,
            live: live.as_mut(),
        };
        let end = run_fit(
            ctx,
            &mut self.problem,
            &self.plan,
            &mut self.state,
            self.scene.material.log10_youngs_range,
            &mut observer,
        );
        if let Some(e) = observer.error.take() {
            return Err(e);
        }
        Ok(match end? {
            FitEnd::Stopped => {
                // Stopped inside an evaluation, the observer has not saved:
                // the state is the last complete iteration. Before the
                // first one (and not resumed) there is nothing to keep.
                let checkpointed = !self.state.records.is_empty();
                if checkpointed {
                    self.save_checkpoint()?;
                }
                RunEnd::Stopped { checkpointed }
            }
            FitEnd::Finished(_) => match self
                .estimate_uncertainty(ctx)
                .and_then(|()| self.exact_step(ctx))
                .and_then(|()| self.check_discretisation(ctx, progress))
            {
                Err(SessionError::Fit(super::FitError::Stopped)) => {
                    self.save_checkpoint()?;
                    RunEnd::Stopped { checkpointed: true }
                }
                other => {
                    other?;
                    RunEnd::Finished(Box::new(self.result()?))
                }
            },
        })
    }

    /// The error bars of the fitted values, once every stage has run
    /// ([`super::uncertainty_estimate`]; kept in the state, so that a
    /// resumed fit that had them does not estimate them again).
    fn estimate_uncertainty(&mut self, ctx: &GpuContext) -> Result<(), SessionError> {
        if self.state.uncertainty.is_none() && self.state.done(&self.plan) {
            self.state.uncertainty =
                estimate_uncertainty(ctx, &mut self.problem, &self.scene, &self.plan, &self.state)?;
        }
        Ok(())
    }

    /// The exact-gradient step ([`super::exact_step`]), once, after the
    /// error bars; kept in the state (a resumed fit does not take it
    /// again) and checkpointed.
    fn exact_step(&mut self, ctx: &GpuContext) -> Result<(), SessionError> {
        let pending = self.state.exact_step.is_none()
            && self.state.uncertainty.is_some()
            && self.state.done(&self.plan);
        if !pending {
            return Ok(());
        }
        let step = take_exact_step(
            ctx,
            &mut self.problem,
            &self.plan,
            &mut self.state,
            self.scene.material.log10_youngs_range,
        )?;
        if let Some(step) = step {
            self.state.exact_step = Some(step);
            self.save_checkpoint()?;
        }
        Ok(())
    }

    /// The fit's result at its current state (after [`FitSession::run`]
    /// finished: the fitted values), in memory.
    pub fn result(&self) -> Result<FitResult, SessionError> {
        let poisson = self.problem.driver_poisson(&self.state.poisson)?;
        FitResult::of(
            &self.scene,
            &self.plan,
            &self.state,
            &self.stage_seconds,
            (
                self.problem.youngs_map(),
                self.problem.velocity_map(),
                &poisson,
            ),
            &self.drivers,
            self.truth.as_ref(),
        )
    }

    /// Step 5 (module doc); `progress` is called after each compare frame
    /// ([`FitSession::compare_frames`] of them). The outputs are written
    /// into a hidden staging directory inside the output directory and
    /// moved into place only once all are written: stopped
    /// ([`FitSession::set_stop`]) or failed, it leaves the output directory
    /// as it was (the checkpoint, which `--resume`-style continuation turns
    /// into the outputs without another iteration).
    pub fn write_outputs(
        &mut self,
        ctx: &GpuContext,
        progress: &mut dyn FnMut(),
    ) -> Result<FitSummary, SessionError> {
        self.check_stop()?;
        self.output.clear_staging()?;
        let staging = self.output.staging().to_path_buf();
        let written = self.write_outputs_into(ctx, &staging, progress);
        // Only now, with every output written, may an earlier fit being
        // replaced go (when no checkpoint has removed it already); the
        // commit moves fit.json last: once it is there, the outputs are
        // whole.
        let moved = written.and_then(|summary| {
            self.output.commit()?;
            Ok(summary)
        });
        if moved.is_err() {
            let _ = self.output.clear_staging();
        }
        moved
    }

    fn write_outputs_into(
        &mut self,
        ctx: &GpuContext,
        dir: &Path,
        progress: &mut dyn FnMut(),
    ) -> Result<FitSummary, SessionError> {
        let stop = self.stop.clone();
        let mut frame_done = || {
            progress();
            match &stop {
                Some(s) if s.raised() => Err(SessionError::from(super::FitError::Stopped)),
                _ => Ok(()),
            }
        };
        let fit = FinishedFit {
            scene: &self.scene,
            inputs: &self.inputs,
            plan: &self.plan,
            state: &self.state,
            stage_seconds: &self.stage_seconds,
            camera_check: &self.camera,
            truth: self.truth.as_ref(),
            settings: &self.fingerprint,
        };
        write_outputs(ctx, &mut self.problem, &fit, dir, &mut frame_done)
    }

    /// How many compare frames the outputs write.
    pub fn compare_frames(&self) -> usize {
        self.inputs.frames * self.inputs.views.len()
    }
}
