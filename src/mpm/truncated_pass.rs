//! The truncated backward pass run frame by frame, each frame's adjoint
//! right after its forward (docs/design.md § Adjoint, Memory; § Loss,
//! parameters, fit: stage 2).
//!
//! Under [`GradientFlow::Truncated`] frame k's gradient flows through
//! frame k's substeps only, so its adjoint needs nothing of the later
//! frames: once frame k is simulated and its `∂L/∂(state k)` seeded (its
//! renders scored), its backward can run at once, from what its forward
//! left. [`MpmSimulator::extend_rollout_kept`] runs a frame keeping its
//! checkpoints every K substeps and its last segment's K states and grids
//! in the caller's [`BackwardWork`]; [`MpmSimulator::truncated_frame`]
//! then runs the frame's adjoint starting from that segment: it replays
//! S − K substeps, and none at K = S ([`MpmSimulator::frame_every`]: the
//! largest K whose states and grids fit the simulator's kept-grids
//! budget). [`MpmSimulator::backward`] after a whole rollout instead
//! replays every frame's S substeps and recomputes its checkpoints (S − K
//! more), since a frame's segment is overwritten by the next frame's
//! forward. The gradients are the same up to the order of float atomics.
//!
//! ```no_run
//! # use physfit::gpu::{GpuBuffer, GpuContext};
//! # use physfit::mpm::*;
//! # fn f(ctx: &GpuContext, sim: &MpmSimulator, start: GpuBuffer,
//! #      seed: &GpuBuffer) -> Result<(), MpmError> {
//! let mut work = BackwardWork::new();
//! let every = sim.frame_every();
//! let mut rollout = sim.rollout_start(start);
//! let mut pass = sim.truncated_pass(ctx)?;
//! for k in 1..=3 {
//!     sim.extend_rollout_kept(ctx, &mut rollout, every, &mut work)?;
//!     // ... render rollout.frames[k], seed ∂L/∂(state k) into `seed` ...
//!     sim.truncated_frame(ctx, &mut pass, &mut rollout, k, seed, &mut work)?;
//! }
//! let g = sim.truncated_finish(ctx, pass)?;
//! # Ok(()) }
//! ```

use super::backward::MpmGradients;
use super::backward_work::BackwardWork;
use super::error::MpmError;
use super::rollout::Rollout;
use super::simulator::MpmSimulator;
use crate::gpu::{GpuBuffer, GpuContext};

/// A truncated backward pass in progress (module doc): the gradients it
/// adds into, frame by frame.
pub struct TruncatedPass {
    youngs: GpuBuffer,
    initial: GpuBuffer,
    replayed_substeps: u64,
}

impl MpmSimulator {
    /// K for a frame-by-frame truncated pass: the largest number of
    /// substeps (at most the frame's S) whose states and grids fit the
    /// kept-grids budget together, at least 1.
    pub fn frame_every(&self) -> u32 {
        let fits = self.kept_grids_budget() / self.kept_substep_bytes().max(1);
        let fits = u32::try_from(fits).unwrap_or(u32::MAX).max(1);
        self.checkpoint_every(Some(fits))
    }

    /// Starts a truncated pass (module doc): zeroed gradients, and the
    /// adjoint buffers a backward pass starts from zeroed.
    pub fn truncated_pass(&self, ctx: &GpuContext) -> Result<TruncatedPass, MpmError> {
        let youngs = ctx.storage_zeroed::<f32>("mpm youngs grad", self.particle_count())?;
        let initial = self.state_buffer(ctx, "mpm grad frame 0")?;
        let mut encoder = crate::gpu::encoder(ctx, "mpm truncated pass start");
        self.encode_clear_grid_velocity_grad(&mut encoder);
        encoder.clear_buffer(self.collider_grad.raw(), 0, None);
        encoder.clear_buffer(self.poisson_grad.raw(), 0, None);
        ctx.queue.submit([encoder.finish()]);
        Ok(TruncatedPass {
            youngs,
            initial,
            replayed_substeps: 0,
        })
    }

    /// Adds frame `k`'s adjoint (k ≥ 1) from `seed` = `∂L/∂(state k)` to
    /// the pass, starting from what [`MpmSimulator::extend_rollout_kept`]
    /// left when frame k was the last one run (else it replays the frame
    /// as [`MpmSimulator::backward`] does), then frees the frame's
    /// checkpoints. Refused when the rollout is stale or `k` is not one of
    /// its frames.
    pub fn truncated_frame(
        &self,
        ctx: &GpuContext,
        pass: &mut TruncatedPass,
        rollout: &mut Rollout,
        k: usize,
        seed: &GpuBuffer,
        work: &mut BackwardWork,
    ) -> Result<(), MpmError> {
        rollout.check_current(self)?;
        if k == 0 || k >= rollout.frames.len() {
            return Err(MpmError::InvalidInput(format!(
                "a truncated pass back-propagates frames 1..={}, not {k}",
                rollout.frames.len() - 1
            )));
        }
        let every = self.checkpoint_every(rollout.kept_checkpoint_every());
        let work = work.prepare(ctx, self, every)?;
        if rollout.kept_every(k, every).is_none() {
            work.ensure_checkpoints(ctx, self)?;
        }
        let start = rollout.frame_start(k, every);
        let (slot, kept_last) = work.take_slot(start.segment);
        let work = &*work;
        // Frame 1's adjoint is ∂L/∂(state 0); the others' ∂L/∂(state k − 1)
        // is discarded (the state at k − 1 is a constant).
        let target = if k == 1 {
            &pass.initial
        } else {
            &work.frame_grads[1]
        };
        let mut encoder = crate::gpu::encoder(ctx, "mpm truncated frame");
        self.encode_frame_adjoint(
            ctx,
            &mut encoder,
            work,
            slot,
            start,
            kept_last,
            seed,
            target,
            &pass.youngs,
            &mut pass.replayed_substeps,
        );
        ctx.queue.submit([encoder.finish()]);
        // The bind groups hold the rollout's and the pass's buffers.
        self.release_bind_groups();
        ctx.check()?;
        rollout.release_checkpoints(k);
        Ok(())
    }

    /// The pass's gradients (as [`MpmSimulator::backward`] returns them).
    pub fn truncated_finish(
        &self,
        ctx: &GpuContext,
        pass: TruncatedPass,
    ) -> Result<MpmGradients, MpmError> {
        let colliders = self.config().colliders.len();
        let friction = ctx.storage_zeroed::<f32>("mpm friction grad", colliders.max(1))?;
        let poisson = ctx.storage_zeroed::<f32>("mpm poisson grad out", self.particle_count())?;
        self.copy_parameter_gradients(ctx, &friction, &poisson);
        Ok(MpmGradients {
            youngs: pass.youngs,
            initial_state: pass.initial,
            poisson,
            friction,
            colliders,
            replayed_substeps: pass.replayed_substeps,
        })
    }
}
