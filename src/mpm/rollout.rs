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
//! S substeps it keeps every K-th substep state (checkpoints), then replays
//! each segment of K substeps in reverse order, keeping its K states, and
//! runs the substep adjoints over them: ⌈S/K⌉ + K states per frame, never S.
//! The replay of a segment also keeps each substep's grid (within
//! [`KEPT_GRIDS_BUDGET_BYTES`]), so a substep adjoint runs G2P*, grid
//! update* and P2G* only, without recomputing P2G and the grid update.
//! K = S is "store everything" (one segment); the default is the K of the
//! rollout's kept checkpoints if it kept them, else ⌈√S⌉.
//!
//! A rollout run with [`RolloutOptions::keep_checkpoints`] also keeps each
//! frame's in-frame checkpoints (⌈S/K⌉ − 1 states per frame, written by the
//! forward substeps themselves, at no extra time), and a backward pass with
//! the same K starts from them instead of recomputing them: per frame it
//! then runs S replayed substeps and S substep adjoints instead of also
//! (⌈S/K⌉ − 1)·K forward substeps (case (a) of `physfit bench mpm`: 35 of
//! 40). Worth it where memory allows, e.g. stage 2 of the fit, whose
//! backward of frame k follows its forward. The kept checkpoints belong to
//! the frame states the rollout computed: a caller that replaces
//! `Rollout::frames[k − 1]` must not backpropagate frame k through them.
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
use super::simulator::{MpmSimulator, SubstepGrid};
use crate::gpu::{GpuBuffer, GpuContext};

/// States at frame boundaries: `frames[0]` is the initial state, `frames[k]`
/// the state at time k/fps.
pub struct Rollout {
    /// One state buffer (24 f32 per particle, [`super::layout`]) per frame.
    pub frames: Vec<GpuBuffer>,
    /// `checkpoints[k − 1]`: frame k's in-frame checkpoints, when the
    /// rollout kept them ([`RolloutOptions::keep_checkpoints`]).
    checkpoints: Vec<Option<FrameCheckpoints>>,
}

impl Rollout {
    /// K of the in-frame checkpoints this rollout kept, if it kept them.
    pub fn kept_checkpoint_every(&self) -> Option<u32> {
        self.checkpoints.iter().flatten().map(|c| c.every).next()
    }

    /// Frame `k`'s kept in-frame checkpoints (the states after substeps
    /// j·K, j = 1..⌈S/K⌉ − 1, of the substeps from frame k − 1 to k), if the
    /// rollout kept them.
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
/// substep and, if the rollout kept them, its in-frame checkpoints.
struct FrameStart<'a> {
    state: &'a GpuBuffer,
    kept: Option<&'a [GpuBuffer]>,
}

/// One frame's states after substeps j·K, j = 1..⌈S/K⌉ − 1.
struct FrameCheckpoints {
    every: u32,
    states: Vec<GpuBuffer>,
}

/// Options of [`MpmSimulator::rollout_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RolloutOptions {
    /// Keep every K-th substep state of every frame, so that
    /// [`MpmSimulator::backward`] with the same K does not recompute them.
    /// Costs ⌈S/K⌉ − 1 state buffers per frame. Off by default (frame states
    /// only).
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
            let through = kept.as_ref().map(|c| (c.every, c.states.as_slice()));
            self.run_frame_through(ctx, &states[(k - 1) as usize], through, &next, k)?;
            states.push(next);
            checkpoints.push(kept);
        }
        Ok(Rollout {
            frames: states,
            checkpoints,
        })
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
                for (k, g) in by_frame.iter().enumerate().take(last + 1).skip(1) {
                    let Some(g) = *g else { continue };
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
    ) {
        let substeps = self.config().substeps_per_frame;
        let every = work.every;
        let segments = substeps.div_ceil(every);
        let FrameStart { state: start, kept } = start;
        // Checkpoints at substeps j·K, j ≥ 1 (j = 0 is `start`): the
        // rollout's own when it kept them, else recomputed.
        let checkpoints = match kept {
            Some(kept) => kept,
            None => {
                for j in 1..segments as usize {
                    let from = if j == 1 {
                        start
                    } else {
                        &work.checkpoints[j - 2]
                    };
                    self.encode_substeps(ctx, encoder, from, &work.checkpoints[j - 1], every);
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
            let len = every.min(substeps - j * every);
            // Segment states: t = 0 is the checkpoint, t ≥ 1 in work.segment[t−1].
            let keep_grids = work.keeps_grids();
            if keep_grids {
                // Replay all `len` substeps keeping each grid (the last one
                // needs no G2P: its output is the next checkpoint's state).
                for t in 0..len as usize {
                    let from = match t {
                        0 => base,
                        _ => &work.segment[t - 1],
                    };
                    let to = (t + 1 < len as usize).then(|| &work.segment[t]);
                    let grid = self.segment_grid(&work.grids, t);
                    self.encode_substep_keeping_grid(ctx, encoder, from, to, grid);
                }
            } else {
                for t in 1..len as usize {
                    let from = if t == 1 { base } else { &work.segment[t - 2] };
                    self.encode_substeps(ctx, encoder, from, &work.segment[t - 1], 1);
                }
            }
            for t in (0..len).rev() {
                let g = j * every + t;
                let state = if t == 0 {
                    base
                } else {
                    &work.segment[t as usize - 1]
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
                if keep_grids {
                    let grid = self.segment_grid(&work.grids, t as usize);
                    self.encode_substep_adjoint_on(
                        ctx,
                        encoder,
                        state,
                        next,
                        out,
                        youngs_grad,
                        grid,
                    );
                } else {
                    self.encode_substep_adjoint(ctx, encoder, state, next, out, youngs_grad);
                }
            }
        }
    }
}

/// Most bytes the backward pass spends on keeping the grids of a segment's
/// substeps (K − 1 grids besides the simulator's own, 36 bytes per node
/// each: 6 × 9.9 MB for a 64³ grid at K = 7, 27 × 9.9 MB at K = 28). Above
/// it, each substep adjoint recomputes its grid instead (P2G + grid update
/// again, ~40% more backward time on lavapipe).
pub const KEPT_GRIDS_BUDGET_BYTES: u64 = 512 << 20;

/// Buffers of a frame's backward pass: ⌈S/K⌉ − 1 checkpoints (allocated
/// only when some frame's are not kept by the rollout), K − 1 segment
/// states, two substep adjoints (plus the frame-boundary states the rollout
/// already holds) and, within [`KEPT_GRIDS_BUDGET_BYTES`], K − 1 substep
/// grids so that the replay of a segment keeps the grid of each substep for
/// its adjoint instead of recomputing it. The simulator keeps them between
/// calls ([`MpmSimulator::release_backward_buffers`] frees them).
pub(crate) struct FrameWork {
    every: u32,
    checkpoints: Vec<GpuBuffer>,
    segment: Vec<GpuBuffer>,
    grads: [GpuBuffer; 2],
    grids: Vec<SubstepGrid>,
    grids_kept: bool,
}

impl FrameWork {
    pub(crate) fn new(ctx: &GpuContext, sim: &MpmSimulator, every: u32) -> Result<Self, MpmError> {
        let segment = (1..every)
            .map(|t| sim.state_buffer(ctx, &format!("mpm segment state {t}")))
            .collect::<Result<_, _>>()?;
        let grids_kept = Self::keeps_grids_for(sim, every);
        let grids = if grids_kept {
            (1..every as usize)
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
            grads: [
                sim.state_buffer(ctx, "mpm substep grad A")?,
                sim.state_buffer(ctx, "mpm substep grad B")?,
            ],
        })
    }

    /// Whether these buffers serve a backward pass with checkpoints every
    /// `every` substeps under the simulator's current kept-grids budget
    /// (state and grid sizes are fixed for a simulator).
    pub(crate) fn fits(&self, sim: &MpmSimulator, every: u32) -> bool {
        self.every == every && self.grids_kept == Self::keeps_grids_for(sim, every)
    }

    fn keeps_grids_for(sim: &MpmSimulator, every: u32) -> bool {
        (every as u64 - 1) * sim.substep_grid_bytes() <= sim.kept_grids_budget()
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
