//! The fit problem: one call from parameters to loss and gradient (docs/design.md
//! § Loss, parameters, fit; § Drivers and the deformation of Gaussians).
//!
//! [`FitProblem::new`] builds, once per scene: the K-Means drivers
//! ([`DriverSet`]; or [`FitProblem::from_drivers`] takes them built, as
//! the fit does, which resolves the scene's `field` settings over them
//! first: [`FitProblemOptions::from_scene`]), the forward path over them
//! ([`SceneRenderer`]: the MPM simulator, time step checked for the top of
//! `material.log10_youngs_range`; the deformation of the free Gaussians;
//! the rasterizer), the image loss, every view's reference
//! frames uploaded as 8-bit RGBA, the backward pass's reusable buffers and
//! the GPU transposes of the two parameterisations ([`super::params`]).
//!
//! [`FitProblem::evaluate`] then, per call:
//! 1. maps the parameters to `log10 E` and `v0` per driver (host, a few KB
//!    uploaded), sets `E = 10^p` and runs one rollout from frame 0 through
//!    the last selected frame;
//! 2. per selected frame k (one frame's render state at a time): moves the
//!    splats to the drivers of state k; per selected view renders, applies
//!    the view's colour correction (`views[i].color_correction`; skipped
//!    for the identity, [`ColorCorrect`]), evaluates the loss (seeding
//!    `∂L/∂pixel`), back-propagates through the correction, the rasterizer
//!    and the deformation, which adds `∂L/∂x` of the drivers into frame k's
//!    state-gradient buffer;
//! 3. runs one MPM backward over all frames, [`GradientFlow::Full`] (stage
//!    1: through the whole rollout) or [`GradientFlow::Truncated`] (stage 2:
//!    frame k's gradient through frame k's substeps only, the state at k−1
//!    a constant);
//! 4. maps `∂L/∂E` per driver to `∂L/∂p` (`∂L/∂E · E · ln 10`) and the `v`
//!    part of `∂L/∂state0` (normalised units) to world units/s (`/ side`),
//!    both through `Mᵀ` on the GPU, with the TV gradient added.
//!
//! Reads back: the loss terms (one small buffer, once per call), the
//! rasterizer's intersection count per render and the rollout's per-frame
//! health word: scalars only, never a state or an image.
//!
//! TV of `log10 E` over the driver graph runs on the host
//! ([`crate::loss::tv`]): the parameters are given on the host, so the
//! per-driver `log10 E` is already there and nothing is read back for it;
//! its gradient (mapped by `Mᵀ`, a few KB) is uploaded and added by the
//! gather kernel.
//! The optional smoothness term on the initial velocity
//! ([`FitProblemOptions::velocity_tv_weight`], default 0: off) is handled
//! the same way: TV of the per-driver `v0` in world units/s (anchored
//! drivers at 0) over the same graph ([`crate::loss::tv_vector`], ε =
//! [`TV_EPSILON`]), reported as [`LossReport::velocity_tv`] whatever its
//! weight, and with a weight added to the loss and, mapped by the velocity
//! map's `Mᵀ`, to the v0 gradient through the gather kernel's init buffer
//! (at weight 0 it holds zeros).
//!
//! One problem serves both stages of a fit: [`FitProblem::set_stage`]
//! switches the image-loss weights and the two smoothness weights to a
//! stage's (the stages alternate, with different weights).
//!
//! Profiling ([`FitProblem::set_profile`], for `physfit bench fit`):
//! [`super::profile`].
//!
//! Memory: the rollout's frame states (96 bytes per driver per frame), one
//! state-gradient buffer per selected frame, the backward pass's
//! checkpoints ([`BackwardWork`], reused), one frame's render and loss
//! workspace (reused), and the reference frames (4 bytes per pixel each,
//! 1 more for a view with loss masks, `views[i].masks`: each frame carries
//! its mask into the loss, [`ReferenceFrame::with_mask`]).

use super::error::FitError;
use super::evaluation::{Evaluation, ImageTerms, LossReport, Parameters, Selection};
use super::options::FitProblemOptions;
use super::param_gather::{GatherBuffers, GatherPlan, ParamGather, SourceLayout};
use super::params::ParamMap;
use super::profile::{FitTimings, Profiler, TimedPart};
use crate::deform::DRIVERS_PER_GAUSSIAN;
use crate::drive::DriverSet;
use crate::forward::{ForwardSetup, SceneRenderer};
use crate::gpu::{GpuBuffer, GpuContext};
use crate::interact::Interactions;
use crate::loss::{
    tv_scalar, tv_vector, ColorCorrect, ImageLoss, LossTerms, LossTermsBuffer, LossWeights,
    ReferenceFrame, ReferenceMask, RenderedImage, TV_EPSILON,
};
use crate::mpm::layout::STATE_STRIDE;
use crate::mpm::{
    BackwardOptions, BackwardWork, FrameGradient, GradientFlow, MpmSimulator, ParticleState,
    Rollout,
};
use crate::scene::frames::Frame;
use crate::scene::{Camera, ColorCorrection, FitStage, Scene};

/// Per-driver parameters of one call, on the host (for the TV terms).
struct Prepared {
    log10: Vec<f64>,
    /// World units/s, 3 per driver.
    velocity: Vec<f64>,
}

/// The gradients of the TV terms w.r.t. the per-driver values (unweighted).
struct TvGradients {
    log10: Vec<f64>,
    velocity: Vec<f64>,
}

/// A scene's fit problem, built once (module doc).
pub struct FitProblem {
    drivers: DriverSet,
    forward: SceneRenderer,
    loss: ImageLoss,
    /// The views' colour corrections, applied between render and loss.
    color: ColorCorrect,
    corrections: Vec<ColorCorrection>,
    cameras: Vec<Camera>,
    view_names: Vec<String>,
    references: Vec<Option<Vec<ReferenceFrame>>>,
    work: BackwardWork,
    youngs_map: ParamMap,
    velocity_map: ParamMap,
    youngs_plan: GatherPlan,
    velocity_plan: GatherPlan,
    gather: ParamGather,
    youngs_scale: GpuBuffer,
    youngs_init: GpuBuffer,
    velocity_init: GpuBuffer,
    state_grads: Vec<GpuBuffer>,
    log10_max: f64,
    tv_weight: f64,
    profiler: Profiler,
    velocity_tv_weight: f64,
    /// Polled before each rollout ([`FitProblem::set_stop`]).
    stop: Option<crate::stop::StopSignal>,
}

impl FitProblem {
    /// Builds the problem of `scene` (module doc): drivers, simulator,
    /// deformation, rasterizer, loss, reference frames and their masks
    /// (read and uploaded once), parameter maps.
    pub fn new(
        ctx: &GpuContext,
        scene: &Scene,
        options: &FitProblemOptions,
    ) -> Result<Self, FitError> {
        Self::from_drivers(ctx, scene, DriverSet::from_scene(scene)?, options)
    }

    /// [`FitProblem::new`] over drivers already built from `scene` (the
    /// fit builds them once, resolves the fields over them with
    /// [`FitProblemOptions::from_scene`], then builds the problem).
    pub fn from_drivers(
        ctx: &GpuContext,
        scene: &Scene,
        drivers: DriverSet,
        options: &FitProblemOptions,
    ) -> Result<Self, FitError> {
        if drivers.k != DRIVERS_PER_GAUSSIAN {
            return Err(FitError::NeighbourCount {
                k: drivers.k,
                needed: DRIVERS_PER_GAUSSIAN,
            });
        }
        let n = drivers.len();
        let log10_max = scene.material.log10_youngs_range[1];
        // The forward path at the start E, checked for the top of the range:
        // every call sets E anew (`prepare`).
        let setup = ForwardSetup::from_drivers(
            scene,
            &drivers,
            vec![scene.material.youngs_modulus.log10(); n],
            &vec![[0.0; 3]; n],
            &Interactions::default(),
        )?
        .bounded_by(10f64.powf(log10_max))?;
        let forward = SceneRenderer::simulated(ctx, &setup, scene.gaussians(), scene.background)?;
        let mut references = Vec::with_capacity(scene.views.len());
        for (v, view) in scene.views.iter().enumerate() {
            references.push(match &view.frames {
                Some(set) => {
                    let mut frames = Vec::with_capacity(set.len());
                    for k in 0..set.len() {
                        let frame = set.load(k)?;
                        let mut reference = ReferenceFrame::upload(
                            ctx,
                            &format!("reference view {v} frame {k}"),
                            &frame,
                        )?;
                        // The scene checked one mask per frame (views[i].masks).
                        if let Some(masks) = &view.masks {
                            let mask = ReferenceMask::upload(
                                ctx,
                                &format!("reference view {v} mask {k}"),
                                &masks.load_mask(k)?,
                            )?;
                            reference = reference.with_mask(mask)?;
                        }
                        frames.push(reference);
                    }
                    Some(frames)
                }
                None => None,
            });
        }
        let side = drivers.sim_box.side;
        let youngs_map = ParamMap::youngs(&options.youngs, n)?;
        let velocity_map =
            ParamMap::velocity(&options.velocity, &drivers.rest, &drivers.anchored, side)?;
        let youngs_plan = GatherPlan::new(
            ctx,
            "log10 E",
            &youngs_map,
            SourceLayout {
                stride: 1,
                offset: 0,
                factor: std::f64::consts::LN_10,
                scaled: true,
            },
        )?;
        let velocity_plan = GatherPlan::new(
            ctx,
            "v0",
            &velocity_map,
            SourceLayout {
                stride: STATE_STRIDE as u32,
                offset: 3,
                factor: 1.0 / side,
                scaled: false,
            },
        )?;
        Ok(Self {
            youngs_scale: ctx.storage_zeroed::<f32>("fit E per driver", n.max(1))?,
            youngs_init: ctx.storage_zeroed::<f32>("fit TV gradient", youngs_map.params.max(1))?,
            velocity_init: ctx
                .storage_zeroed::<f32>("fit v0 gradient init", velocity_map.params.max(1))?,
            gather: ParamGather::new(ctx)?,
            loss: ImageLoss::new(ctx, options.weights)?,
            color: ColorCorrect::new(ctx)?,
            corrections: scene.views.iter().map(|v| v.color_correction).collect(),
            cameras: scene.views.iter().map(|v| v.camera.clone()).collect(),
            view_names: scene.views.iter().map(|v| v.name.clone()).collect(),
            work: BackwardWork::new(),
            state_grads: Vec::new(),
            tv_weight: options.tv_weight,
            profiler: Profiler::off(),
            velocity_tv_weight: options.velocity_tv_weight,
            stop: None,
            drivers,
            forward,
            references,
            youngs_map,
            velocity_map,
            youngs_plan,
            velocity_plan,
            log10_max,
        })
    }

    /// Switches the image-loss weights, the TV weight on `log10 E` and the
    /// velocity smoothness weight to `stage`'s (module doc); the fields
    /// stay. Takes effect from the next call.
    ///
    /// Errors: [`FitError::Loss`] for invalid image-loss weights (nothing
    /// changes).
    pub fn set_stage(&mut self, stage: &FitStage) -> Result<(), FitError> {
        self.loss.set_weights(LossWeights {
            l1: stage.w_l1 as f32,
            ssim: stage.w_ssim as f32,
        })?;
        self.tv_weight = stage.tv_weight;
        self.velocity_tv_weight = stage.velocity_tv_weight;
        Ok(())
    }

    /// Turns profiling on or off (module doc): while on, every stage of
    /// [`FitProblem::evaluate`], [`FitProblem::loss`] and
    /// [`FitProblem::truncated_loss`] is waited for and
    /// timed. Off by default; costs nothing when off.
    pub fn set_profile(&mut self, on: bool) {
        self.profiler.on = on;
    }

    /// The stage times summed since the last call (zero when not
    /// profiling), and restarts them.
    pub fn take_timings(&mut self) -> FitTimings {
        std::mem::take(&mut self.profiler.timings)
    }

    /// The drivers (rest positions, anchored flags, graph).
    pub fn drivers(&self) -> &DriverSet {
        &self.drivers
    }

    /// The `log10 E` parameterisation.
    pub fn youngs_map(&self) -> &ParamMap {
        &self.youngs_map
    }

    /// The initial-velocity parameterisation.
    pub fn velocity_map(&self) -> &ParamMap {
        &self.velocity_map
    }

    /// The simulator (its configuration, particle count).
    pub fn simulator(&self) -> &MpmSimulator {
        self.forward
            .simulator()
            .expect("a fit problem's forward path simulates")
    }

    /// Checks `selection` against the scene's views and reference frames.
    pub fn check_selection(&self, selection: &Selection) -> Result<(), FitError> {
        if selection.frames.is_empty() {
            return Err(FitError::EmptySelection("frames"));
        }
        if selection.views.is_empty() {
            return Err(FitError::EmptySelection("views"));
        }
        if selection.frames.windows(2).any(|w| w[0] >= w[1]) {
            return Err(FitError::UnsortedFrames(selection.frames.clone()));
        }
        let last = *selection.frames.last().unwrap();
        for &view in &selection.views {
            let Some(refs) = self.references.get(view) else {
                return Err(FitError::NoSuchView {
                    view,
                    views: self.references.len(),
                });
            };
            let Some(refs) = refs else {
                return Err(FitError::NoFrames {
                    view,
                    name: self.view_names[view].clone(),
                });
            };
            if last >= refs.len() {
                return Err(FitError::FrameOutOfRange {
                    frame: last,
                    view,
                    name: self.view_names[view].clone(),
                    available: refs.len(),
                });
            }
        }
        Ok(())
    }

    /// Per-driver `log10 E` of `params`, checked against the range top.
    fn driver_log10_youngs(&self, params: &Parameters) -> Result<Vec<f64>, FitError> {
        let p = self.youngs_map.apply(&params.log10_youngs)?;
        if let Some(d) = p.iter().position(|&v| v > self.log10_max) {
            return Err(FitError::YoungsAboveRange {
                driver: d,
                value: p[d],
                max: self.log10_max,
            });
        }
        Ok(p)
    }

    /// Sets E from `params` and returns the per-driver `log10 E` and `v0`
    /// (world units/s) and the initial state (host).
    /// Makes every later evaluation, loss and rollout return
    /// [`FitError::Stopped`] once `stop` is raised: the problem's calls are
    /// the fit's safe points, since nothing of the fit's state changes
    /// inside them.
    pub fn set_stop(&mut self, stop: crate::stop::StopSignal) {
        self.stop = Some(stop);
    }

    /// [`FitError::Stopped`] when a stop was asked.
    fn check_stop(&self) -> Result<(), FitError> {
        match &self.stop {
            Some(s) if s.raised() => Err(FitError::Stopped),
            _ => Ok(()),
        }
    }

    fn prepare(
        &self,
        ctx: &GpuContext,
        params: &Parameters,
    ) -> Result<(Prepared, ParticleState), FitError> {
        self.check_stop()?;
        let log10 = self.driver_log10_youngs(params)?;
        let v = self.velocity_map.apply(&params.velocity)?;
        self.prepare_drivers(ctx, log10, v)
    }

    /// [`FitProblem::prepare`] from per-driver values: `log10 E`
    /// (normalised units) and `v0` (3 per driver, world units/s).
    fn prepare_drivers(
        &self,
        ctx: &GpuContext,
        log10: Vec<f64>,
        v: Vec<f64>,
    ) -> Result<(Prepared, ParticleState), FitError> {
        let n = self.drivers.len();
        if log10.len() != n || v.len() != 3 * n {
            return Err(FitError::Parameterisation(format!(
                "{} log10 E values and {} velocity components for {n} drivers",
                log10.len(),
                v.len()
            )));
        }
        let youngs: Vec<f32> = log10.iter().map(|&p| 10f64.powf(p) as f32).collect();
        self.simulator().set_youngs(ctx, &youngs)?;
        ctx.write(&self.youngs_scale, &youngs);
        let side = self.drivers.sim_box.side;
        let velocities = v
            .chunks_exact(3)
            .map(|c| {
                [
                    (c[0] / side) as f32,
                    (c[1] / side) as f32,
                    (c[2] / side) as f32,
                ]
            })
            .collect();
        Ok((
            Prepared { log10, velocity: v },
            ParticleState::at_rest(self.drivers.rest.clone(), velocities),
        ))
    }

    /// Runs the forward simulation of `params` through frame `last`: the
    /// frame states a stage-2 objective holds constant (see
    /// [`FitProblem::truncated_loss`]).
    pub fn forward_states(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        last: usize,
    ) -> Result<Rollout, FitError> {
        let (_, start) = self.prepare(ctx, params)?;
        Ok(self.simulator().rollout(ctx, &start, last as u32)?)
    }

    /// Renders frames `0..=last` of `params` in view `view` and reads them
    /// back (RGBA in [0, 1]): for synthetic reference frames (the twin
    /// experiment, docs/design.md § Verification 5) and reports. Not part of a
    /// fit iteration, which reads back no image.
    pub fn render_frames(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        view: usize,
        last: usize,
    ) -> Result<Vec<Frame>, FitError> {
        self.check_view(view)?;
        let rollout = self.forward_states(ctx, params, last)?;
        rollout
            .frames
            .iter()
            .map(|state| self.render_state(ctx, state, view))
            .collect()
    }

    /// Renders the drivers in `state` (a frame of a [`Rollout`] of this
    /// problem, e.g. from [`FitProblem::forward_states`]) in view `view`
    /// and reads the image back (RGBA in [0, 1], alpha the coverage): one
    /// rollout rendered in every view, as `physfit synth` does, instead of
    /// one rollout per view ([`FitProblem::render_frames`]).
    pub fn render_state(
        &mut self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        view: usize,
    ) -> Result<Frame, FitError> {
        self.check_view(view)?;
        self.forward.pose_state(ctx, state)?;
        Ok(self.forward.render(ctx, &self.cameras[view])?)
    }

    /// [`FitProblem::render_state`] as the loss compares it with view
    /// `view`'s frames: with the view's colour correction applied
    /// ([`ColorCorrection::apply_to_frame`]; the render itself for the
    /// identity). For the pictures beside the video (the camera check,
    /// `compare/`); `synth` renders with [`FitProblem::render_state`].
    pub fn render_state_corrected(
        &mut self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        view: usize,
    ) -> Result<Frame, FitError> {
        let frame = self.render_state(ctx, state, view)?;
        Ok(self.corrections[view].apply_to_frame(frame))
    }

    /// Fails unless the scene has view `view`.
    fn check_view(&self, view: usize) -> Result<(), FitError> {
        if view >= self.cameras.len() {
            return Err(FitError::NoSuchView {
                view,
                views: self.cameras.len(),
            });
        }
        Ok(())
    }

    /// Renders frame `frame` (drivers in `state`) in every selected view
    /// into slots `slot0..` of `terms`; with `state_grad`, back-propagates
    /// each view's loss into it. Returns the intersections rendered.
    #[allow(clippy::too_many_arguments)]
    fn frame(
        &mut self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        frame: usize,
        views: &[usize],
        terms: &LossTermsBuffer,
        slot0: u32,
        state_grad: Option<&GpuBuffer>,
    ) -> Result<u64, FitError> {
        if let Some(g) = state_grad {
            let mut encoder = crate::gpu::encoder(ctx, "fit clear state gradient");
            encoder.clear_buffer(g.raw(), 0, None);
            ctx.queue.submit([encoder.finish()]);
        }
        self.forward.pose_state(ctx, state)?;
        self.profiler.lap(ctx, TimedPart::Deformation)?;
        let mut intersections = 0u64;
        for (i, &view) in views.iter().enumerate() {
            let out = self.forward.draw(ctx, &self.cameras[view])?;
            self.profiler.lap(ctx, TimedPart::RenderForward)?;
            intersections += u64::from(out.intersection_count);
            let reference = &self.references[view].as_ref().expect("checked selection")[frame];
            let parts = self.forward.parts_mut()?;
            let render = RenderedImage::of_render(parts.raster, &out)?;
            let slot = slot0 + i as u32;
            // The identity is skipped, so an uncorrected view scores bit for
            // bit as before colour corrections existed.
            let correction = self.corrections[view];
            let corrected = !correction.is_identity();
            match state_grad {
                None => {
                    if corrected {
                        let image = self.color.apply(ctx, render, correction)?;
                        self.loss.measure(ctx, image, reference, terms, slot)?;
                    } else {
                        self.loss.measure(ctx, render, reference, terms, slot)?;
                    }
                    self.profiler.lap(ctx, TimedPart::Loss)?;
                }
                Some(g) => {
                    let grad_image = if corrected {
                        let image = self.color.apply(ctx, render, correction)?;
                        let grad = self.loss.evaluate(ctx, image, reference, terms, slot)?;
                        self.color.backward(ctx, render, grad, correction)?
                    } else {
                        self.loss.evaluate(ctx, render, reference, terms, slot)?
                    };
                    self.profiler.lap(ctx, TimedPart::Loss)?;
                    let back = parts.raster.backward(ctx, parts.splats, &out, grad_image)?;
                    self.profiler.lap(ctx, TimedPart::RenderBackward)?;
                    let mut encoder = crate::gpu::encoder(ctx, "fit deform backward");
                    parts.deformation.encode_backward(
                        ctx,
                        &mut encoder,
                        state,
                        back.gradients,
                        g,
                    )?;
                    ctx.queue.submit([encoder.finish()]);
                    self.profiler.lap(ctx, TimedPart::Deformation)?;
                }
            }
        }
        Ok(intersections)
    }

    /// Reads the terms buffer and sums the report.
    fn report(
        &self,
        ctx: &GpuContext,
        selection: &Selection,
        terms: &LossTermsBuffer,
        prepared: &Prepared,
        intersections: u64,
    ) -> Result<(LossReport, TvGradients), FitError> {
        let slots: Vec<LossTerms> = ctx.read_buffer(terms.buffer())?;
        let mut images = Vec::new();
        let (mut image, mut l1, mut dssim) = (0.0, 0.0, 0.0);
        for (f, &frame) in selection.frames.iter().enumerate() {
            for (v, &view) in selection.views.iter().enumerate() {
                let t = slots[f * selection.views.len() + v];
                image += f64::from(t.loss);
                l1 += f64::from(t.l1);
                dssim += f64::from(t.dssim);
                images.push(ImageTerms {
                    frame,
                    view,
                    terms: t,
                });
            }
        }
        let tv = tv_scalar(&prepared.log10, &self.drivers.graph, TV_EPSILON)?;
        let v: Vec<[f64; 3]> = prepared
            .velocity
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        let velocity_tv = tv_vector(&v, &self.drivers.graph, TV_EPSILON)?;
        Ok((
            LossReport {
                loss: image
                    + self.tv_weight * tv.value
                    + self.velocity_tv_weight * velocity_tv.value,
                image,
                l1,
                dssim,
                tv: tv.value,
                velocity_tv: velocity_tv.value,
                images,
                intersections,
            },
            TvGradients {
                log10: tv.gradient,
                velocity: velocity_tv.gradient.into_iter().flatten().collect(),
            },
        ))
    }

    fn terms_buffer(
        &self,
        ctx: &GpuContext,
        selection: &Selection,
    ) -> Result<LossTermsBuffer, FitError> {
        Ok(LossTermsBuffer::new(
            ctx,
            "fit loss terms",
            (selection.frames.len() * selection.views.len()) as u32,
        )?)
    }

    /// The loss of `params` on `selection` without gradients (one rollout
    /// from frame 0, renders, loss terms): for line searches, reports and
    /// finite differences.
    pub fn loss(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        selection: &Selection,
    ) -> Result<LossReport, FitError> {
        self.check_selection(selection)?;
        self.profiler.start();
        let (prepared, start) = self.prepare(ctx, params)?;
        self.loss_from(ctx, &prepared, &start, selection)
    }

    /// One rollout from `start` through the last selected frame, rendered
    /// and scored (shared by [`FitProblem::loss`] and
    /// [`FitProblem::loss_of_drivers`]).
    fn loss_from(
        &mut self,
        ctx: &GpuContext,
        prepared: &Prepared,
        start: &ParticleState,
        selection: &Selection,
    ) -> Result<LossReport, FitError> {
        let last = *selection.frames.last().unwrap();
        let rollout = self.simulator().rollout(ctx, start, last as u32)?;
        let terms = self.terms_buffer(ctx, selection)?;
        self.profiler.lap(ctx, TimedPart::MpmForward)?;
        let states: Vec<&GpuBuffer> = selection
            .frames
            .iter()
            .map(|&k| &rollout.frames[k])
            .collect();
        self.report_frames(ctx, selection, &terms, prepared, &states)
    }

    /// [`FitProblem::loss`] of per-driver values rather than parameters:
    /// `log10_youngs` one per driver (normalised units), `velocity` three
    /// per driver (world units/s). A twin experiment's truth is per-driver
    /// whatever the fit's fields, so its loss on the fit's own frames,
    /// views and weights is measured with this.
    pub fn loss_of_drivers(
        &mut self,
        ctx: &GpuContext,
        log10_youngs: &[f64],
        velocity: &[f64],
        selection: &Selection,
    ) -> Result<LossReport, FitError> {
        self.check_selection(selection)?;
        if let Some(d) = log10_youngs.iter().position(|&v| v > self.log10_max) {
            return Err(FitError::YoungsAboveRange {
                driver: d,
                value: log10_youngs[d],
                max: self.log10_max,
            });
        }
        self.profiler.start();
        let (prepared, start) =
            self.prepare_drivers(ctx, log10_youngs.to_vec(), velocity.to_vec())?;
        self.loss_from(ctx, &prepared, &start, selection)
    }

    /// The loss report of `selection` whose frame `selection.frames[f]` is
    /// the MPM state `states[f]`: renders and losses only, no gradients
    /// (shared by [`FitProblem::loss`] and [`FitProblem::truncated_loss`]).
    fn report_frames(
        &mut self,
        ctx: &GpuContext,
        selection: &Selection,
        terms: &LossTermsBuffer,
        prepared: &Prepared,
        states: &[&GpuBuffer],
    ) -> Result<LossReport, FitError> {
        let views = selection.views.len() as u32;
        let mut intersections = 0;
        for (f, (&k, state)) in selection.frames.iter().zip(states).enumerate() {
            intersections += self.frame(
                ctx,
                state,
                k,
                &selection.views,
                terms,
                f as u32 * views,
                None,
            )?;
        }
        let report = self
            .report(ctx, selection, terms, prepared, intersections)?
            .0;
        self.profiler.lap(ctx, TimedPart::Loss)?;
        Ok(report)
    }

    /// The stage-2 objective whose gradient [`GradientFlow::Truncated`]
    /// gives: each selected frame k ≥ 2 simulated one frame from
    /// `frozen.frames[k − 1]` (held constant) with the E of `params`; frame
    /// 1 from the initial state of `params`. `frozen` comes from
    /// [`FitProblem::forward_states`]; at its own parameters this equals
    /// [`FitProblem::loss`]. For finite-difference checks of stage 2.
    pub fn truncated_loss(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        selection: &Selection,
        frozen: &Rollout,
    ) -> Result<LossReport, FitError> {
        self.check_selection(selection)?;
        self.profiler.start();
        let (prepared, start) = self.prepare(ctx, params)?;
        let terms = self.terms_buffer(ctx, selection)?;
        // One one-frame rollout per selected frame, from its frozen start.
        let mut rollouts = Vec::with_capacity(selection.frames.len());
        for &k in &selection.frames {
            let first = if k <= 1 {
                self.simulator().upload_state(ctx, "fit frame 0", &start)?
            } else {
                let Some(src) = frozen.frames.get(k - 1) else {
                    return Err(FitError::FrameOutOfRange {
                        frame: k,
                        view: selection.views[0],
                        name: "frozen forward states".into(),
                        available: frozen.frames.len(),
                    });
                };
                let copy = self.simulator().state_buffer(ctx, "fit frozen start")?;
                let mut encoder = crate::gpu::encoder(ctx, "fit copy frozen state");
                encoder.copy_buffer_to_buffer(src.raw(), 0, copy.raw(), 0, src.size());
                ctx.queue.submit([encoder.finish()]);
                copy
            };
            rollouts.push(
                self.simulator()
                    .rollout_from(ctx, first, u32::from(k > 0))?,
            );
        }
        self.profiler.lap(ctx, TimedPart::MpmForward)?;
        let states: Vec<&GpuBuffer> = rollouts
            .iter()
            .map(|r| r.frames.last().expect("a rollout holds its start"))
            .collect();
        self.report_frames(ctx, selection, &terms, &prepared, &states)
    }

    /// The loss of `params` on `selection` and its gradients w.r.t. the
    /// `log10 E` and velocity parameters for `flow` (module doc).
    pub fn evaluate(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        selection: &Selection,
        flow: GradientFlow,
    ) -> Result<Evaluation, FitError> {
        self.check_selection(selection)?;
        self.profiler.start();
        let (prepared, start) = self.prepare(ctx, params)?;
        let last = *selection.frames.last().unwrap();
        let rollout = self.simulator().rollout(ctx, &start, last as u32)?;
        // Between the forward rollout and the (longer) backward pass.
        self.check_stop()?;
        let terms = self.terms_buffer(ctx, selection)?;
        let state_floats = self.simulator().particle_count() * STATE_STRIDE;
        while self.state_grads.len() < selection.frames.len() {
            let label = format!("fit state gradient {}", self.state_grads.len());
            self.state_grads
                .push(ctx.storage_zeroed::<f32>(&label, state_floats)?);
        }
        self.profiler.lap(ctx, TimedPart::MpmForward)?;
        let views = selection.views.len() as u32;
        let mut intersections = 0;
        let grads = std::mem::take(&mut self.state_grads);
        let rendered: Result<(), FitError> = (|| {
            for (f, &k) in selection.frames.iter().enumerate() {
                intersections += self.frame(
                    ctx,
                    &rollout.frames[k],
                    k,
                    &selection.views,
                    &terms,
                    f as u32 * views,
                    Some(&grads[f]),
                )?;
            }
            Ok(())
        })();
        let frame_grads: Vec<FrameGradient> = selection
            .frames
            .iter()
            .zip(&grads)
            .map(|(&frame, grad)| FrameGradient { frame, grad })
            .collect();
        let mpm = rendered.and_then(|()| {
            let sim = self.forward.simulator()?;
            Ok(sim.backward(
                ctx,
                &rollout,
                &frame_grads,
                &BackwardOptions {
                    flow,
                    checkpoint_every: None,
                },
                &mut self.work,
            )?)
        });
        drop(frame_grads);
        self.state_grads = grads;
        let mpm = mpm?;
        self.profiler.lap(ctx, TimedPart::MpmAdjoint)?;
        let (report, tv_gradient) =
            self.report(ctx, selection, &terms, &prepared, intersections)?;
        self.profiler.lap(ctx, TimedPart::Loss)?;
        let tv: Vec<f32> = self
            .youngs_map
            .transpose(&tv_gradient.log10)
            .iter()
            .map(|g| (g * self.tv_weight) as f32)
            .collect();
        if !tv.is_empty() {
            ctx.write(&self.youngs_init, &tv);
        }
        // The velocity TV's gradient through the velocity map's transpose,
        // as the E TV's; written at weight 0 too (zeros), so that a stage
        // switched to weight 0 ([`FitProblem::set_stage`]) leaves nothing of
        // the previous stage's term.
        let tv: Vec<f32> = self
            .velocity_map
            .transpose(&tv_gradient.velocity)
            .iter()
            .map(|g| (g * self.velocity_tv_weight) as f32)
            .collect();
        if !tv.is_empty() {
            ctx.write(&self.velocity_init, &tv);
        }
        let youngs_gradient =
            ctx.storage_zeroed::<f32>("fit log10 E gradient", self.youngs_map.params.max(1))?;
        let velocity_gradient =
            ctx.storage_zeroed::<f32>("fit v0 gradient", self.velocity_map.params.max(1))?;
        let mut encoder = crate::gpu::encoder(ctx, "fit parameter gradients");
        self.gather.dispatch(
            ctx,
            &mut encoder,
            &self.youngs_plan,
            &GatherBuffers {
                src: &mpm.youngs,
                scale: &self.youngs_scale,
                init: &self.youngs_init,
                out: &youngs_gradient,
            },
        );
        self.gather.dispatch(
            ctx,
            &mut encoder,
            &self.velocity_plan,
            &GatherBuffers {
                src: &mpm.initial_state,
                scale: &self.youngs_scale,
                init: &self.velocity_init,
                out: &velocity_gradient,
            },
        );
        ctx.queue.submit([encoder.finish()]);
        self.profiler.lap(ctx, TimedPart::MpmAdjoint)?;
        ctx.check()?;
        Ok(Evaluation {
            report,
            youngs_gradient,
            velocity_gradient,
        })
    }
}
