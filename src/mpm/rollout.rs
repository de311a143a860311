//! Rollouts over frames and their backward pass (DESIGN.md § Adjoint,
//! Memory; § Loss, parameters, fit).
//!
//! Forward: [`MpmSimulator::rollout`] keeps the state (x, v, C, F) at every
//! frame boundary and checks health once per frame; inside frames it keeps
//! nothing unless asked to ([`RolloutOptions::keep_checkpoints`], below).
//!
//! Backward: [`MpmSimulator::backward`] takes `∂L/∂(state at frame k)` for any
//! set of frames and returns `∂L/∂E` per particle and `∂L/∂(state at frame
//! 0)` (whose `v` part is the initial-velocity gradient). Inside a frame of
//! S substeps it keeps a state every K substeps (checkpoints, at the starts
//! of ⌈S/K⌉ segments: the first takes the remainder of S/K, the others K
//! substeps, `segment_span`), then replays each segment in reverse order,
//! keeping its K states, and runs the substep adjoints over them: ⌈S/K⌉ + K
//! states per frame, never S. The replay of a segment also keeps each
//! substep's grid (within [`KEPT_GRIDS_BUDGET_BYTES`]), so a substep adjoint
//! runs G2P*, grid update* and P2G* only, without recomputing P2G and the
//! grid update; the particle side of G2P* (computed by P2G*) also reads
//! the v and C of the state the substep produced. K = S is "store everything" (one segment); the default is the
//! K of the rollout's kept checkpoints if it kept them, else ⌈√S⌉.
//!
//! A rollout run with [`RolloutOptions::keep_checkpoints`] also keeps each
//! frame's in-frame checkpoints (⌈S/K⌉ − 1 states per frame, written by the
//! forward substeps themselves, at no extra time), and a backward pass with
//! the same K starts from them instead of recomputing them: per frame it
//! then runs S replayed substeps and S substep adjoints instead of also
//! S − K forward substeps (case (a) of `physfit bench mpm`: 33 of 40).
//! Such a rollout also leaves its last frame's last segment (K states and
//! K grids) in the backward pass's buffers, and the backward of that frame,
//! if it comes next with the same K, starts there: it replays S − K
//! substeps instead of S (the whole frame at K = S: no replay at all).
//! Worth it where memory allows, e.g. stage 2 of the fit, whose backward of
//! frame k follows its forward. The kept states and grids belong to the
//! frame states and Young's moduli the rollout ran with: a caller that
//! replaces `Rollout::frames[k − 1]`, or calls `set_youngs`, before the
//! backward must not backpropagate frame k through them (run a new
//! rollout). `MpmGradients::replayed_substeps` says how many forward
//! substeps a backward pass ran.
//!
//! [`GradientFlow::Truncated`] is stage 2 of the fit: the state at frame k−1
//! is a constant, so each frame's gradient flows through its own substeps
//! only and the per-frame `∂L/∂E` are summed.
//!
//! Typical use by the fit (all particle buffers use [`super::layout`]):
//!
//! ```no_run
//! # use physfit::gpu::GpuContext;
//! # use physfit::mpm::*;
//! # fn f(ctx: &GpuContext, config: &MpmConfig, start: &ParticleState,
//! #      youngs: &[f32], volume: f64, anchored: Vec<bool>,
//! #      dl_dstate_3: &physfit::gpu::GpuBuffer) -> Result<(), MpmError> {
//! let sim = MpmSimulator::new(ctx, config, &MpmSetup {
//!     particle_volume: volume, anchored, youngs_max: 10f64.powf(8.7) })?;
//! sim.set_youngs(ctx, youngs)?;
//! let rollout = sim.rollout(ctx, start, 3)?;          // frames 0..=3 on the GPU
//! // ... render rollout.frames[k], get ∂L/∂(state k) as GPU buffers ...
//! let g = sim.backward(ctx, &rollout,
//!     &[FrameGradient { frame: 3, grad: dl_dstate_3 }],
//!     &BackwardOptions { flow: GradientFlow::Full, checkpoint_every: None })?;
//! let (dl_de, dl_dv0) = (g.youngs, g.initial_state.v);
//! # Ok(()) }
//! ```

use super::error::MpmError;
use super::layout::{ParticleState, STATE_STRIDE};
use super::simulator::{MpmSimulator, StageBuffers, SubstepGrid};
use crate::gpu::{GpuBuffer, GpuContext};
use std::sync::atomic::{AtomicU64, Ordering};

/// States at frame boundaries: `frames[0]` is the initial state, `frames[k]`
/// the state at time k/fps.
pub struct Rollout {
    /// One state buffer (24 f32 per particle, [`super::layout`]) per frame.
    pub frames: Vec<GpuBuffer>,
    /// Unique per rollout: names the segment a forward left in the
    /// simulator's [`FrameWork`] ([`KeptSegment`]).
    id: u64,
    /// `checkpoints[k − 1]`: frame k's in-frame checkpoints, when the
    /// rollout kept them ([`RolloutOptions::keep_checkpoints`]).
    checkpoints: Vec<Option<FrameCheckpoints>>,
}

impl Rollout {
    /// K of the in-frame checkpoints this rollout kept, if it kept them.
    pub fn kept_checkpoint_every(&self) -> Option<u32> {
        self.checkpoints.iter().flatten().map(|c| c.every).next()
    }

    /// Frame `k`'s kept in-frame checkpoints (the states at the starts of
    /// segments 1..⌈S/K⌉ − 1 of the substeps from frame k − 1 to k: the
    /// first segment takes the remainder of S/K substeps, the others K),
    /// if the rollout kept them.
    pub fn kept_checkpoints(&self, k: usize) -> Option<&[GpuBuffer]> {
        self.checkpoints
            .get(k.checked_sub(1)?)?
            .as_ref()
            .map(|c| c.states.as_slice())
    }

    /// Frame k's start state and its kept checkpoints if they were kept
    /// every `every` substeps.
    fn frame_start(&self, k: usize, every: u32) -> FrameStart<'_> {
        FrameStart {
            state: &self.frames[k - 1],
            kept: self.kept_every(k, every),
            segment: KeptSegment {
                rollout: self.id,
                frame: k,
            },
        }
    }

    /// Frame k's kept checkpoints if they were kept every `every` substeps.
    fn kept_every(&self, k: usize, every: u32) -> Option<&[GpuBuffer]> {
        self.checkpoints
            .get(k.checked_sub(1)?)?
            .as_ref()
            .filter(|c| c.every == every)
            .map(|c| c.states.as_slice())
    }
}

/// Where the backward of one frame starts: the state before its first
/// substep and, if the rollout kept them, its in-frame checkpoints and its
/// last segment.
struct FrameStart<'a> {
    state: &'a GpuBuffer,
    kept: Option<&'a [GpuBuffer]>,
    /// The frame's last segment, which the forward may have left in the
    /// backward pass's buffers.
    segment: KeptSegment,
}

/// Substeps `[start, start + len)` of segment `j` (0-based) of a frame of
/// `substeps` substeps with checkpoints every `every`: ⌈S/K⌉ segments, the
/// first taking the remainder (1..=K substeps) and the others K each, so
/// that the last one, which a forward can leave kept for the backward pass
/// ([`KeptSegment`]), is a full K. Checkpoint j (1-based) is the state at
/// the start of segment j.
pub(crate) fn segment_span(substeps: u32, every: u32, j: u32) -> (u32, u32) {
    let segments = substeps.div_ceil(every);
    let first = substeps - (segments - 1) * every;
    if j == 0 {
        (0, first)
    } else {
        (first + (j - 1) * every, every)
    }
}

/// Source of [`Rollout`] ids.
static NEXT_ROLLOUT_ID: AtomicU64 = AtomicU64::new(1);

/// The last segment of frame `frame` of rollout `rollout`, whose states and
/// grids a forward left in the simulator's [`FrameWork`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeptSegment {
    rollout: u64,
    frame: usize,
}

/// What a forward frame keeps on its way ([`MpmSimulator::run_frame_through`]):
/// the states at the segment starts into `checkpoints` (⌈S/K⌉ − 1
/// buffers) and, with `last_segment`, the states and grids of the frame's
/// last segment into that [`FrameWork`].
#[derive(Clone, Copy)]
pub(crate) struct KeptThrough<'a> {
    pub(crate) every: u32,
    pub(crate) checkpoints: &'a [GpuBuffer],
    pub(crate) last_segment: Option<&'a FrameWork>,
}

/// One frame's states at the starts of segments 1..⌈S/K⌉ − 1.
struct FrameCheckpoints {
    every: u32,
    states: Vec<GpuBuffer>,
}

/// Options of [`MpmSimulator::rollout_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RolloutOptions {
    /// Keep a state every K substeps of every frame (the checkpoints), so
    /// that [`MpmSimulator::backward`] with the same K does not recompute
    /// them, and leave the last frame's last segment (K states and grids)
    /// in the simulator for the backward of that frame. Costs ⌈S/K⌉ − 1
    /// state buffers per frame, and the backward pass's buffers are
    /// allocated by the forward. Off by default (frame states only).
    pub keep_checkpoints: bool,
    /// K of the kept checkpoints: `None` = ⌈√S⌉ (the backward's default);
    /// clamped to 1..=S. Ignored unless `keep_checkpoints`.
    pub checkpoint_every: Option<u32>,
}

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
    /// checkpoints ([`RolloutOptions`]) if it kept them, else ⌈√substeps⌉.
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

/// Gradients returned by [`MpmSimulator::backward`].
#[derive(Clone, Debug)]
pub struct MpmGradients {
    /// `∂L/∂E` per particle.
    pub youngs: Vec<f32>,
    /// `∂L/∂(state at frame 0)`; `.v` is the initial-velocity gradient. In
    /// [`GradientFlow::Truncated`] mode only frames 0 and 1 contribute.
    pub initial_state: ParticleState,
    /// Forward substeps the pass ran again (checkpoints it had to recompute
    /// and segment replays): what checkpointing cost on top of the substep
    /// adjoints. Per frame (S − K) + S when it recomputes the checkpoints,
    /// S when the rollout kept them, and K fewer for the frame whose last
    /// segment the forward kept ([`RolloutOptions::keep_checkpoints`]);
    /// without kept grids (over [`KEPT_GRIDS_BUDGET_BYTES`]) each inner
    /// segment's replay stops one substep short.
    pub replayed_substeps: u64,
}

impl MpmSimulator {
    /// Simulates `frames` frames from `initial`, keeping every frame state.
    /// Stops with [`MpmError::NonFinite`] / [`MpmError::LeftBox`] naming the
    /// frame and substep when the run breaks down (no state is returned).
    pub fn rollout(
        &self,
        ctx: &GpuContext,
        initial: &ParticleState,
        frames: u32,
    ) -> Result<Rollout, MpmError> {
        self.rollout_with(ctx, initial, frames, &RolloutOptions::default())
    }

    /// [`MpmSimulator::rollout`] with options (in-frame checkpoints).
    pub fn rollout_with(
        &self,
        ctx: &GpuContext,
        initial: &ParticleState,
        frames: u32,
        options: &RolloutOptions,
    ) -> Result<Rollout, MpmError> {
        let first = self.upload_state(ctx, "mpm frame 0", initial)?;
        self.rollout_from_with(ctx, first, frames, options)
    }

    /// [`MpmSimulator::rollout`] from a state already on the GPU (not
    /// validated on the host: the first frame's health check catches a
    /// non-finite or out-of-box start).
    pub fn rollout_from(
        &self,
        ctx: &GpuContext,
        initial: GpuBuffer,
        frames: u32,
    ) -> Result<Rollout, MpmError> {
        self.rollout_from_with(ctx, initial, frames, &RolloutOptions::default())
    }

    /// [`MpmSimulator::rollout_from`] with options (in-frame checkpoints).
    pub fn rollout_from_with(
        &self,
        ctx: &GpuContext,
        initial: GpuBuffer,
        frames: u32,
        options: &RolloutOptions,
    ) -> Result<Rollout, MpmError> {
        let every = options
            .keep_checkpoints
            .then(|| self.checkpoint_every(options.checkpoint_every));
        let id = NEXT_ROLLOUT_ID.fetch_add(1, Ordering::Relaxed);
        let mut states = vec![initial];
        let mut checkpoints = Vec::with_capacity(frames as usize);
        for k in 1..=frames {
            let next = self.state_buffer(ctx, &format!("mpm frame {k}"))?;
            let kept = match every {
                Some(every) => Some(FrameCheckpoints {
                    every,
                    states: self.checkpoint_buffers(ctx, every, &format!("frame {k} "))?,
                }),
                None => None,
            };
            let start = &states[(k - 1) as usize];
            match &kept {
                // The last frame also leaves its last segment in the
                // backward pass's buffers.
                Some(c) if k == frames => {
                    self.run_frame_keeping_last_segment(ctx, start, c, &next, id, k)?
                }
                Some(c) => {
                    let through = KeptThrough {
                        every: c.every,
                        checkpoints: &c.states,
                        last_segment: None,
                    };
                    self.run_frame_through(ctx, start, Some(through), &next, k)?
                }
                None => self.run_frame_through(ctx, start, None, &next, k)?,
            }
            states.push(next);
            checkpoints.push(kept);
        }
        Ok(Rollout {
            frames: states,
            id,
            checkpoints,
        })
    }

    /// Runs frame `k` of rollout `id` keeping its checkpoints and, when the
    /// backward pass's buffers for K keep grids, its last segment's states
    /// and grids there ([`KeptSegment`]): the backward of this frame then
    /// starts without replaying that segment.
    fn run_frame_keeping_last_segment(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        kept: &FrameCheckpoints,
        end: &GpuBuffer,
        id: u64,
        k: u32,
    ) -> Result<(), MpmError> {
        let mut work = self.take_frame_work(ctx, kept.every)?;
        // Whatever segment the buffers held is overwritten from here on.
        work.kept_segment = None;
        let through = KeptThrough {
            every: kept.every,
            checkpoints: &kept.states,
            last_segment: work.keeps_grids().then_some(&work),
        };
        let keeping = through.last_segment.is_some();
        let result = self.run_frame_through(ctx, start, Some(through), end, k);
        if result.is_ok() && keeping {
            work.kept_segment = Some(KeptSegment {
                rollout: id,
                frame: k as usize,
            });
        }
        self.keep_frame_work(work);
        result
    }

    /// K for a requested `checkpoint_every` (`None` = ⌈√S⌉), clamped to 1..=S.
    pub fn checkpoint_every(&self, requested: Option<u32>) -> u32 {
        let substeps = self.config().substeps_per_frame;
        requested
            .unwrap_or_else(|| (substeps as f64).sqrt().ceil() as u32)
            .clamp(1, substeps)
    }

    /// ⌈S/K⌉ − 1 state buffers for a frame's in-frame checkpoints.
    pub(crate) fn checkpoint_buffers(
        &self,
        ctx: &GpuContext,
        every: u32,
        label: &str,
    ) -> Result<Vec<GpuBuffer>, MpmError> {
        let segments = self.config().substeps_per_frame.div_ceil(every);
        (1..segments)
            .map(|j| self.state_buffer(ctx, &format!("mpm {label}checkpoint {j}")))
            .collect()
    }

    /// Back-propagates `∂L/∂(frame states)` to `∂L/∂E` and `∂L/∂(frame 0)`.
    pub fn backward(
        &self,
        ctx: &GpuContext,
        rollout: &Rollout,
        grads: &[FrameGradient],
        options: &BackwardOptions,
    ) -> Result<MpmGradients, MpmError> {
        let result = self.backward_unreleased(ctx, rollout, grads, options);
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
        let last = match by_frame.iter().rposition(|g| g.is_some()) {
            Some(l) => l,
            None => {
                return Ok(MpmGradients {
                    youngs: vec![0.0; self.particle_count()],
                    initial_state: ParticleState::zeros(self.particle_count()),
                    replayed_substeps: 0,
                })
            }
        };
        let mut work = self.take_frame_work(ctx, every)?;
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
        let result = self.backward_on(ctx, rollout, &by_frame, last, options, &mut work);
        self.keep_frame_work(work);
        result
    }

    /// The backward pass proper, on buffers kept between calls.
    fn backward_on(
        &self,
        ctx: &GpuContext,
        rollout: &Rollout,
        by_frame: &[Option<&GpuBuffer>],
        last: usize,
        options: &BackwardOptions,
        work: &mut FrameWork,
    ) -> Result<MpmGradients, MpmError> {
        let youngs_grad = ctx.storage_zeroed::<f32>("mpm youngs grad", self.particle_count())?;
        let initial = self.state_buffer(ctx, "mpm grad frame 0")?;
        let mut replayed_substeps = 0;
        let mut encoder = crate::gpu::encoder(ctx, "mpm backward start");
        self.encode_clear_grid_velocity_grad(&mut encoder);
        ctx.queue.submit([encoder.finish()]);
        match options.flow {
            GradientFlow::Full => {
                // adjoint[k]: ∂L/∂(state k) including every later frame.
                let mut adj = self.state_buffer(ctx, "mpm grad (frame k)")?;
                let mut prev = self.state_buffer(ctx, "mpm grad (frame k-1)")?;
                for k in (1..=last).rev() {
                    let mut encoder = crate::gpu::encoder(ctx, "mpm backward frame");
                    if let Some(g) = by_frame[k] {
                        self.encode_add_state(ctx, &mut encoder, g, &adj);
                    }
                    let target = if k == 1 { &initial } else { &prev };
                    self.encode_frame_adjoint(
                        ctx,
                        &mut encoder,
                        work,
                        rollout.frame_start(k, work.every),
                        &adj,
                        target,
                        &youngs_grad,
                        &mut replayed_substeps,
                    );
                    ctx.queue.submit([encoder.finish()]);
                    ctx.check()?;
                    if k > 1 {
                        std::mem::swap(&mut adj, &mut prev);
                    }
                }
            }
            GradientFlow::Truncated => {
                let scratch = self.state_buffer(ctx, "mpm grad (frame k-1, discarded)")?;
                // Last frame first, as in the full flow: it may find its
                // last segment kept by the forward.
                for k in (1..=last).rev() {
                    let Some(g) = by_frame[k] else { continue };
                    let target = if k == 1 { &initial } else { &scratch };
                    let mut encoder = crate::gpu::encoder(ctx, "mpm backward frame (truncated)");
                    self.encode_frame_adjoint(
                        ctx,
                        &mut encoder,
                        work,
                        rollout.frame_start(k, work.every),
                        g,
                        target,
                        &youngs_grad,
                        &mut replayed_substeps,
                    );
                    ctx.queue.submit([encoder.finish()]);
                    ctx.check()?;
                }
            }
        }
        if let Some(g) = by_frame[0] {
            let mut encoder = crate::gpu::encoder(ctx, "mpm backward frame 0");
            self.encode_add_state(ctx, &mut encoder, g, &initial);
            ctx.queue.submit([encoder.finish()]);
        }
        Ok(MpmGradients {
            youngs: ctx.read_buffer(&youngs_grad)?,
            initial_state: self.read_state(ctx, &initial)?,
            replayed_substeps,
        })
    }

    /// Records the adjoint of one frame: `grad_end = ∂L/∂(state at its end)`
    /// → `grad_start = ∂L/∂(state at its start)`, adding `∂L/∂E`.
    #[allow(clippy::too_many_arguments)]
    fn encode_frame_adjoint(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        work: &mut FrameWork,
        start: FrameStart,
        grad_end: &GpuBuffer,
        grad_start: &GpuBuffer,
        youngs_grad: &GpuBuffer,
        replayed_substeps: &mut u64,
    ) {
        let substeps = self.config().substeps_per_frame;
        let every = work.every;
        let segments = substeps.div_ceil(every);
        let FrameStart {
            state: start,
            kept,
            segment,
        } = start;
        // The forward's kept last segment is used once: every replay below
        // overwrites the buffers.
        let kept_last = work.kept_segment.take() == Some(segment);
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
            // work.segment[t−1]; the state after the segment's last substep
            // is the next checkpoint, except after the frame's last
            // substep, which the replay writes into work.segment[len − 1]
            // (each substep's P2G*, which holds G2P*'s particle side, reads
            // the v and C of the state the substep produced).
            let last_segment = j + 1 == segments;
            let replayed = if last_segment { len } else { len - 1 };
            let keep_grids = work.keeps_grids();
            if last_segment && kept_last {
                // Left by the forward (KeptSegment): states and grids.
            } else if keep_grids {
                self.encode_segment_keeping_grids(ctx, encoder, work, base, len, last_segment);
                *replayed_substeps += len as u64;
            } else {
                for t in 1..=replayed {
                    let from = if t == 1 { base } else { &work.segment[t - 2] };
                    self.encode_substeps(ctx, encoder, from, &work.segment[t - 1], 1);
                }
                *replayed_substeps += replayed as u64;
            }
            for t in (0..len).rev() {
                let g = first + t as u32;
                let state = if t == 0 { base } else { &work.segment[t - 1] };
                let state_next = if t < replayed {
                    &work.segment[t]
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
                let kept = keep_grids.then(|| &work.grids[t]);
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

/// Most bytes the backward pass spends on keeping the grids of a segment's
/// substeps (K grids of 36 B per node each; with binned scatters 40 B per
/// node + 4 B per particle: 7 × 9.9 MB for a 64³ grid at K = 7 on a GPU,
/// 7 × 11 MB on lavapipe, 28 × 9.9 MB at K = 28). Above it, each substep adjoint recomputes
/// its grid instead (P2G + grid update again, ~40% more backward time on
/// lavapipe).
pub const KEPT_GRIDS_BUDGET_BYTES: u64 = 512 << 20;

/// Buffers of a frame's backward pass: ⌈S/K⌉ − 1 checkpoints (allocated
/// only when some frame's are not kept by the rollout), K segment states,
/// two substep adjoints (plus the frame-boundary states the rollout already
/// holds) and, within [`KEPT_GRIDS_BUDGET_BYTES`], K substep grids so that
/// the replay of a segment keeps the grid of each substep for its adjoint
/// instead of recomputing it. A forward that keeps checkpoints leaves its
/// last frame's last segment here ([`KeptSegment`]). The simulator keeps
/// them between calls ([`MpmSimulator::release_backward_buffers`] frees
/// them).
pub(crate) struct FrameWork {
    every: u32,
    checkpoints: Vec<GpuBuffer>,
    segment: Vec<GpuBuffer>,
    grads: [GpuBuffer; 2],
    grids: Vec<SubstepGrid>,
    grids_kept: bool,
    /// The scatter variant the grids were made for (binned ones hold cell
    /// lists).
    binned: bool,
    /// The segment whose states and grids `segment` and `grids` hold, when
    /// a forward left them (None once a replay or another forward may have
    /// overwritten them).
    kept_segment: Option<KeptSegment>,
}

impl FrameWork {
    pub(crate) fn new(ctx: &GpuContext, sim: &MpmSimulator, every: u32) -> Result<Self, MpmError> {
        let segment = (1..=every)
            .map(|t| sim.state_buffer(ctx, &format!("mpm segment state {t}")))
            .collect::<Result<_, _>>()?;
        let grids_kept = Self::keeps_grids_for(sim, every);
        let grids = if grids_kept {
            (0..every as usize)
                .map(|t| sim.new_substep_grid(ctx, t))
                .collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        Ok(Self {
            every,
            checkpoints: Vec::new(),
            segment,
            grids,
            grids_kept,
            binned: sim.binned_scatters(),
            kept_segment: None,
            grads: [
                sim.state_buffer(ctx, "mpm substep grad A")?,
                sim.state_buffer(ctx, "mpm substep grad B")?,
            ],
        })
    }

    /// Whether these buffers serve a backward pass with checkpoints every
    /// `every` substeps under the simulator's current kept-grids budget and
    /// scatter variant (state sizes are fixed for a simulator; a grid's
    /// holds cell lists only for binned scatters).
    pub(crate) fn fits(&self, sim: &MpmSimulator, every: u32) -> bool {
        self.every == every
            && self.binned == sim.binned_scatters()
            && self.grids_kept == Self::keeps_grids_for(sim, every)
    }

    fn keeps_grids_for(sim: &MpmSimulator, every: u32) -> bool {
        every as u64 * sim.substep_grid_bytes() <= sim.kept_grids_budget()
    }

    /// Allocates the checkpoint buffers (for frames whose rollout kept none).
    fn ensure_checkpoints(&mut self, ctx: &GpuContext, sim: &MpmSimulator) -> Result<(), MpmError> {
        if self.checkpoints.is_empty() {
            self.checkpoints = sim.checkpoint_buffers(ctx, self.every, "")?;
        }
        Ok(())
    }

    /// Whether segment replays keep their substeps' grids.
    fn keeps_grids(&self) -> bool {
        self.grids_kept
    }
}

impl MpmSimulator {
    /// Records the `len` substeps of a segment from `base`, keeping grid t
    /// in `work.grids[t]` and the state after substep t in
    /// `work.segment[t]`, for t < len − 1 and, with `through_end`, for the
    /// last substep too (else its G2P is not run: the next checkpoint holds
    /// that state). Returns the state after the last substep when it was
    /// written. Needs `work.keeps_grids()`.
    pub(crate) fn encode_segment_keeping_grids<'w>(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        work: &'w FrameWork,
        base: &GpuBuffer,
        len: usize,
        through_end: bool,
    ) -> Option<&'w GpuBuffer> {
        debug_assert!(work.keeps_grids() && len >= 1 && len <= work.segment.len());
        let written = if through_end { len } else { len - 1 };
        for t in 0..len {
            let from = if t == 0 { base } else { &work.segment[t - 1] };
            let to = (t < written).then(|| &work.segment[t]);
            self.encode_substep_keeping_grid(ctx, encoder, from, to, &work.grids[t]);
        }
        through_end.then(|| &work.segment[len - 1])
    }
}
