//! The backward pass's working memory (docs/design.md § Adjoint, Memory): inside
//! a frame of S substeps, ⌈S/K⌉ − 1 checkpoints, the K states of the
//! segment being replayed, two substep adjoints, two frame adjoints and,
//! within the simulator's kept-grids budget, the K substep grids of the
//! segment, so that a substep adjoint runs G2P*, grid update* and P2G*
//! without recomputing P2G and the grid update.
//!
//! It belongs to whoever runs backward passes (the fit keeps one for its
//! whole run): [`BackwardWork`] is passed to [`MpmSimulator::backward`]
//! (and to a forward [`MpmSimulator::rollout_with`] that keeps its last
//! segment for the backward), which allocate it on first use and reuse it
//! while it fits; dropping it frees the buffers.
//!
//! [`MpmSimulator::backward`]: super::MpmSimulator::backward
//! [`MpmSimulator::rollout_with`]: super::MpmSimulator::rollout_with

use super::error::MpmError;
use super::simulator::MpmSimulator;
use super::substep_grid::SubstepGrid;
use crate::gpu::{GpuBuffer, GpuContext};

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

/// The last segment of frame `frame` of rollout `rollout`, whose states and
/// grids a forward left in a [`BackwardWork`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeptSegment {
    pub(crate) rollout: u64,
    pub(crate) frame: usize,
}

/// The backward pass's working memory, owned by its caller (module doc).
/// Empty until first used; holds buffers for one simulator and one K at a
/// time (another simulator or K reallocates them).
#[derive(Default)]
pub struct BackwardWork {
    pub(crate) buffers: Option<FrameBuffers>,
}

impl BackwardWork {
    /// Empty working memory (nothing allocated until a backward pass).
    pub fn new() -> Self {
        Self::default()
    }

    /// The buffers for a backward pass of `sim` with checkpoints every
    /// `every` substeps: the ones held when they fit, else new ones (the
    /// old are freed first).
    pub(crate) fn prepare(
        &mut self,
        ctx: &GpuContext,
        sim: &MpmSimulator,
        every: u32,
    ) -> Result<&mut FrameBuffers, MpmError> {
        if !self.buffers.as_ref().is_some_and(|b| b.fits(sim, every)) {
            self.buffers = None; // free the old buffers before allocating
            self.buffers = Some(FrameBuffers::new(ctx, sim, every)?);
        }
        Ok(self.buffers.as_mut().expect("allocated above"))
    }
}

/// The states and grids of one segment's substeps: the state after each
/// of its K substeps and, within the kept-grids budget, each substep's
/// grid. A frame's backward replays into slot 0; a rollout that keeps
/// every substep ([`super::RolloutOptions::keep_every_substep`]) leaves
/// each frame's whole run in a slot of its own.
pub(crate) struct Segment {
    pub(crate) states: Vec<GpuBuffer>,
    pub(crate) grids: Vec<SubstepGrid>,
}

impl Segment {
    fn new(
        ctx: &GpuContext,
        sim: &MpmSimulator,
        every: u32,
        grids_kept: bool,
        slot: usize,
    ) -> Result<Self, MpmError> {
        // Slot i keeps frame i + 1 of a rollout that keeps every substep;
        // slot 0 is also the replays' segment.
        let name = if slot == 0 {
            "mpm segment".to_string()
        } else {
            format!("mpm kept frame {}", slot + 1)
        };
        let states = (1..=every)
            .map(|t| sim.state_buffer(ctx, &format!("{name} state {t}")))
            .collect::<Result<_, _>>()?;
        let grids = if grids_kept {
            (0..every as usize)
                .map(|t| sim.new_substep_grid(ctx, &format!("{name} grid {t}")))
                .collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        Ok(Self { states, grids })
    }
}

/// Buffers of a frame's backward pass (module doc): ⌈S/K⌉ − 1 checkpoints
/// (allocated only when some frame's are not kept by the rollout), the
/// segment slots (K states and, within the kept-grids budget, K substep
/// grids each: slot 0 for the replays, one more per frame for a rollout
/// that keeps every substep), two substep adjoints and two frame
/// adjoints. A forward that keeps checkpoints leaves its last frame's last
/// segment in slot 0 ([`KeptSegment`]).
pub(crate) struct FrameBuffers {
    simulator: u64,
    pub(crate) every: u32,
    pub(crate) checkpoints: Vec<GpuBuffer>,
    pub(crate) segments: Vec<Segment>,
    pub(crate) grads: [GpuBuffer; 2],
    /// ∂L/∂(state at frame k) and at k − 1 ([`super::GradientFlow::Full`]),
    /// or a discarded k − 1 ([`super::GradientFlow::Truncated`]).
    pub(crate) frame_grads: [GpuBuffer; 2],
    grids_kept: bool,
    /// `kept[i]`: the segment whose states and grids slot i holds, when a
    /// forward left them (None once a replay or another forward may have
    /// overwritten them).
    kept: Vec<Option<KeptSegment>>,
}

impl FrameBuffers {
    fn new(ctx: &GpuContext, sim: &MpmSimulator, every: u32) -> Result<Self, MpmError> {
        let grids_kept = sim.keeps_grids_for(every);
        Ok(Self {
            simulator: sim.id(),
            every,
            checkpoints: Vec::new(),
            segments: vec![Segment::new(ctx, sim, every, grids_kept, 0)?],
            grids_kept,
            kept: vec![None],
            grads: [
                sim.state_buffer(ctx, "mpm substep grad A")?,
                sim.state_buffer(ctx, "mpm substep grad B")?,
            ],
            frame_grads: [
                sim.state_buffer(ctx, "mpm grad (frame k)")?,
                sim.state_buffer(ctx, "mpm grad (frame k-1)")?,
            ],
        })
    }

    /// At least `slots` segment slots (allocated on first need, then kept
    /// for later passes with these buffers).
    pub(crate) fn ensure_slots(
        &mut self,
        ctx: &GpuContext,
        sim: &MpmSimulator,
        slots: usize,
    ) -> Result<(), MpmError> {
        while self.segments.len() < slots {
            let slot = self.segments.len();
            let segment = Segment::new(ctx, sim, self.every, self.grids_kept, slot)?;
            self.segments.push(segment);
            self.kept.push(None);
        }
        Ok(())
    }

    /// Records what slot `slot` holds once a forward wrote it (`None`
    /// while it is being overwritten).
    pub(crate) fn mark_kept(&mut self, slot: usize, segment: Option<KeptSegment>) {
        self.kept[slot] = segment;
    }

    /// The slot a backward of `segment` runs on, and whether a forward
    /// left that segment there (its replay is then skipped); else slot 0,
    /// which the replay overwrites. The marker is used once.
    pub(crate) fn take_slot(&mut self, segment: KeptSegment) -> (usize, bool) {
        match self.kept.iter().position(|k| *k == Some(segment)) {
            Some(slot) => {
                self.kept[slot] = None;
                (slot, true)
            }
            None => {
                self.kept[0] = None;
                (0, false)
            }
        }
    }

    /// Whether these buffers serve a backward pass of `sim` with
    /// checkpoints every `every` substeps (state sizes, the scatter variant
    /// and the kept-grids budget are fixed for a simulator).
    fn fits(&self, sim: &MpmSimulator, every: u32) -> bool {
        self.simulator == sim.id() && self.every == every
    }

    /// Allocates the checkpoint buffers (for frames whose rollout kept none).
    pub(crate) fn ensure_checkpoints(
        &mut self,
        ctx: &GpuContext,
        sim: &MpmSimulator,
    ) -> Result<(), MpmError> {
        if self.checkpoints.is_empty() {
            self.checkpoints = sim.checkpoint_buffers(ctx, self.every, "")?;
        }
        Ok(())
    }

    /// Whether segment replays keep their substeps' grids.
    pub(crate) fn keeps_grids(&self) -> bool {
        self.grids_kept
    }
}

impl MpmSimulator {
    /// Records the `len` substeps of a segment from `base`, keeping grid t
    /// in `segment.grids[t]` and the state after substep t in
    /// `segment.states[t]`, for t < len − 1 and, with `through_end`, for
    /// the last substep too (else its G2P is not run: the next checkpoint
    /// holds that state). Returns the state after the last substep when it
    /// was written. Needs a segment with grids (the buffers'
    /// `keeps_grids()`).
    pub(crate) fn encode_segment_keeping_grids<'w>(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        segment: &'w Segment,
        base: &GpuBuffer,
        len: usize,
        through_end: bool,
    ) -> Option<&'w GpuBuffer> {
        debug_assert!(len >= 1 && len <= segment.states.len() && len <= segment.grids.len());
        let written = if through_end { len } else { len - 1 };
        for t in 0..len {
            let from = if t == 0 { base } else { &segment.states[t - 1] };
            let to = (t < written).then(|| &segment.states[t]);
            self.encode_substep_keeping_grid(ctx, encoder, from, to, &segment.grids[t]);
        }
        through_end.then(|| &segment.states[len - 1])
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

    /// K for a requested `checkpoint_every` (`None` = ⌈√S⌉), clamped to 1..=S.
    pub fn checkpoint_every(&self, requested: Option<u32>) -> u32 {
        let substeps = self.config().substeps_per_frame;
        requested
            .unwrap_or_else(|| (substeps as f64).sqrt().ceil() as u32)
            .clamp(1, substeps)
    }
}
