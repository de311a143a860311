//! Particle side of a substep's adjoint on CPU adapters
//! (shaders/mpm/p2g_adjoint_cells.wgsl): the math of [`super::p2g_adjoint`]
//! run per (x, y) column of the active box over the cell lists that G2P*'s
//! binning built, with the 27 nodes around each cell kept in a sliding
//! window (9 new nodes per cell, 27 after an empty one) instead of
//! gathered per particle (why: the shader's header).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/p2g_adjoint_cells` dispatch, named, in binding order.
pub struct P2gAdjointCellsBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box `[origin xyz, dims xyz, count, 0]` from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Particle state at substep n+1, as G2P wrote it from `state`.
    pub state_next: &'a GpuBuffer,
    /// Young's modulus per particle.
    pub youngs: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// ∂L/∂(state n+1), 24 f32 per particle.
    pub state_grad_next: &'a GpuBuffer,
    /// (∂L/∂mv, ∂L/∂m) per node from grid update*.
    pub grid_grad: &'a GpuBuffer,
    /// Grid velocity of substep n.
    pub grid_velocity: &'a GpuBuffer,
    /// List heads per base cell of every particle at substep n (from G2P*'s
    /// binning); reset to 0 as they are walked.
    pub cell_head: &'a GpuBuffer,
    /// List links per particle.
    pub particle_next: &'a GpuBuffer,
    /// Output: ∂L/∂(state n) (overwritten).
    pub state_grad: &'a GpuBuffer,
    /// ∂L/∂E per particle, accumulated over substeps.
    pub youngs_grad: &'a GpuBuffer,
}

impl<'a> P2gAdjointCellsBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 13] {
        [
            self.uniforms,
            self.node_box,
            self.state,
            self.state_next,
            self.youngs,
            self.anchored,
            self.state_grad_next,
            self.grid_grad,
            self.grid_velocity,
            self.cell_head,
            self.particle_next,
            self.state_grad,
            self.youngs_grad,
        ]
    }
}

/// The `mpm/p2g_adjoint_cells` kernel.
pub struct P2gAdjointCells {
    kernel: ComputeKernel,
}

impl P2gAdjointCells {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/p2g_adjoint_cells",
                "main",
                &[
                    Uniform,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageReadWrite,
                    StorageRead,
                    StorageReadWrite,
                    StorageReadWrite,
                ],
            )?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &P2gAdjointCellsBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.in_binding_order())
    }

    /// Records one dispatch over the (x, y) columns of the active box
    /// (`dispatch_args` from [`super::grid_box`]).
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        dispatch_args: &GpuBuffer,
    ) {
        self.kernel.dispatch_indirect(
            encoder,
            bind_group,
            dispatch_args,
            super::grid_box::COLUMN_DISPATCH_OFFSET,
        );
    }
}
