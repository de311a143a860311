//! The twin experiment's forward run (DESIGN.md § Verification 5; issue 13,
//! "No inverse crime"): the scene simulated from the truth's `log10 E` and
//! initial velocity, one rollout rendered in every view.
//!
//! A fit that is handed frames made by its own discretisation can recover
//! the truth exactly for the wrong reason (the "inverse crime"). So by
//! default [`SynthPlan`] simulates finer than a fit of the scene would:
//! twice the scene's `drivers.count` (capped at the points K-Means runs
//! over: the simulated splats plus the fill points) and twice its substeps.
//! `same_discretisation` keeps the scene's own (fast tests, or a deliberate
//! inverse-crime check).
//!
//! The run goes through the fit's own problem ([`FitProblem`] with
//! per-driver fields) on a modified clone of the scene: its views' `frames`
//! are dropped, so nothing is read from an output about to be written. Its
//! simulator checks the time step at the top of
//! `material.log10_youngs_range` (doubling the substeps only halves the
//! step), and the truth never exceeds that top ([`super::truth`]), so the
//! truth's run is inside the stability bound. A rollout that produces NaN
//! or leaves the box fails with the frame it happened at.

use super::error::SynthError;
use super::truth::{Truth, TruthValues};
use crate::fit::{FitProblem, FitProblemOptions, Parameters};
use crate::gpu::GpuContext;
use crate::mpm::Rollout;
use crate::scene::frames::Frame;
use crate::scene::Scene;

/// How `physfit synth` discretises and how many frames it writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SynthOptions {
    /// Frames, the rest frame 0 included (default: the truth file's).
    pub frames: Option<usize>,
    /// Simulate with the scene's own drivers and substeps (module doc).
    pub same_discretisation: bool,
}

/// What a synth run simulates (module doc).
#[derive(Clone, Debug)]
pub struct SynthPlan {
    /// The scene as simulated: finer drivers and substeps unless
    /// [`SynthOptions::same_discretisation`], and no reference frames.
    pub scene: Scene,
    /// Frames, the rest frame 0 included (≥ 2).
    pub frames: usize,
    /// The scene's own driver count (what a fit uses).
    pub scene_drivers: usize,
    /// The scene's own substeps per frame.
    pub scene_substeps: u32,
}

impl SynthPlan {
    /// The plan for `scene` and `truth` (module doc).
    pub fn new(scene: &Scene, truth: &Truth, options: &SynthOptions) -> Result<Self, SynthError> {
        let frames = options.frames.unwrap_or(truth.frames);
        if frames < 2 {
            return Err(SynthError::TooFewFrames { frames });
        }
        let mut finer = scene.clone();
        for view in &mut finer.views {
            view.frames = None;
        }
        if !options.same_discretisation {
            let points = scene.simulated.iter().filter(|s| **s).count() + scene.drivers.fill_points;
            finer.drivers.count = (2 * scene.drivers.count).min(points);
            finer.simulation.substeps = 2 * scene.simulation.substeps;
        }
        Ok(Self {
            scene: finer,
            frames,
            scene_drivers: scene.drivers.count,
            scene_substeps: scene.simulation.substeps,
        })
    }

    /// Drivers (MPM particles) simulated.
    pub fn drivers(&self) -> usize {
        self.scene.drivers.count
    }

    /// Substeps per frame simulated.
    pub fn substeps(&self) -> u32 {
        self.scene.simulation.substeps
    }
}

/// The truth simulated: its rollout, ready to be rendered in any view.
pub struct Synthesis {
    problem: FitProblem,
    rollout: Rollout,
    truth: TruthValues,
}

impl Synthesis {
    /// Builds the plan's drivers and simulator and runs the truth's rollout
    /// through the last frame (module doc).
    pub fn simulate(ctx: &GpuContext, plan: &SynthPlan, truth: &Truth) -> Result<Self, SynthError> {
        let options = FitProblemOptions::per_driver(&plan.scene.fit.velocity);
        let mut problem = FitProblem::new(ctx, &plan.scene, &options)?;
        let values = truth.per_driver(problem.drivers());
        let params = Parameters {
            log10_youngs: values.log10_youngs.clone(),
            velocity: values.velocity.clone(),
        };
        let rollout = problem.forward_states(ctx, &params, plan.frames - 1)?;
        Ok(Self {
            problem,
            rollout,
            truth: values,
        })
    }

    /// Frames simulated, the rest frame 0 included.
    pub fn frames(&self) -> usize {
        self.rollout.frames.len()
    }

    /// The truth on the simulated drivers.
    pub fn truth(&self) -> &TruthValues {
        &self.truth
    }

    /// The problem simulated (its drivers and simulator).
    pub fn problem(&self) -> &FitProblem {
        &self.problem
    }

    /// Frame `frame` rendered in view `view` (RGBA in [0, 1], alpha the
    /// coverage; the background already composited).
    pub fn render(
        &mut self,
        ctx: &GpuContext,
        view: usize,
        frame: usize,
    ) -> Result<Frame, SynthError> {
        let state = self
            .rollout
            .frames
            .get(frame)
            .ok_or(SynthError::NoSuchFrame {
                frame,
                frames: self.rollout.frames.len(),
            })?;
        Ok(self.problem.render_state(ctx, state, view)?)
    }
}
