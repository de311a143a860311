//! The twin experiment's forward run (docs/design.md § Verification 5): the
//! scene simulated from the truth's `log10 E` and initial velocity, one
//! rollout rendered in every view.
//!
//! A fit that is handed frames made by its own discretisation can recover
//! the truth exactly for the wrong reason (the "inverse crime"). So by
//! default [`SynthPlan`] simulates finer than a fit of the scene would:
//! twice the scene's `drivers.count` (capped at the points K-Means runs
//! over: the simulated splats plus the fill points) and twice its substeps.
//! `same_discretisation` keeps the scene's own (fast tests, or a deliberate
//! inverse-crime check).
//!
//! The run goes through the one forward path ([`SceneRenderer`]) on a
//! modified clone of the scene: its views' `frames` are dropped, so nothing
//! is read from an output about to be written. The time step is checked
//! for the truth's largest E, which never exceeds the top of
//! `material.log10_youngs_range` ([`super::truth`]; doubling the substeps
//! only halves the step). A rollout that produces NaN or leaves the box
//! fails with the frame it happened at. Between frames the caller may stop
//! the rollout ([`simulate_truth`]'s `go_on`), which then ends with
//! [`SynthError::Stopped`] and keeps nothing.

use super::error::SynthError;
use super::truth::{Truth, TruthValues};
use crate::drive::DriverSet;
use crate::forward::{ForwardSetup, SceneRenderer};
use crate::gpu::GpuContext;
use crate::interact::Interactions;
use crate::io::Frame;
use crate::scene::{Camera, Scene};

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
    renderer: SceneRenderer,
    cameras: Vec<Camera>,
    drivers: DriverSet,
    truth: TruthValues,
}

impl Synthesis {
    /// Builds the plan's drivers and runs the truth's rollout through the
    /// last frame (module doc).
    pub fn simulate(ctx: &GpuContext, plan: &SynthPlan, truth: &Truth) -> Result<Self, SynthError> {
        Self::simulate_until(ctx, plan, truth, &mut |_| true)
    }

    /// [`Synthesis::simulate`], asking `go_on` before each frame as
    /// [`simulate_truth`] does: `false` stops there with
    /// [`SynthError::Stopped`] (a SIGINT or SIGTERM between frames).
    pub fn simulate_until(
        ctx: &GpuContext,
        plan: &SynthPlan,
        truth: &Truth,
        go_on: &mut dyn FnMut(usize) -> bool,
    ) -> Result<Self, SynthError> {
        let drivers = DriverSet::from_scene(&plan.scene)?;
        let (renderer, values) =
            simulate_truth(ctx, &plan.scene, &drivers, truth, plan.frames, go_on)?;
        Ok(Self {
            renderer,
            cameras: plan.scene.views.iter().map(|v| v.camera.clone()).collect(),
            drivers,
            truth: values,
        })
    }

    /// Frames simulated, the rest frame 0 included.
    pub fn frames(&self) -> usize {
        self.renderer.frames()
    }

    /// The truth on the simulated drivers.
    pub fn truth(&self) -> &TruthValues {
        &self.truth
    }

    /// The drivers simulated.
    pub fn drivers(&self) -> &DriverSet {
        &self.drivers
    }

    /// Frame `frame` rendered in view `view` (RGBA in [0, 1], alpha the
    /// coverage; the background already composited).
    pub fn render(
        &mut self,
        ctx: &GpuContext,
        view: usize,
        frame: usize,
    ) -> Result<Frame, SynthError> {
        if frame >= self.frames() {
            return Err(SynthError::NoSuchFrame {
                frame,
                frames: self.frames(),
            });
        }
        let camera = self.cameras.get(view).ok_or(SynthError::NoSuchView {
            view,
            views: self.cameras.len(),
        })?;
        Ok(self.renderer.render_frame(ctx, frame, camera)?)
    }
}

/// `truth` on `drivers` of `scene`, simulated through frame `frames − 1`
/// on the one forward path: the renderer holding the rollout, and the
/// truth's per-driver values. Shared by `synth` and the fit's truth check.
///
/// Before each frame is simulated, `go_on` is called with the frames
/// simulated so far (1 after the rest frame 0): `false` stops the rollout
/// there with [`SynthError::Stopped`], so that a caller can honour a stop
/// between frames rather than only once the whole rollout is done.
pub fn simulate_truth(
    ctx: &GpuContext,
    scene: &Scene,
    drivers: &DriverSet,
    truth: &Truth,
    frames: usize,
    go_on: &mut dyn FnMut(usize) -> bool,
) -> Result<(SceneRenderer, TruthValues), SynthError> {
    let values = truth.per_driver(drivers);
    let velocity: Vec<[f64; 3]> = values
        .velocity
        .chunks_exact(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    let gradient: Vec<[[f64; 3]; 3]> = values
        .velocity_gradient
        .chunks_exact(9)
        .map(|g| std::array::from_fn(|a| std::array::from_fn(|b| g[3 * a + b])))
        .collect();
    let setup = ForwardSetup::from_drivers(
        scene,
        drivers,
        values.log10_youngs.clone(),
        &velocity,
        &Interactions::default(),
    )?
    .with_velocity_gradient(&gradient)?;
    let setup = match values.poisson_ratio {
        Some(nu) => setup.with_poisson(vec![nu; drivers.len()])?,
        None => setup,
    };
    let mut renderer = SceneRenderer::simulated(ctx, &setup, scene.gaussians(), scene.background)?;
    while renderer.frames() < frames {
        if !go_on(renderer.frames()) {
            return Err(SynthError::Stopped {
                simulated: renderer.frames(),
                frames,
            });
        }
        renderer.step(ctx)?;
    }
    Ok((renderer, values))
}
