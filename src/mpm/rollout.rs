//! Rollouts over frames (docs/design.md § MPM; § Loss, parameters, fit): the
//! forward half of what the fit runs each iteration.
//!
//! [`MpmSimulator::rollout`] keeps the state (x, v, C, F) at every frame
//! boundary and checks health once per frame (a few status words: the only
//! readback); inside frames it keeps nothing unless asked to
//! ([`RolloutOptions::keep_checkpoints`], below). The backward pass over a
//! rollout is [`super::backward`], whose module doc shows a fit iteration
//! end to end.
//!
//! A rollout run with [`RolloutOptions::keep_checkpoints`] keeps each
//! frame's in-frame checkpoints (⌈S/K⌉ − 1 states per frame, written by the
//! forward substeps themselves, at no extra time), and a backward pass with
//! the same K starts from them instead of recomputing them: per frame it
//! then runs S replayed substeps and S substep adjoints instead of also
//! S − K forward substeps (case (a) of `physfit bench mpm`: 33 of 40).
//! Such a rollout also leaves its last frame's last segment (K states and
//! K grids) in the caller's [`BackwardWork`] when the K grids fit the
//! simulator's kept-grids budget, and the backward of that
//! frame, if it comes next with the same work and K, starts there: it
//! replays S − K substeps instead of S (the whole frame at K = S: no replay
//! at all). Worth it where memory allows, e.g. stage 2 of the fit, whose
//! backward of frame k follows its forward.
//!
//! With [`RolloutOptions::keep_every_substep`] a rollout keeps every
//! frame's whole run, S states and S grids, each frame in a slot of its own
//! in the caller's [`BackwardWork`], and a backward pass over the whole
//! rollout (the fit's full flow) replays nothing: S · frames states and
//! grids ([`MpmSimulator::kept_rollout_bytes`]), for a caller that checked
//! its memory leaves room for them.
//!
//! A rollout records the simulator and the version of its Young's moduli
//! ([`MpmSimulator::youngs_version`]); a backward pass after E changed is
//! refused ([`MpmError::StaleRollout`]), since the kept states and grids,
//! and the frame states themselves, belong to the old moduli.

use super::backward_work::{segment_span, BackwardWork, KeptSegment, Segment};
use super::error::MpmError;
use super::layout::ParticleState;
use super::simulator::MpmSimulator;
use super::status::SimulationStatus;
use crate::gpu::{GpuBuffer, GpuContext};
use std::sync::atomic::{AtomicU64, Ordering};

/// States at frame boundaries: `frames[0]` is the initial state, `frames[k]`
/// the state at time k/fps.
pub struct Rollout {
    /// One state buffer (24 f32 per particle, [`super::layout`]) per frame.
    /// Replacing one makes the rollout's kept checkpoints and segment
    /// wrong for the frame after it: run a new rollout instead.
    pub frames: Vec<GpuBuffer>,
    /// Unique per rollout: names the segment a forward left in a
    /// [`BackwardWork`] ([`KeptSegment`]).
    id: u64,
    /// The simulator that ran it.
    simulator: u64,
    /// [`MpmSimulator::youngs_version`] when it ran.
    youngs_version: u64,
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

    /// The Young's-modulus version it ran with ([`MpmSimulator::youngs_version`]).
    pub fn youngs_version(&self) -> u64 {
        self.youngs_version
    }

    /// Fails unless `sim` ran this rollout with its current Young's moduli.
    pub(crate) fn check_current(&self, sim: &MpmSimulator) -> Result<(), MpmError> {
        if self.simulator != sim.id() {
            return Err(MpmError::InvalidInput(
                "the rollout was run by another simulator".into(),
            ));
        }
        if self.youngs_version != sim.youngs_version() {
            return Err(MpmError::StaleRollout {
                rollout: self.youngs_version,
                current: sim.youngs_version(),
            });
        }
        Ok(())
    }

    /// Frame k's start state and its kept checkpoints if they were kept
    /// every `every` substeps.
    pub(crate) fn frame_start(&self, k: usize, every: u32) -> FrameStart<'_> {
        FrameStart {
            state: &self.frames[k - 1],
            kept: self.kept_every(k, every),
            segment: KeptSegment {
                rollout: self.id,
                frame: k,
            },
        }
    }

    /// Frees frame `k`'s kept in-frame checkpoints (a frame-by-frame
    /// truncated pass needs them only for the backward of that frame); a
    /// later backward of frame k recomputes them.
    pub(crate) fn release_checkpoints(&mut self, k: usize) {
        if let Some(c) = k.checked_sub(1).and_then(|i| self.checkpoints.get_mut(i)) {
            *c = None;
        }
    }

    /// Frame k's kept checkpoints if they were kept every `every` substeps.
    pub(crate) fn kept_every(&self, k: usize, every: u32) -> Option<&[GpuBuffer]> {
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
pub(crate) struct FrameStart<'a> {
    pub(crate) state: &'a GpuBuffer,
    pub(crate) kept: Option<&'a [GpuBuffer]>,
    /// The frame's last segment, which the forward may have left in the
    /// backward pass's buffers.
    pub(crate) segment: KeptSegment,
}

/// Source of [`Rollout`] ids.
static NEXT_ROLLOUT_ID: AtomicU64 = AtomicU64::new(1);

/// What a forward frame keeps on its way ([`MpmSimulator::run_frame_through`]):
/// the states at the segment starts into `checkpoints` (⌈S/K⌉ − 1
/// buffers) and, with `last_segment`, the states and grids of the frame's
/// last segment into those buffers.
#[derive(Clone, Copy)]
pub(crate) struct KeptThrough<'a> {
    pub(crate) every: u32,
    pub(crate) checkpoints: &'a [GpuBuffer],
    pub(crate) last_segment: Option<&'a Segment>,
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
    /// in the caller's [`BackwardWork`] for the backward of that frame
    /// (when the K grids fit [`super::MpmOptions::kept_grids_budget`]).
    /// Costs ⌈S/K⌉ − 1 state buffers per frame, and the backward pass's
    /// buffers are allocated by the forward. Off by default (frame states
    /// only).
    pub keep_checkpoints: bool,
    /// K of the kept checkpoints: `None` = ⌈√S⌉ (the backward's default);
    /// clamped to 1..=S. Ignored unless `keep_checkpoints`.
    pub checkpoint_every: Option<u32>,
    /// Keep every substep's state and grid of every frame in the caller's
    /// [`BackwardWork`] (one slot of S states and S grids per frame), so
    /// that a backward pass over the whole rollout that comes next with the
    /// same work replays nothing: S · frames states and grids
    /// ([`MpmSimulator::kept_rollout_bytes`]), for a caller that has
    /// checked they fit its memory. Where the S grids of a frame do not fit
    /// the kept-grids budget ([`MpmSimulator::keeps_whole_frames`]) it
    /// keeps checkpoints every `checkpoint_every` substeps instead, as
    /// `keep_checkpoints` does; else it overrides both.
    pub keep_every_substep: bool,
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
        let first = self.upload_state(ctx, "mpm frame 0", initial)?;
        self.rollout_from(ctx, first, frames)
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
        self.run_rollout(ctx, initial, frames, None, false)
    }

    /// [`MpmSimulator::rollout`] with options: in-frame checkpoints kept in
    /// the rollout and its last segment in `work`, for the backward pass.
    pub fn rollout_with(
        &self,
        ctx: &GpuContext,
        initial: &ParticleState,
        frames: u32,
        options: &RolloutOptions,
        work: &mut BackwardWork,
    ) -> Result<Rollout, MpmError> {
        let first = self.upload_state(ctx, "mpm frame 0", initial)?;
        self.rollout_from_with(ctx, first, frames, options, work)
    }

    /// [`MpmSimulator::rollout_with`] from a state already on the GPU.
    pub fn rollout_from_with(
        &self,
        ctx: &GpuContext,
        initial: GpuBuffer,
        frames: u32,
        options: &RolloutOptions,
        work: &mut BackwardWork,
    ) -> Result<Rollout, MpmError> {
        if options.keep_every_substep && self.keeps_whole_frames() {
            let whole = self.config.substeps_per_frame;
            return self.run_rollout(ctx, initial, frames, Some((whole, work)), true);
        }
        let keep = (options.keep_checkpoints || options.keep_every_substep)
            .then(|| (self.checkpoint_every(options.checkpoint_every), work));
        self.run_rollout(ctx, initial, frames, keep, false)
    }

    /// A rollout of frame 0 alone, `initial` (a state on the GPU), for a
    /// caller that runs its frames one at a time
    /// ([`MpmSimulator::extend_rollout_kept`]).
    pub fn rollout_start(&self, initial: GpuBuffer) -> Rollout {
        Rollout {
            frames: vec![initial],
            id: NEXT_ROLLOUT_ID.fetch_add(1, Ordering::Relaxed),
            simulator: self.id(),
            youngs_version: self.youngs_version(),
            checkpoints: Vec::new(),
        }
    }

    /// Runs the rollout's next frame keeping, for a backward pass of that
    /// frame alone that follows at once (a truncated pass run frame by
    /// frame, [`MpmSimulator::truncated_frame`]), its checkpoints every
    /// `every` substeps in the rollout and its last segment's K states and
    /// grids in `work` (when the grids fit the kept-grids budget): with
    /// `every` = S the whole frame, whose backward then replays nothing
    /// ([`MpmSimulator::frame_every`] picks the largest K that fits).
    /// Refused when the Young's moduli changed since the rollout started.
    pub fn extend_rollout_kept(
        &self,
        ctx: &GpuContext,
        rollout: &mut Rollout,
        every: u32,
        work: &mut BackwardWork,
    ) -> Result<(), MpmError> {
        rollout.check_current(self)?;
        let k = rollout.frames.len() as u32;
        let every = self.checkpoint_every(Some(every));
        let next = self.state_buffer(ctx, &format!("mpm frame {k}"))?;
        let kept = FrameCheckpoints {
            every,
            states: self.checkpoint_buffers(ctx, every, &format!("frame {k} "))?,
        };
        let start = rollout.frames.last().expect("a rollout holds its start");
        self.run_frame_keeping_last_segment(ctx, start, &kept, &next, work, rollout.id, k)?;
        rollout.frames.push(next);
        rollout.checkpoints.push(Some(kept));
        Ok(())
    }

    /// The rollout, keeping (with `keep`) each frame's checkpoints every K
    /// substeps and its last frame's last segment in the work, or with
    /// `every_substep` (K = S, the work's segments keeping grids) each
    /// frame's whole run in a slot of the work.
    fn run_rollout(
        &self,
        ctx: &GpuContext,
        initial: GpuBuffer,
        frames: u32,
        keep: Option<(u32, &mut BackwardWork)>,
        every_substep: bool,
    ) -> Result<Rollout, MpmError> {
        let id = NEXT_ROLLOUT_ID.fetch_add(1, Ordering::Relaxed);
        let youngs_version = self.youngs_version();
        let (every, mut work) = match keep {
            Some((every, work)) => (Some(every), Some(work)),
            None => (None, None),
        };
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
            match (&kept, work.as_deref_mut()) {
                (Some(_), Some(work)) if every_substep => {
                    self.run_frame_kept_whole(ctx, start, &next, work, id, k)?
                }
                // The last frame also leaves its last segment in the
                // backward pass's buffers.
                (Some(c), Some(work)) if k == frames => {
                    self.run_frame_keeping_last_segment(ctx, start, c, &next, work, id, k)?
                }
                (Some(c), _) => {
                    let through = KeptThrough {
                        every: c.every,
                        checkpoints: &c.states,
                        last_segment: None,
                    };
                    self.run_frame_through(ctx, start, Some(through), &next, k)?
                }
                (None, _) => self.run_frame_through(ctx, start, None, &next, k)?,
            }
            states.push(next);
            checkpoints.push(kept);
        }
        Ok(Rollout {
            frames: states,
            id,
            simulator: self.id(),
            youngs_version,
            checkpoints,
        })
    }

    /// Runs frame `k` of rollout `id` keeping its checkpoints and, when the
    /// backward pass's buffers for K keep grids, its last segment's states
    /// and grids there ([`KeptSegment`]): the backward of this frame then
    /// starts without replaying that segment.
    #[allow(clippy::too_many_arguments)]
    fn run_frame_keeping_last_segment(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        kept: &FrameCheckpoints,
        end: &GpuBuffer,
        work: &mut BackwardWork,
        id: u64,
        k: u32,
    ) -> Result<(), MpmError> {
        let work = work.prepare(ctx, self, kept.every)?;
        // Whatever segment the buffers held is overwritten from here on.
        work.mark_kept(0, None);
        let through = KeptThrough {
            every: kept.every,
            checkpoints: &kept.states,
            last_segment: work.keeps_grids().then(|| &work.segments[0]),
        };
        let keeping = through.last_segment.is_some();
        let result = self.run_frame_through(ctx, start, Some(through), end, k);
        if result.is_ok() && keeping {
            work.mark_kept(
                0,
                Some(KeptSegment {
                    rollout: id,
                    frame: k as usize,
                }),
            );
        }
        result
    }

    /// Runs frame `k` of rollout `id` as one segment of S substeps, keeping
    /// every substep's state and grid in slot k − 1 of the work (prepared
    /// for K = S with grids): the backward of this frame replays nothing
    /// ([`RolloutOptions::keep_every_substep`]).
    fn run_frame_kept_whole(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        end: &GpuBuffer,
        work: &mut BackwardWork,
        id: u64,
        k: u32,
    ) -> Result<(), MpmError> {
        let whole = self.config.substeps_per_frame;
        let work = work.prepare(ctx, self, whole)?;
        let slot = (k - 1) as usize;
        work.ensure_slots(ctx, self, slot + 1)?;
        work.mark_kept(slot, None);
        let through = KeptThrough {
            every: whole,
            checkpoints: &[],
            last_segment: Some(&work.segments[slot]),
        };
        self.run_frame_through(ctx, start, Some(through), end, k)?;
        work.mark_kept(
            slot,
            Some(KeptSegment {
                rollout: id,
                frame: k as usize,
            }),
        );
        Ok(())
    }

    /// Runs one frame (all substeps) `start → end` and checks the status
    /// words once at its end. `frame` (1-based) is only for the error.
    /// On a failure, replays the frame substep by substep to name the
    /// substep where it started.
    #[cfg(feature = "reference")]
    pub fn run_frame(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        end: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        self.run_frame_through(ctx, start, None, end, frame)
    }

    /// [`MpmSimulator::run_frame`] writing the states at the segment starts
    /// (every K substeps, [`segment_span`]) into the
    /// ⌈S/K⌉ − 1 buffers of `through.checkpoints` on the way (`checkpoint_buffers` makes them) and, with `through.last_segment`,
    /// keeping the states and grids of the frame's last segment there for
    /// the backward pass.
    pub(crate) fn run_frame_through(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        through: Option<KeptThrough>,
        end: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        let result = self.run_frame_checked(ctx, start, through, end, frame);
        // The frame's bind groups hold `start` and `end`: let them go.
        self.release_bind_groups();
        result
    }

    fn run_frame_checked(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        through: Option<KeptThrough>,
        end: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        let substeps = self.config.substeps_per_frame;
        SimulationStatus::reset(ctx, &self.status);
        let mut encoder = crate::gpu::encoder(ctx, "mpm frame");
        // Segments between checkpoints (one segment when none are kept;
        // `segment_span` says where each starts).
        let (every, checkpoints, last_segment) = match through {
            Some(t) => (t.every, t.checkpoints, t.last_segment),
            None => (substeps, &[][..], None),
        };
        let segments = substeps.div_ceil(every);
        debug_assert_eq!(checkpoints.len() as u32 + 1, segments);
        for j in 0..segments {
            let from = if j == 0 {
                start
            } else {
                &checkpoints[j as usize - 1]
            };
            let to = if j + 1 == segments {
                end
            } else {
                &checkpoints[j as usize]
            };
            let (_, len) = segment_span(substeps, every, j);
            match last_segment {
                Some(segment) if j + 1 == segments => {
                    let kept = self.encode_segment_keeping_grids(
                        ctx,
                        &mut encoder,
                        segment,
                        from,
                        len as usize,
                        true,
                    );
                    if let Some(kept) = kept {
                        encoder.copy_buffer_to_buffer(kept.raw(), 0, to.raw(), 0, None);
                    }
                }
                _ => self.encode_substeps(ctx, &mut encoder, from, to, len),
            }
        }
        ctx.queue.submit([encoder.finish()]);
        self.check_frame(ctx, start, frame)
    }

    /// Records a frame's substeps `start → end` into the caller's encoder,
    /// so that a caller can submit them with other work (the render of the
    /// frame before, say) in one submission. Health is not checked: after
    /// the submission, [`MpmSimulator::check_frame`] must pass before `end`
    /// is used. The status words are cleared at the start of the recorded
    /// work (in the encoder, so in submission order): check each frame
    /// before the next recorded frame is submitted.
    #[cfg(feature = "reference")]
    pub fn encode_frame(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        start: &GpuBuffer,
        end: &GpuBuffer,
    ) {
        encoder.copy_buffer_to_buffer(self.status_clear.raw(), 0, self.status.raw(), 0, None);
        self.encode_substeps(ctx, encoder, start, end, self.config.substeps_per_frame);
    }

    /// Checks the status words of a frame run from `start` (by
    /// [`MpmSimulator::encode_frame`] or internally): one readback of two
    /// words. On a failure, replays the frame from `start` substep by
    /// substep to name the substep where it started (`frame`, 1-based, is
    /// only for the error).
    pub fn check_frame(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        // The frame's bind groups hold `start` and its end: let them go.
        self.release_bind_groups();
        let substeps = self.config.substeps_per_frame;
        let status = SimulationStatus::read(ctx, &self.status)?;
        if status.is_ok() {
            return Ok(());
        }
        // Locate the first failing substep (rare path): replay the frame
        // once from its start, one substep per submission, and read the
        // status after each; stop at the first bad one. O(S) substeps.
        let mut from = start;
        for s in 0..substeps {
            let to = &self.scratch[(s % 2) as usize];
            SimulationStatus::reset(ctx, &self.status);
            let mut encoder = crate::gpu::encoder(ctx, "mpm frame replay");
            self.encode_substep(ctx, &mut encoder, from, to);
            ctx.queue.submit([encoder.finish()]);
            let replay = SimulationStatus::read(ctx, &self.status)?;
            if !replay.is_ok() {
                return Err(replay.error(frame, s));
            }
            from = to;
        }
        Err(status.error(frame, substeps - 1))
    }
}
