//! The fit problem: one call from parameters to loss and gradient (docs/design.md
//! § Loss, parameters, fit; § Drivers and the deformation of Gaussians).
//!
//! [`FitProblem::new`] builds, once per scene: the K-Means drivers
//! ([`DriverSet`]; or [`FitProblem::from_drivers`] takes them built, as
//! the fit does, which resolves the scene's `field` settings over them
//! first: [`FitProblemOptions::from_scene`]), the chain over them
//! ([`Chain`]: the MPM simulator, time step checked for the top of
//! `material.log10_youngs_range`; the deformation of the free Gaussians;
//! the rasterizer; each stage with its backward), the image loss, every
//! view's reference
//! frames uploaded as 8-bit RGBA, the backward pass's reusable buffers and
//! the GPU transposes of the two parameterisations ([`super::params`]).
//!
//! [`FitProblem::evaluate`] then, per call, through the chain's stages
//! (the names of src/reference/chain.rs, the f64 twin of this call):
//! 1. maps the parameters to `log10 E` and `v0` per driver (host, a few KB
//!    uploaded), sets `E = 10^p` and runs one rollout from frame 0 through
//!    the last selected frame ([`Chain::rollout`]);
//! 2. per selected frame k (one frame's render state at a time): poses the
//!    splats at the drivers of state k ([`Chain::pose`]); per selected view
//!    draws ([`Chain::draw`], or [`Chain::draw_over`] the view's static
//!    backdrop), applies the view's colour correction
//!    (`views[i].color_correction`; skipped for the identity,
//!    [`ColorCorrect`]), evaluates the loss (seeding `∂L/∂pixel`),
//!    back-propagates through the correction, the draw
//!    ([`Chain::draw_backward`]) and the pose
//!    ([`crate::forward::DrawBackward::pose_backward`]), which adds `∂L/∂x`
//!    of the drivers into frame k's state-gradient buffer;
//! 3. runs one MPM backward over all frames ([`Chain::rollout_backward`]),
//!    [`crate::mpm::GradientFlow::Full`] (stage
//!    1, and stage 2 of few parameters: through the whole rollout) or
//!    [`crate::mpm::GradientFlow::Truncated`] (stage 2 of a per-driver
//!    field: frame k's gradient through frame k's substeps only, the state
//!    at k−1 a constant);
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
//! [`crate::loss::TV_EPSILON`]), reported as [`super::LossReport::velocity_tv`] whatever its
//! weight, and with a weight added to the loss and, mapped by the velocity
//! map's `Mᵀ`, to the v0 gradient through the gather kernel's init buffer
//! (at weight 0 it holds zeros).
//!
//! One problem serves both stages of a fit: [`FitProblem::set_stage`]
//! switches the image-loss weights and the two smoothness weights to a
//! stage's (the stages alternate, with different weights).
//!
//! Static tiles: the splats the deformation does not move (static and
//! anchored Gaussians: a pedestal, the ground, the anchored base) look the
//! same in every frame of every call, and their gradient is never used.
//! Each view with frames gets a [`StaticBackdrop`] when the problem is
//! built (those splats rendered once), and every frame is drawn over it
//! ([`crate::splat::Rasterizer::render_over`]): only the tiles that a
//! moving splat reaches in that frame are blended and back-propagated, the
//! others keep the backdrop's pixels. The image, and so the loss, is the
//! same as a full render's; the gradient too, up to the order of float
//! atomics (docs/design.md § Gaussian splatting, "Static tiles").
//!
//! Kept forward: an evaluation's rollout keeps what its MPM backward would
//! otherwise recompute (docs/design.md § Adjoint, Memory). The full flow
//! keeps every substep's state and grid of every frame where they fit what
//! the machine leaves ([`crate::budget::kept_rollout_budget`]), so that
//! the backward replays nothing; else every frame's in-frame checkpoints,
//! so the backward replays each frame's S substeps once and no longer
//! recomputes its S − K checkpoint substeps first; the truncated flow runs frame by frame (each selected
//! frame simulated, rendered, seeded and back-propagated before the next,
//! src/mpm/truncated_pass.rs), its forward keeping the frame's substep
//! states and grids for its adjoint, which then replays nothing where
//! they fit the simulator's kept-grids budget. Off
//! ([`FitProblem::set_kept_forward`]) gives the work before the cut.
//!
//! Profiling ([`FitProblem::set_profile`], for `physfit bench fit`):
//! [`super::profile`].
//!
//! The problem's parts by concern: one evaluation with gradients
//! ([`gradient`]), the loss without them and the report of either
//! ([`mod@loss`]), one frame's renders and losses ([`frame`]), renders
//! outside an iteration ([`render`]).
//!
//! Memory: the rollout's frame states (96 bytes per driver per frame), one
//! state-gradient buffer per selected frame, the backward pass's
//! checkpoints (kept per frame by a full-flow evaluation's rollout) and
//! segment (the chain's [`crate::mpm::BackwardWork`], reused: a truncated
//! evaluation's holds a whole frame's substep states and grids within the
//! kept-grids budget), one frame's render and loss
//! workspace (reused), and the reference frames (4 bytes per pixel each,
//! 1 more for a view with loss masks, `views[i].masks`: each frame carries
//! its mask into the loss, [`ReferenceFrame::with_mask`]).

mod frame;
mod gradient;
mod loss;

pub use loss::RolloutValues;
mod render;

use super::error::FitError;
use super::evaluation::{Parameters, Selection};
use crate::budget::{estimate, kept_rollout_budget, MachineMemory, Workload};
use super::options::FitProblemOptions;
use super::param_gather::{GatherPlan, ParamGather, SourceLayout};
use super::params::ParamMap;
use super::poisson::DriverPoisson;
use super::profile::{FitTimings, Profiler, TimedPart};
use crate::deform::DRIVERS_PER_GAUSSIAN;
use crate::drive::DriverSet;
use crate::forward::{Chain, ForwardSetup};
use crate::gpu::{GpuBuffer, GpuContext};
use crate::interact::Interactions;
use crate::loss::{ColorCorrect, ImageLoss, LossWeights, ReferenceFrame, ReferenceMask};
use crate::mpm::layout::STATE_STRIDE;
use crate::mpm::ParticleState;
use crate::scene::{Camera, ColorCorrection, FitStage, Scene};
use crate::splat::StaticBackdrop;

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
    /// MPM, deformation and draw, each with its backward.
    chain: Chain,
    loss: ImageLoss,
    /// The views' colour corrections, applied between render and loss.
    color: ColorCorrect,
    corrections: Vec<ColorCorrection>,
    cameras: Vec<Camera>,
    view_names: Vec<String>,
    references: Vec<Option<Vec<ReferenceFrame>>>,
    /// Per view: the static splats' render, when some splats never move.
    backdrops: Vec<Option<StaticBackdrop>>,
    /// Render over the backdrops ([`FitProblem::set_static_tiles`]).
    static_tiles: bool,
    /// Forwards keep what their backward would recompute
    /// ([`FitProblem::set_kept_forward`]).
    kept_forward: bool,
    /// Forward substeps the last evaluation's MPM backward ran again
    /// ([`crate::mpm::MpmGradients::replayed_substeps`]).
    replayed_substeps: u64,
    youngs_map: ParamMap,
    velocity_map: ParamMap,
    /// The initial affine velocity `C0` of the same parameters
    /// ([`ParamMap::velocity_gradient`]).
    velocity_gradient_map: ParamMap,
    /// The map of Poisson's ratio's `z` when ν is fitted
    /// ([`super::poisson`]).
    poisson_map: Option<ParamMap>,
    /// `material.poisson_ratio`: ν of parameters without `z`.
    poisson_start: f64,
    /// The range a fitted ν stays inside (`ν = low + (high − low)·s(z)`).
    poisson_range: crate::scene::PoissonRange,
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
        // The chain at the start E, checked for the top of the range:
        // every call sets E anew (`prepare`).
        let setup = ForwardSetup::from_drivers(
            scene,
            &drivers,
            vec![scene.material.youngs_modulus.log10(); n],
            &vec![[0.0; 3]; n],
            &Interactions::default(),
        )?
        .bounded_by(10f64.powf(log10_max))?;
        let mut chain = Chain::new(ctx, &setup, scene.gaussians(), scene.background)?;
        // What the machine leaves after the fit's own estimate may keep
        // whole rollouts for the full flow's backward (module doc, "Kept
        // forward").
        let machine = MachineMemory::of_context(ctx);
        let kept_rollout_budget = kept_rollout_budget(&machine, &estimate(scene, &Workload::Fit));
        chain.set_kept_rollout_budget(kept_rollout_budget);
        log::debug!(
            "kept-rollout budget {} (half of what {} leaves after the fit's estimate, at most {})",
            crate::budget::human_bytes(kept_rollout_budget),
            machine
                .device
                .as_ref()
                .map_or("the host", |d| d.name.as_str()),
            crate::budget::human_bytes(crate::budget::KEPT_ROLLOUT_CAP_BYTES),
        );
        // One static backdrop per view with frames, when some splats stay
        // at rest (module doc, "Static tiles").
        let some_static = setup.deform.len() < scene.gaussians().len();
        let mut backdrops = Vec::with_capacity(scene.views.len());
        for view in &scene.views {
            backdrops.push(match view.frames.is_some() && some_static {
                true => Some(chain.static_backdrop(ctx, scene.gaussians(), &view.camera)?),
                false => None,
            });
        }
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
        let poisson_map = match &options.poisson {
            Some(field) => Some(ParamMap::youngs(field, n)?),
            None => None,
        };
        let velocity_map =
            ParamMap::velocity(&options.velocity, &drivers.rest, &drivers.anchored, side)?;
        let velocity_gradient_map =
            ParamMap::velocity_gradient(&options.velocity, &drivers.anchored);
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
        // ∂L/∂v0 through v's slots of ∂L/∂state0, plus ∂L/∂C0 through C's
        // (C0 in 1/s whatever the units of length: factor 1).
        let velocity_plan = GatherPlan::joined(
            ctx,
            "v0",
            &[
                (
                    &velocity_map,
                    SourceLayout {
                        stride: STATE_STRIDE as u32,
                        offset: 3,
                        factor: 1.0 / side,
                        scaled: false,
                    },
                ),
                (
                    &velocity_gradient_map,
                    SourceLayout {
                        stride: STATE_STRIDE as u32,
                        offset: 6,
                        factor: 1.0,
                        scaled: false,
                    },
                ),
            ],
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
            state_grads: Vec::new(),
            tv_weight: options.tv_weight,
            profiler: Profiler::off(),
            velocity_tv_weight: options.velocity_tv_weight,
            stop: None,
            drivers,
            chain,
            references,
            backdrops,
            static_tiles: true,
            kept_forward: true,
            replayed_substeps: 0,
            youngs_map,
            velocity_map,
            velocity_gradient_map,
            poisson_map,
            poisson_start: scene.material.poisson_ratio,
            poisson_range: options.poisson_range,
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
        self.chain.set_profile(on);
    }

    /// Whether frames are rendered over the views' static backdrops (on
    /// by default; module doc, "Static tiles"). Off renders and
    /// back-propagates every tile: the same loss, the same gradient up to
    /// the order of float atomics, more work (the comparison tests make).
    pub fn set_static_tiles(&mut self, on: bool) {
        self.static_tiles = on;
    }

    /// Whether an evaluation's forward keeps what its MPM backward would
    /// otherwise recompute (on by default; module doc, "Kept forward").
    /// Off: one rollout keeping frame states only, then one backward pass
    /// that recomputes each frame's checkpoints and replays its substeps,
    /// the work before that cut, for a before/after on one machine. The
    /// same loss, the same gradient up to the order of float atomics.
    pub fn set_kept_forward(&mut self, on: bool) {
        self.kept_forward = on;
    }

    /// Bytes a full-flow evaluation may keep of its rollout so that its
    /// backward replays nothing (module doc, "Kept forward").
    pub fn kept_rollout_budget(&self) -> u64 {
        self.chain.kept_rollout_budget()
    }

    /// Sets that budget (0: full-flow evaluations keep checkpoints and
    /// replay), in place of the one the machine's memory gave.
    pub fn set_kept_rollout_budget(&mut self, bytes: u64) {
        self.chain.set_kept_rollout_budget(bytes);
    }

    /// Forward substeps the last [`FitProblem::evaluate`]'s MPM backward
    /// ran again (checkpoints recomputed, segments replayed): what its
    /// checkpointing cost on top of the forward.
    pub fn replayed_substeps(&self) -> u64 {
        self.replayed_substeps
    }

    /// View `view`'s static backdrop, when it has one (module doc,
    /// "Static tiles").
    pub fn static_backdrop(&self, view: usize) -> Option<&StaticBackdrop> {
        self.backdrops.get(view).and_then(Option::as_ref)
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

    /// The initial affine velocity `C0` of the velocity parameters
    /// ([`ParamMap::velocity_gradient`]; no entries unless the field is
    /// `rigid`).
    pub fn velocity_gradient_map(&self) -> &ParamMap {
        &self.velocity_gradient_map
    }

    /// Substeps per frame of the problem's simulator (the time step its
    /// E range needs).
    pub fn substeps_per_frame(&self) -> u32 {
        self.chain.config().substeps_per_frame
    }

    /// The map of Poisson's ratio's `z` ([`super::poisson`]), when ν is
    /// fitted.
    pub fn poisson_map(&self) -> Option<&ParamMap> {
        self.poisson_map.as_ref()
    }

    /// The range a fitted ν stays inside ([`super::poisson`]).
    pub fn poisson_range(&self) -> crate::scene::PoissonRange {
        self.poisson_range
    }

    /// The start of ν's parameters: `z` of `material.poisson_ratio` per
    /// parameter of [`FitProblem::poisson_map`]; empty when ν is not fitted.
    pub fn start_poisson(&self) -> Vec<f64> {
        self.poisson_map.as_ref().map_or_else(Vec::new, |m| {
            vec![self.poisson_range.z_of(self.poisson_start); m.params]
        })
    }

    /// ν per driver at `z` ([`Parameters::poisson`]): the sigmoid of the
    /// mapped `z`, or `material.poisson_ratio` everywhere for an empty `z`.
    ///
    /// Errors: [`FitError::ParameterCount`] for a `z` whose length is not
    /// the map's (any `z` when ν is not fitted).
    pub fn driver_poisson(&self, z: &[f64]) -> Result<Vec<f64>, FitError> {
        self.driver_poisson_map().apply(z)
    }

    /// What [`FitProblem::driver_poisson`] computes, as a value that does
    /// not borrow the problem.
    pub fn driver_poisson_map(&self) -> DriverPoisson {
        DriverPoisson {
            map: self.poisson_map.clone(),
            range: self.poisson_range,
            held: self.poisson_start,
            drivers: self.drivers.len(),
        }
    }

    /// `∂loss/∂z` per parameter of ν's map from `∂loss/∂ν` per driver
    /// (`per_driver`, [`super::HostGradients::poisson`]) at `z`: the chain
    /// rule through the sigmoid, then the map's transpose on the host (a
    /// few parameters; [`super::poisson`]). Empty for an empty `z`.
    pub fn poisson_parameter_gradient(
        &self,
        z: &[f64],
        per_driver: &[f32],
    ) -> Result<Vec<f64>, FitError> {
        let Some(map) = self.poisson_map.as_ref().filter(|_| !z.is_empty()) else {
            return Ok(Vec::new());
        };
        let chained: Vec<f64> = map
            .apply(z)?
            .iter()
            .zip(per_driver)
            .map(|(&zd, &g)| f64::from(g) * self.poisson_range.derivative(zd))
            .collect();
        Ok(map.transpose(&chained))
    }

    /// Sets Poisson's ratio per driver (each in `[0, 0.5)`;
    /// `material.poisson_ratio` until then) for every later evaluation,
    /// whose [`super::Evaluation::poisson_gradient`] is `∂loss/∂ν` per driver.
    /// Checked against the time-step bound the simulator was built for.
    pub fn set_poisson(&self, ctx: &GpuContext, poisson: &[f64]) -> Result<(), FitError> {
        Ok(self.chain.set_poisson(ctx, poisson)?)
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
        let gradient = self.velocity_gradient_map.apply(&params.velocity)?;
        // ν is set only when it is fitted: a problem without ν's map keeps
        // what `set_poisson` (or the scene) set, bit for bit.
        if self.poisson_map.is_some() || !params.poisson.is_empty() {
            let nu = self.driver_poisson(&params.poisson)?;
            self.set_poisson(ctx, &nu)?;
        }
        self.prepare_drivers(ctx, log10, v, Some(&gradient))
    }

    /// [`FitProblem::prepare`] from per-driver values: `log10 E`
    /// (normalised units), `v0` (3 per driver, world units/s) and, when
    /// given, the initial affine velocity `C0` (9 per driver, row-major
    /// `∂v_a/∂x_b`, 1/s; `None`: `C0 = 0`). Anchored drivers start at rest
    /// whatever `v` and `gradient` say there.
    fn prepare_drivers(
        &self,
        ctx: &GpuContext,
        log10: Vec<f64>,
        v: Vec<f64>,
        gradient: Option<&[f64]>,
    ) -> Result<(Prepared, ParticleState), FitError> {
        let n = self.drivers.len();
        if log10.len() != n || v.len() != 3 * n || gradient.is_some_and(|g| g.len() != 9 * n) {
            return Err(FitError::Parameterisation(format!(
                "{} log10 E values, {} velocity components and {} velocity gradient \
                 components for {n} drivers",
                log10.len(),
                v.len(),
                gradient.map_or(9 * n, <[f64]>::len)
            )));
        }
        let youngs: Vec<f32> = log10.iter().map(|&p| 10f64.powf(p) as f32).collect();
        self.chain.set_youngs(ctx, &youngs)?;
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
        let mut start = ParticleState::at_rest(self.drivers.rest.clone(), velocities);
        if let Some(gradient) = gradient {
            for ((c, g), &anchored) in start
                .c
                .iter_mut()
                .zip(gradient.chunks_exact(9))
                .zip(&self.drivers.anchored)
            {
                if !anchored {
                    *c = std::array::from_fn(|a| std::array::from_fn(|b| g[3 * a + b] as f32));
                }
            }
        }
        Ok((Prepared { log10, velocity: v }, start))
    }
}
