//! [`Chain`]: the differentiable chain on the GPU, stage by stage, forward
//! and backward (docs/design.md § Pipeline; § Adjoint; § Drivers and the
//! deformation of Gaussians; § Gaussian splatting): the drivers' MPM, the
//! deformation that poses the splats at a state, and the draw.
//!
//! The GPU counterpart of the f64 twin in src/reference/chain.rs, with its
//! stage names:
//!
//! | stage | forward | backward |
//! |---|---|---|
//! | MPM | [`Chain::rollout`], [`Chain::rollout_for_backward`] (twin: `frame_states`), [`Chain::rollout_held`] (one frame from a held state, as `chain_loss_held`), [`Chain::truncated_forward`] (one frame, kept for its backward) | [`Chain::rollout_backward`] (`frames_gradient`), [`Chain::truncated_backward`] (one frame's truncated adjoint) |
//! | deformation | [`Chain::pose`] (`posed_splats`) | [`DrawBackward::pose_backward`] (`deform_adjoint`) |
//! | draw | [`Chain::draw`], [`Chain::draw_over`] (`render`) | [`Chain::draw_backward`] (`render_backward`) |
//!
//! The loss between draw and backward is the caller's (the fit's
//! [`crate::fit::FitProblem`] scores each draw and seeds `∂L/∂pixel`);
//! every forward run without a gradient ([`super::SceneRenderer`]) goes
//! through the same stages. The pose's backward is reached from the
//! draw's backward ([`DrawBackward`]) because the splat gradients it reads
//! live in the rasterizer's buffers until the next draw.

use super::drawing::Drawing;
use super::error::ForwardError;
use super::setup::ForwardSetup;
use crate::deform::{DeformError, Deformation};
use crate::gpu::{GpuBuffer, GpuContext};
use crate::loss::{LossError, RenderedImage};
use crate::mpm::{
    BackwardOptions, BackwardWork, ForcedRun, FrameGradient, GradientFlow, MpmConfig, MpmError,
    MpmGradients, MpmSimulator, ParticleState, Rollout, RolloutOptions, TruncatedPass,
};
use crate::io::Frame;
use crate::scene::{Camera, Gaussians};
use crate::splat::{RenderOutput, SplatError, SplatGradients, StageTiming, StaticBackdrop};

/// The chain's stages on the GPU (module doc).
pub struct Chain {
    sim: MpmSimulator,
    /// The setup's impulses, for frames stepped one at a time
    /// ([`Chain::step`]); none in a fit.
    forced: ForcedRun,
    /// The MPM backward's checkpoints and buffers, reused by every
    /// [`Chain::rollout_backward`].
    work: BackwardWork,
    /// Bytes [`Chain::rollout_for_backward`] may keep so that its backward
    /// replays nothing (0: never; [`Chain::set_kept_rollout_budget`]).
    kept_rollout_budget: u64,
    deformation: Deformation,
    drawing: Drawing,
}

/// The draw's backward just run ([`Chain::draw_backward`]): the splat
/// gradients, still in the rasterizer's buffers, and the stage times;
/// [`DrawBackward::pose_backward`] carries them on to the drivers.
pub struct DrawBackward<'a> {
    gradients: &'a SplatGradients,
    deformation: &'a Deformation,
    /// Per-stage wall times when the rasterizer was profiling, else empty.
    pub timings: Vec<StageTiming>,
}

impl Chain {
    /// The chain of `setup` (simulator with its E, ν and time-step bound,
    /// impulses, deformation) over the splats `gaussians` drawn over
    /// `background`.
    pub fn new(
        ctx: &GpuContext,
        setup: &ForwardSetup,
        gaussians: &Gaussians,
        background: [f32; 3],
    ) -> Result<Self, ForwardError> {
        let sim = MpmSimulator::new(ctx, &setup.config, &setup.setup)?;
        if let Some(nu) = &setup.poisson {
            sim.set_poisson(ctx, nu)?;
        }
        Ok(Self {
            forced: ForcedRun::new(ctx, &sim, setup.impulses.clone())?,
            work: BackwardWork::new(),
            kept_rollout_budget: 0,
            deformation: Deformation::new(ctx, &setup.deform)?,
            drawing: Drawing::new(ctx, gaussians, background)?,
            sim,
        })
    }

    // --- MPM ---

    /// The simulator's settings (substeps per frame, grid, box).
    pub fn config(&self) -> &MpmConfig {
        self.sim.config()
    }

    /// Sets E per driver (normalised units) for every later rollout,
    /// checked against the time-step bound.
    pub fn set_youngs(&self, ctx: &GpuContext, youngs: &[f32]) -> Result<(), MpmError> {
        self.sim.set_youngs(ctx, youngs)
    }

    /// Sets Poisson's ratio per driver for every later rollout, checked
    /// against the time-step bound.
    pub fn set_poisson(&self, ctx: &GpuContext, poisson: &[f64]) -> Result<(), MpmError> {
        self.sim.set_poisson(ctx, poisson)
    }

    /// A zeroed buffer the size of one state: a frame state, or the
    /// gradient of the loss w.r.t. one ([`FrameGradient`]).
    pub fn state_buffer(&self, ctx: &GpuContext, label: &str) -> Result<GpuBuffer, MpmError> {
        self.sim.state_buffer(ctx, label)
    }

    /// Uploads a state, checked for size, finiteness and the grid.
    pub fn upload_state(
        &self,
        ctx: &GpuContext,
        label: &str,
        state: &ParticleState,
    ) -> Result<GpuBuffer, MpmError> {
        self.sim.upload_state(ctx, label, state)
    }

    /// Reads a state back.
    pub fn read_state(
        &self,
        ctx: &GpuContext,
        state: &GpuBuffer,
    ) -> Result<ParticleState, MpmError> {
        self.sim.read_state(ctx, state)
    }

    /// The rollout from `start` through frame `last`, every frame state
    /// kept with what the backward replays from (twin: `frame_states`).
    pub fn rollout(
        &self,
        ctx: &GpuContext,
        start: &ParticleState,
        last: u32,
    ) -> Result<Rollout, MpmError> {
        self.sim.rollout(ctx, start, last)
    }

    /// Bytes [`Chain::rollout_for_backward`] may spend keeping every
    /// substep of a rollout (what the machine leaves: the fit's
    /// [`crate::budget::kept_rollout_budget`]).
    pub fn set_kept_rollout_budget(&mut self, bytes: u64) {
        self.kept_rollout_budget = bytes;
    }

    /// The budget [`Chain::set_kept_rollout_budget`] set.
    pub fn kept_rollout_budget(&self) -> u64 {
        self.kept_rollout_budget
    }

    /// [`Chain::rollout`] for a backward pass over the whole of it (the
    /// full flow), keeping what [`Chain::rollout_backward`] would otherwise
    /// recompute (docs/design.md § Adjoint, Memory): every substep's state
    /// and grid of every frame when they fit the kept-rollout budget (the
    /// backward then replays nothing), else every frame's in-frame
    /// checkpoints and the last frame's last segment (⌈S/K⌉ − 1 states more
    /// per frame; the backward replays each frame's substeps once).
    pub fn rollout_for_backward(
        &mut self,
        ctx: &GpuContext,
        start: &ParticleState,
        last: u32,
    ) -> Result<Rollout, MpmError> {
        let options = RolloutOptions {
            keep_checkpoints: true,
            checkpoint_every: None,
            keep_every_substep: self.kept_rollout_budget > 0
                && self.sim.keeps_whole_frames()
                && self.sim.kept_rollout_bytes(last) <= self.kept_rollout_budget,
        };
        self.sim
            .rollout_with(ctx, start, last, &options, &mut self.work)
    }

    /// Starts a truncated pass run frame by frame (src/mpm/truncated_pass.rs):
    /// the rollout of frame 0 (`start`, uploaded) and the pass's
    /// gradients, zeroed.
    pub fn truncated_start(
        &self,
        ctx: &GpuContext,
        start: &ParticleState,
    ) -> Result<(Rollout, TruncatedPass), MpmError> {
        let first = self.sim.upload_state(ctx, "mpm frame 0", start)?;
        Ok((self.sim.rollout_start(first), self.sim.truncated_pass(ctx)?))
    }

    /// Runs the rollout's next frame, keeping for its backward as much of
    /// it as the kept-grids budget holds (the whole frame on the fit's
    /// scenes).
    pub fn truncated_forward(
        &mut self,
        ctx: &GpuContext,
        rollout: &mut Rollout,
    ) -> Result<(), MpmError> {
        let every = self.sim.frame_every();
        self.sim
            .extend_rollout_kept(ctx, rollout, every, &mut self.work)
    }

    /// Adds frame `k`'s adjoint from its seed `∂L/∂(state k)` to `pass`,
    /// right after [`Chain::truncated_forward`] ran frame k.
    pub fn truncated_backward(
        &mut self,
        ctx: &GpuContext,
        pass: &mut TruncatedPass,
        rollout: &mut Rollout,
        k: usize,
        seed: &GpuBuffer,
    ) -> Result<(), MpmError> {
        self.sim
            .truncated_frame(ctx, pass, rollout, k, seed, &mut self.work)
    }

    /// The truncated pass's gradients (as [`Chain::rollout_backward`]'s).
    pub fn truncated_finish(
        &self,
        ctx: &GpuContext,
        pass: TruncatedPass,
    ) -> Result<MpmGradients, MpmError> {
        self.sim.truncated_finish(ctx, pass)
    }

    /// The rollout of `frames` frames from a copy of `held` (a state of an
    /// earlier rollout, held constant): the truncated flow's objective
    /// simulates each frame from the forward's previous state (twin:
    /// `chain_loss_held`).
    pub fn rollout_held(
        &self,
        ctx: &GpuContext,
        held: &GpuBuffer,
        frames: u32,
    ) -> Result<Rollout, MpmError> {
        let copy = self.sim.state_buffer(ctx, "chain held start")?;
        let mut encoder = crate::gpu::encoder(ctx, "chain copy held state");
        encoder.copy_buffer_to_buffer(held.raw(), 0, copy.raw(), 0, held.size());
        ctx.queue.submit([encoder.finish()]);
        self.sim.rollout_from(ctx, copy, frames)
    }

    /// The rollout's backward for `flow` from the seeds `∂L/∂state` of its
    /// frames: `∂L/∂E` per driver and `∂L/∂(initial state)` (twin:
    /// `frames_gradient`; docs/design.md § Adjoint).
    pub fn rollout_backward(
        &mut self,
        ctx: &GpuContext,
        rollout: &Rollout,
        seeds: &[FrameGradient],
        flow: GradientFlow,
    ) -> Result<MpmGradients, MpmError> {
        let options = BackwardOptions {
            flow,
            checkpoint_every: None,
        };
        self.sim
            .backward(ctx, rollout, seeds, &options, &mut self.work)
    }

    /// Simulates frame `frame` from `from` into `to` under the setup's
    /// impulses (docs/design.md § Interactions), forward only: the runs
    /// that step frame by frame (`simulate`, `render --params`, `synth`).
    pub fn step(
        &mut self,
        ctx: &GpuContext,
        from: &GpuBuffer,
        to: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        self.forced.run_frame(ctx, &self.sim, from, to, frame)
    }

    /// The particles impulse `k` holds, once it has started.
    pub fn impulse_members(&self, k: usize) -> Option<Vec<usize>> {
        self.forced.members(k)
    }

    // --- deformation ---

    /// Moves the splats to the drivers of `state` (twin: `posed_splats`):
    /// the followers' centres and rotations, the static splats at rest.
    pub fn pose(&self, ctx: &GpuContext, state: &GpuBuffer) -> Result<(), DeformError> {
        let mut encoder = crate::gpu::encoder(ctx, "chain: splats follow drivers");
        self.deformation
            .encode_forward(ctx, &mut encoder, state, self.drawing.splats())?;
        ctx.queue.submit([encoder.finish()]);
        Ok(())
    }

    // --- draw ---

    /// Makes every later draw and backward wait for and time each stage.
    pub fn set_profile(&mut self, on: bool) {
        self.drawing.set_profile(on);
    }

    /// Draws the splats as posed from `camera`, kept on the GPU (twin:
    /// `render`).
    pub fn draw(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<RenderOutput, SplatError> {
        self.drawing.draw(ctx, camera)
    }

    /// [`Chain::draw`] over `backdrop` (its camera): only the tiles the
    /// moving splats reach are blended (docs/design.md § Gaussian
    /// splatting, "Static tiles").
    pub fn draw_over(
        &mut self,
        ctx: &GpuContext,
        backdrop: &StaticBackdrop,
    ) -> Result<RenderOutput, SplatError> {
        self.drawing.draw_over(ctx, backdrop)
    }

    /// The image of the draw `out`, as the loss reads it.
    pub fn image(&self, out: &RenderOutput) -> Result<RenderedImage<'_>, LossError> {
        self.drawing.image(out)
    }

    /// The backward of the draw `out` (the latest, the splats still posed
    /// as drawn): `grad_image` = ∂L/∂(R, G, B, A) per pixel into the splat
    /// gradients (twin: `render_backward`), which
    /// [`DrawBackward::pose_backward`] takes on to the drivers.
    pub fn draw_backward(
        &mut self,
        ctx: &GpuContext,
        out: &RenderOutput,
        grad_image: &GpuBuffer,
    ) -> Result<DrawBackward<'_>, SplatError> {
        let back = self.drawing.draw_backward(ctx, out, grad_image)?;
        Ok(DrawBackward {
            gradients: back.gradients,
            deformation: &self.deformation,
            timings: back.timings,
        })
    }

    /// Draws the splats as posed from `camera` and reads the image back
    /// (RGBA in [0, 1], alpha the coverage).
    pub fn render(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<Frame, SplatError> {
        self.drawing.render(ctx, camera)
    }

    /// The splats the deformation never moves (static and anchored
    /// Gaussians) drawn once from `camera`; `gaussians` are the splats the
    /// chain was built with.
    pub fn static_backdrop(
        &mut self,
        ctx: &GpuContext,
        gaussians: &Gaussians,
        camera: &Camera,
    ) -> Result<StaticBackdrop, SplatError> {
        self.drawing
            .static_backdrop(ctx, gaussians, self.deformation.splat_indices(), camera)
    }

    /// Reads the posed splats' centres (world units) and raw rotations back
    /// into `gaussians`.
    pub fn read_pose(&self, ctx: &GpuContext, gaussians: &mut Gaussians) -> Result<(), SplatError> {
        self.drawing.read_pose(ctx, gaussians)
    }
}

impl DrawBackward<'_> {
    /// The pose's backward (twin: `deform_adjoint`): the splat gradients
    /// of the followers into `∂L/∂x` of the drivers of `state` (the state
    /// the draw was posed at), added into `state_grad`.
    pub fn pose_backward(
        &self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        state_grad: &GpuBuffer,
    ) -> Result<(), DeformError> {
        let mut encoder = crate::gpu::encoder(ctx, "chain: pose backward");
        self.deformation
            .encode_backward(ctx, &mut encoder, state, self.gradients, state_grad)?;
        ctx.queue.submit([encoder.finish()]);
        Ok(())
    }
}
