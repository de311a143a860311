//! The backward pass over a rollout (docs/design.md § Adjoint, Memory; § Loss,
//! parameters, fit).
//!
//! [`MpmSimulator::backward`] takes `∂L/∂(state at frame k)` for any set of
//! frames and returns `∂L/∂E` per particle, `∂L/∂(state at frame 0)`
//! (whose `v` part is the initial-velocity gradient) and `∂L/∂μ` per
//! collider (friction coefficients; zero for the other rules) as GPU buffers
//! ([`MpmGradients`]; [`MpmGradients::read`] brings them to the host, which
//! a fit iteration does not need). Inside a frame of S substeps it keeps a
//! state every K substeps (checkpoints, at the starts of ⌈S/K⌉ segments:
//! the first takes the remainder of S/K, the others K substeps,
//! `segment_span`), then replays each segment in reverse order, keeping its
//! K states, and runs the substep adjoints over them: ⌈S/K⌉ + K states per
//! frame, never S. The replay of a segment also keeps each substep's grid
//! (within [`super::MpmOptions::kept_grids_budget`]), so a substep adjoint
//! runs G2P*, grid update* and P2G* only, without recomputing P2G and the
//! grid update; the particle side of G2P* (computed by P2G*) also reads the
//! v and C of the state the substep produced. K = S is "store everything"
//! (one segment); the default is the K of the rollout's kept checkpoints if
//! it kept them, else ⌈√S⌉. The buffers for all this are the caller's
//! [`BackwardWork`], reused from call to call. A frame whose whole run a
//! forward left in the work (in a slot of its own,
//! [`super::RolloutOptions::keep_every_substep`], or the last segment of
//! the last frame) is not replayed.
//!
//! A backward pass is refused ([`MpmError::StaleRollout`]) when the
//! simulator's Young's moduli changed after the rollout's forward run
//! ([`MpmSimulator::set_youngs`], [`MpmSimulator::youngs_buffer_mut`]):
//! its states, checkpoints and kept segment belong to the old moduli.
//!
//! [`GradientFlow::Truncated`] is stage 2 of the fit: the state at frame k−1
//! is a constant, so each frame's gradient flows through its own substeps
//! only and the per-frame `∂L/∂E` are summed.
//!
//! Per frame the pass records its substeps into one command encoder and
//! submits once (then checks for device errors); callers that batch
//! forward work differently can record it themselves
//! ([`MpmSimulator::encode_substep`], [`MpmSimulator::encode_add_state`]).
//!
//! Typical use by the fit (all particle buffers use [`super::layout`]):
//!
//! ```no_run
//! # use physfit::gpu::GpuContext;
//! # use physfit::mpm::*;
//! # fn f(ctx: &GpuContext, config: &MpmConfig, start: &ParticleState,
//! #      youngs: Vec<f32>, volume: f64, anchored: Vec<bool>,
//! #      dl_dstate_3: &physfit::gpu::GpuBuffer) -> Result<(), MpmError> {
//! let sim = MpmSimulator::new(ctx, config, &MpmSetup {
//!     particle_volume: volume, anchored, held_points: Vec::new(), youngs,
//!     youngs_max: 10f64.powf(8.7) })?;
//! let mut work = BackwardWork::new();       // reused by every iteration
//! let rollout = sim.rollout(ctx, start, 3)?;          // frames 0..=3 on the GPU
//! // ... render rollout.frames[k], get ∂L/∂(state k) as GPU buffers ...
//! let g = sim.backward(ctx, &rollout,
//!     &[FrameGradient { frame: 3, grad: dl_dstate_3 }],
//!     &BackwardOptions { flow: GradientFlow::Full, checkpoint_every: None },
//!     &mut work)?;
//! // g.youngs: ∂L/∂E, g.initial_state: ∂L/∂(state 0), both GPU buffers,
//! // for an optimiser kernel; an optimiser step that writes E goes through
//! // sim.youngs_buffer_mut(), after which `rollout` is stale.
//! # Ok(()) }
//! ```

use super::backward_work::{segment_span, BackwardWork, FrameBuffers};
use super::error::MpmError;
use super::layout::{ParticleState, STATE_STRIDE};
use super::rollout::{FrameStart, Rollout};
use super::simulator::MpmSimulator;
use super::substep::StageBuffers;
use crate::gpu::{GpuBuffer, GpuContext};

/// How far gradients flow back in [`MpmSimulator::backward`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradientFlow {
    /// Through the whole rollout back to frame 0 (fit stage 1).
    Full,
    /// Frame k's gradient flows through frame k's substeps only; the state
    /// at frame k−1 is a constant (fit stage 2).
    Truncated,
}

/// Options of the backward pass.
#[derive(Clone, Copy, Debug)]
pub struct BackwardOptions {
    /// Gradient flow.
    pub flow: GradientFlow,
    /// Keep every K-th substep state; `None` = the K of the rollout's kept
    /// checkpoints ([`super::RolloutOptions`]) if it kept them, else ⌈√substeps⌉.
    /// Values above the substep count mean "store every substep of the
    /// frame".
    pub checkpoint_every: Option<u32>,
}

impl Default for BackwardOptions {
    fn default() -> Self {
        Self {
            flow: GradientFlow::Full,
            checkpoint_every: None,
        }
    }
}

/// `∂L/∂(state at frame)` for one frame: a state-sized buffer.
pub struct FrameGradient<'a> {
    /// Frame index into [`Rollout::frames`].
    pub frame: usize,
    /// 24 f32 per particle (same layout as a state).
    pub grad: &'a GpuBuffer,
}

/// Gradients returned by [`MpmSimulator::backward`], on the GPU.
pub struct MpmGradients {
    /// `∂L/∂E` per particle (f32).
    pub youngs: GpuBuffer,
    /// `∂L/∂(state at frame 0)` (24 f32 per particle, [`super::layout`]);
    /// its `v` part is the initial-velocity gradient. In
    /// [`GradientFlow::Truncated`] mode only frames 0 and 1 contribute.
    pub initial_state: GpuBuffer,
    /// `∂L/∂ν` per particle (f32; [`MpmSimulator::set_poisson`]).
    pub poisson: GpuBuffer,
    /// `∂L/∂μ` per collider (f32; one zero when there are none): the
    /// friction coefficient's gradient for [`super::ContactRule::Friction`]
    /// colliders, 0 for the others.
    pub friction: GpuBuffer,
    /// Colliders of the simulation (entries of `friction` that count).
    pub(crate) colliders: usize,
    /// Forward substeps the pass ran again (checkpoints it had to recompute
    /// and segment replays): what checkpointing cost on top of the substep
    /// adjoints. Per frame (S − K) + S when it recomputes the checkpoints,
    /// S when the rollout kept them, and K fewer for the frame whose last
    /// segment the forward kept ([`RolloutOptions::keep_checkpoints`]);
    /// without kept grids (over the kept-grids budget) each inner
    /// segment's replay stops one substep short.
    ///
    /// [`RolloutOptions::keep_checkpoints`]: super::RolloutOptions::keep_checkpoints
    pub replayed_substeps: u64,
}

/// [`MpmGradients`] read back to the host (tests, reports).
#[derive(Clone, Debug)]
pub struct HostMpmGradients {
    /// `∂L/∂E` per particle.
    pub youngs: Vec<f32>,
    /// `∂L/∂(state at frame 0)`; `.v` is the initial-velocity gradient.
    pub initial_state: ParticleState,
    /// `∂L/∂ν` per particle.
    pub poisson: Vec<f32>,
    /// `∂L/∂μ` per collider (0 for colliders without friction).
    pub friction: Vec<f32>,
    /// As [`MpmGradients::replayed_substeps`].
    pub replayed_substeps: u64,
}

impl MpmGradients {
    /// Reads the gradients back (four readbacks: not for a fit iteration).
    pub fn read(&self, ctx: &GpuContext) -> Result<HostMpmGradients, MpmError> {
        let mut friction: Vec<f32> = ctx.read_buffer(&self.friction)?;
        friction.truncate(self.colliders);
        Ok(HostMpmGradients {
            friction,
            youngs: ctx.read_buffer(&self.youngs)?,
            poisson: ctx.read_buffer(&self.poisson)?,
            initial_state: ParticleState::from_packed(
                &ctx.read_buffer::<f32>(&self.initial_state)?,
            ),
            replayed_substeps: self.replayed_substeps,
        })
    }
}

impl MpmSimulator {
    /// Back-propagates `∂L/∂(frame states)` to `∂L/∂E` and `∂L/∂(frame 0)`,
    /// on the buffers of `work` (allocated on first use, reused while they
    /// fit). Refused when `rollout` is stale (module doc).
    pub fn backward(
        &self,
        ctx: &GpuContext,
        rollout: &Rollout,
        grads: &[FrameGradient],
        options: &BackwardOptions,
        work: &mut BackwardWork,
    ) -> Result<MpmGradients, MpmError> {
        rollout.check_current(self)?;
        let result = self.backward_unreleased(ctx, rollout, grads, options, work);
        // The bind groups cached during the pass hold the rollout's and this
        // call's buffers: let them go.
        self.release_bind_groups();
        result
    }

    fn backward_unreleased(
        &self,
        ctx: &GpuContext,
        rollout: &Rollout,
        grads: &[FrameGradient],
        options: &BackwardOptions,
        work: &mut BackwardWork,
    ) -> Result<MpmGradients, MpmError> {
        let floats = (self.particle_count() * STATE_STRIDE) as u64 * 4;
        let mut by_frame: Vec<Option<&GpuBuffer>> = vec![None; rollout.frames.len()];
        for g in grads {
            if g.frame >= rollout.frames.len() {
                return Err(MpmError::InvalidInput(format!(
                    "gradient for frame {} but the rollout has frames 0..={}",
                    g.frame,
                    rollout.frames.len() - 1
                )));
            }
            if g.grad.size() != floats {
                return Err(MpmError::InvalidInput(format!(
                    "gradient '{}' has {} bytes, a state has {floats}",
                    g.grad.label(),
                    g.grad.size()
                )));
            }
            if by_frame[g.frame].replace(g.grad).is_some() {
                return Err(MpmError::InvalidInput(format!(
                    "two gradients for frame {}",
                    g.frame
                )));
            }
        }
        // The rollout's kept checkpoints set the default K.
        let every = self.checkpoint_every(
            options
                .checkpoint_every
                .or_else(|| rollout.kept_checkpoint_every()),
        );
        let youngs_grad = ctx.storage_zeroed::<f32>("mpm youngs grad", self.particle_count())?;
        let initial = self.state_buffer(ctx, "mpm grad frame 0")?;
        let colliders = self.config().colliders.len();
        let friction = ctx.storage_zeroed::<f32>("mpm friction grad", colliders.max(1))?;
        let poisson = ctx.storage_zeroed::<f32>("mpm poisson grad out", self.particle_count())?;
        let Some(last) = by_frame.iter().rposition(|g| g.is_some()) else {
            return Ok(MpmGradients {
                youngs: youngs_grad,
                poisson,
                initial_state: initial,
                friction,
                colliders,
                replayed_substeps: 0,
            });
        };
        let work = work.prepare(ctx, self, every)?;
        // Frames that will be backpropagated without kept checkpoints need
        // the work's own.
        let backpropagated = |k: &usize| match options.flow {
            GradientFlow::Full => true,
            GradientFlow::Truncated => by_frame[*k].is_some(),
        };
        if (1..=last)
            .filter(backpropagated)
            .any(|k| rollout.kept_every(k, every).is_none())
        {
            work.ensure_checkpoints(ctx, self)?;
        }
        let replayed_substeps = self.backward_on(
            ctx,
            rollout,
            &by_frame,
            last,
            options,
            work,
            &youngs_grad,
            &initial,
        )?;
        self.copy_parameter_gradients(ctx, &friction, &poisson);
        Ok(MpmGradients {
            youngs: youngs_grad,
            poisson,
            initial_state: initial,
            friction,
            colliders,
            replayed_substeps,
        })
    }

    /// The substep adjoints added ∂L/∂μ and ∂L/∂ν into the simulator's
    /// buffers, which the next backward pass zeroes: copies them out.
    pub(crate) fn copy_parameter_gradients(
        &self,
        ctx: &GpuContext,
        friction: &GpuBuffer,
        poisson: &GpuBuffer,
    ) {
        let mut encoder = crate::gpu::encoder(ctx, "mpm backward friction grad");
        encoder.copy_buffer_to_buffer(
            self.collider_grad.raw(),
            0,
            friction.raw(),
            0,
            friction.size(),
        );
        encoder.copy_buffer_to_buffer(self.poisson_grad.raw(), 0, poisson.raw(), 0, poisson.size());
        ctx.queue.submit([encoder.finish()]);
    }

    /// The backward pass proper, on buffers kept between calls: adds into
    /// `youngs_grad` and writes `initial`; returns the replayed substeps.
    #[allow(clippy::too_many_arguments)]
    fn backward_on(
        &self,
        ctx: &GpuContext,
        rollout: &Rollout,
        by_frame: &[Option<&GpuBuffer>],
        last: usize,
        options: &BackwardOptions,
        work: &mut FrameBuffers,
        youngs_grad: &GpuBuffer,
        initial: &GpuBuffer,
    ) -> Result<u64, MpmError> {
        let mut replayed_substeps = 0;
        let mut encoder = crate::gpu::encoder(ctx, "mpm backward start");
        self.encode_clear_grid_velocity_grad(&mut encoder);
        encoder.clear_buffer(self.collider_grad.raw(), 0, None);
        encoder.clear_buffer(self.poisson_grad.raw(), 0, None);
        // frame_grads[cur]: ∂L/∂(state k) including every later frame (full
        // flow); the other: ∂L/∂(state k − 1), written by frame k's adjoint.
        for g in &work.frame_grads {
            encoder.clear_buffer(g.raw(), 0, None);
        }
        ctx.queue.submit([encoder.finish()]);
        let mut cur = 0;
        for k in (1..=last).rev() {
            let seed = by_frame[k];
            if options.flow == GradientFlow::Truncated && seed.is_none() {
                continue;
            }
            let start = rollout.frame_start(k, work.every);
            // The forward's kept last segment is used once: every replay
            // overwrites the buffers.
            let (slot, kept_last) = work.take_slot(start.segment);
            let work = &*work;
            let (adj, prev) = (&work.frame_grads[cur], &work.frame_grads[1 - cur]);
            let target = if k == 1 { initial } else { prev };
            let mut encoder = crate::gpu::encoder(ctx, "mpm backward frame");
            let grad_end = match options.flow {
                GradientFlow::Full => {
                    if let Some(g) = seed {
                        self.encode_add_state(ctx, &mut encoder, g, adj);
                    }
                    adj
                }
                // Frame k's seed alone; ∂L/∂(state k − 1) of frames k > 1
                // is discarded (written into `prev`, never read).
                GradientFlow::Truncated => seed.expect("skipped above"),
            };
            self.encode_frame_adjoint(
                ctx,
                &mut encoder,
                work,
                slot,
                start,
                kept_last,
                grad_end,
                target,
                youngs_grad,
                &mut replayed_substeps,
            );
            ctx.queue.submit([encoder.finish()]);
            ctx.check()?;
            if options.flow == GradientFlow::Full {
                cur = 1 - cur;
            }
        }
        if let Some(g) = by_frame[0] {
            let mut encoder = crate::gpu::encoder(ctx, "mpm backward frame 0");
            self.encode_add_state(ctx, &mut encoder, g, initial);
            ctx.queue.submit([encoder.finish()]);
        }
        Ok(replayed_substeps)
    }

    /// Records the adjoint of one frame: `grad_end = ∂L/∂(state at its end)`
    /// → `grad_start = ∂L/∂(state at its start)`, adding `∂L/∂E`; with
    /// `kept_last`, the frame's last segment is the one the forward left in
    /// slot `slot` of `work` (else it is replayed into slot 0, `slot`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn encode_frame_adjoint(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        work: &FrameBuffers,
        slot: usize,
        start: FrameStart,
        kept_last: bool,
        grad_end: &GpuBuffer,
        grad_start: &GpuBuffer,
        youngs_grad: &GpuBuffer,
        replayed_substeps: &mut u64,
    ) {
        let substeps = self.config().substeps_per_frame;
        let every = work.every;
        let segments = substeps.div_ceil(every);
        let FrameStart {
            state: start, kept, ..
        } = start;
        let segment = &work.segments[slot];
        // Checkpoints at the starts of segments j ≥ 1 (segment 0 starts at
        // `start`): the rollout's own when it kept them, else recomputed.
        let checkpoints = match kept {
            Some(kept) => kept,
            None => {
                for j in 1..segments as usize {
                    let from = if j == 1 {
                        start
                    } else {
                        &work.checkpoints[j - 2]
                    };
                    let (_, len) = segment_span(substeps, every, j as u32 - 1);
                    self.encode_substeps(ctx, encoder, from, &work.checkpoints[j - 1], len);
                    *replayed_substeps += len as u64;
                }
                &work.checkpoints
            }
        };
        for j in (0..segments).rev() {
            let base = if j == 0 {
                start
            } else {
                &checkpoints[j as usize - 1]
            };
            let (first, len) = segment_span(substeps, every, j);
            let len = len as usize;
            // Segment states: t = 0 is the checkpoint, t ≥ 1 in
            // segment.states[t−1]; the state after the segment's last substep
            // is the next checkpoint, except after the frame's last
            // substep, which the replay writes into segment.states[len − 1]
            // (each substep's P2G*, which holds G2P*'s particle side, reads
            // the v and C of the state the substep produced).
            let last_segment = j + 1 == segments;
            let replayed = if last_segment { len } else { len - 1 };
            let keep_grids = work.keeps_grids();
            if last_segment && kept_last {
                // Left by the forward (KeptSegment): states and grids.
            } else if keep_grids {
                self.encode_segment_keeping_grids(ctx, encoder, segment, base, len, last_segment);
                *replayed_substeps += len as u64;
            } else {
                for t in 1..=replayed {
                    let from = if t == 1 { base } else { &segment.states[t - 2] };
                    self.encode_substeps(ctx, encoder, from, &segment.states[t - 1], 1);
                }
                *replayed_substeps += replayed as u64;
            }
            for t in (0..len).rev() {
                let g = first + t as u32;
                let state = if t == 0 { base } else { &segment.states[t - 1] };
                let state_next = if t < replayed {
                    &segment.states[t]
                } else {
                    &checkpoints[j as usize]
                };
                let next = if g + 1 == substeps {
                    grad_end
                } else {
                    &work.grads[((g + 1) % 2) as usize]
                };
                let out = if g == 0 {
                    grad_start
                } else {
                    &work.grads[(g % 2) as usize]
                };
                let kept = keep_grids.then(|| &segment.grids[t]);
                let buffers = StageBuffers {
                    state,
                    next: state_next,
                    grad_next: next,
                    grad: out,
                    youngs_grad,
                };
                self.encode_substep_adjoint_with(ctx, encoder, &buffers, kept);
            }
        }
    }
}
