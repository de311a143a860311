//! The FLIP transfer on the GPU (docs/design.md § MPM, "Transfer";
//! src/mpm_rules/config.rs `Transfer`): its six kernels, one `.rs` +
//! `.wgsl` pair each, run beside APIC's, which they leave unchanged —
//! [`FlipClear`] with the grid's clear, [`FlipScatter`] after P2G (the free particles' carried `(m̂, mv̂)`),
//! [`FlipGather`] after G2P (`v_p' += α (v_p − Σ w v̂_i)`), and in the
//! substep's adjoint [`FlipGatherAdjoint`] after G2P*, [`FlipGridAdjoint`]
//! after the grid update's adjoint and [`FlipScatterAdjoint`] after P2G*
//! (`MpmSimulator::encode_flip_stage`, src/mpm/substep.rs, encodes them
//! in those stages).

use super::error::MpmError;
use super::flip_clear::FlipClear;
use super::flip_gather::FlipGather;
use super::flip_gather_adjoint::FlipGatherAdjoint;
use super::flip_grid_adjoint::FlipGridAdjoint;
use super::flip_scatter::FlipScatter;
use super::flip_scatter_adjoint::FlipScatterAdjoint;
use crate::gpu::{GpuBuffer, GpuContext};

/// The FLIP transfer's kernels and per-node gradient buffers (docs/design.md
/// § MPM, "Transfer"): built only when the configuration asks for it, so
/// an APIC simulation compiles and allocates none of it.
pub(crate) struct FlipParts {
    pub(crate) clear: FlipClear,
    pub(crate) scatter: FlipScatter,
    pub(crate) gather: FlipGather,
    pub(crate) gather_adjoint: FlipGatherAdjoint,
    pub(crate) grid_adjoint: FlipGridAdjoint,
    pub(crate) scatter_adjoint: FlipScatterAdjoint,
    /// ∂L/∂v̂ per node (4 words), scattered by G2P*'s FLIP part and zeroed
    /// by [`FlipGridAdjoint`] as it reads it.
    pub(crate) carried_velocity_grad: GpuBuffer,
    /// `(∂L/∂m̂, ∂L/∂mv̂)` per node.
    pub(crate) carried_grad: GpuBuffer,
}

impl FlipParts {
    pub(crate) fn new(ctx: &GpuContext, nodes: usize) -> Result<Self, MpmError> {
        Ok(Self {
            clear: FlipClear::new(ctx)?,
            scatter: FlipScatter::new(ctx)?,
            gather: FlipGather::new(ctx)?,
            gather_adjoint: FlipGatherAdjoint::new(ctx)?,
            grid_adjoint: FlipGridAdjoint::new(ctx)?,
            scatter_adjoint: FlipScatterAdjoint::new(ctx)?,
            carried_velocity_grad: ctx
                .storage_zeroed::<f32>("mpm grid carried velocity grad", nodes * 4)?,
            carried_grad: ctx.storage_zeroed::<f32>("mpm grid carried (m̂, mv̂) grad", nodes * 4)?,
        })
    }
}
