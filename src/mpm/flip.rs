//! The FLIP transfer on the GPU (docs/design.md § MPM, "Transfer";
//! src/mpm_rules/config.rs `Transfer`): its five kernels, one `.rs` +
//! `.wgsl` pair each, run beside APIC's, which they leave unchanged —
//! [`FlipScatter`] after P2G (the free particles' carried `(m̂, mv̂)`),
//! [`FlipGather`] after G2P (`v_p' += α (v_p − Σ w v̂_i)`), and in the
//! substep's adjoint [`FlipGatherAdjoint`] after G2P*, [`FlipGridAdjoint`]
//! after the grid update's adjoint and [`FlipScatterAdjoint`] after P2G*
//! (src/mpm/substep.rs encodes them in those stages).

use super::error::MpmError;
use super::flip_gather::FlipGather;
use super::flip_gather_adjoint::FlipGatherAdjoint;
use super::flip_grid_adjoint::FlipGridAdjoint;
use super::flip_scatter::FlipScatter;
use super::flip_gather::FlipGatherBuffers;
use super::flip_gather_adjoint::FlipGatherAdjointBuffers;
use super::flip_grid_adjoint::FlipGridAdjointBuffers;
use super::flip_scatter::FlipScatterBuffers;
use super::flip_scatter_adjoint::{FlipScatterAdjoint, FlipScatterAdjointBuffers};
use super::simulator::MpmSimulator;
use super::substep::{StageBuffers, SubstepStage};
use super::substep_grid::SubstepGrid;
use crate::gpu::{GpuBuffer, GpuContext};

/// The FLIP transfer's kernels and per-node gradient buffers (docs/design.md
/// § MPM, "Transfer"): built only when the configuration asks for it, so
/// an APIC simulation compiles and allocates none of it.
pub(crate) struct FlipParts {
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

impl MpmSimulator {
    /// Records the FLIP transfer's part of `stage` (module doc) on `b` and
    /// `grid`, after the stage's APIC kernels; nothing under APIC.
    pub(crate) fn encode_flip_stage(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        stage: SubstepStage,
        b: &StageBuffers,
        grid: &SubstepGrid,
    ) {
        let (Some(flip), Some(carried)) = (&self.flip, &grid.carried) else {
            return;
        };
        let cache = &self.bind_groups;
        let particles = self.particle_count;
        match stage {
            SubstepStage::ClearGrid => encoder.clear_buffer(carried.raw(), 0, None),
            SubstepStage::P2g => {
                let s = FlipScatterBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    carried,
                };
                let bg = cache.get("flip_scatter", &s.by_name(), || flip.scatter.bind(ctx, &s));
                flip.scatter.dispatch(encoder, &bg, particles);
            }
            SubstepStage::G2p => {
                let g = FlipGatherBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    carried,
                    state_out: b.next,
                };
                let bg = cache.get("flip_gather", &g.by_name(), || flip.gather.bind(ctx, &g));
                flip.gather.dispatch(encoder, &bg, particles);
            }
            SubstepStage::G2pAdjoint => {
                let g = FlipGatherAdjointBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    state_grad_next: b.grad_next,
                    carried_velocity_grad: &flip.carried_velocity_grad,
                };
                let bg = cache.get("flip_gather_adjoint", &g.by_name(), || {
                    flip.gather_adjoint.bind(ctx, &g)
                });
                flip.gather_adjoint.dispatch(encoder, &bg, particles);
            }
            SubstepStage::GridUpdateAdjoint => {
                let g = FlipGridAdjointBuffers {
                    uniforms: &self.uniforms,
                    node_box: &grid.node_box,
                    carried,
                    carried_velocity_grad: &flip.carried_velocity_grad,
                    carried_grad: &flip.carried_grad,
                };
                let bg = cache.get("flip_grid_adjoint", &g.by_name(), || {
                    flip.grid_adjoint.bind(ctx, &g)
                });
                flip.grid_adjoint
                    .dispatch(encoder, &bg, &grid.dispatch_args);
            }
            SubstepStage::P2gAdjoint => {
                let s = FlipScatterAdjointBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    state_grad_next: b.grad_next,
                    carried,
                    carried_grad: &flip.carried_grad,
                    state_grad: b.grad,
                };
                let bg = cache.get("flip_scatter_adjoint", &s.by_name(), || {
                    flip.scatter_adjoint.bind(ctx, &s)
                });
                flip.scatter_adjoint.dispatch(encoder, &bg, particles);
            }
            SubstepStage::ActiveBox | SubstepStage::GridUpdate => {}
        }
    }
}
