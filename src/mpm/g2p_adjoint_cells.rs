//! Cell-binned adjoint of G2P, second half: per (x, y) column of the
//! active box, walks its cells in z order, sums each cell's particles'
//! ∂L/∂(grid velocity) terms over a sliding 3 × 3 × 3 window of nodes and
//! adds each node's complete sum with one atomic per component
//! (shaders/mpm/cell_scatter.wgsl, entry point `g2p_adjoint`;
//! [`super::p2g_bin`] explains the binning).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/cell_scatter::g2p_adjoint` dispatch, named, in binding order.
pub struct G2pAdjointCellsBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box `[origin xyz, dims xyz, count, 0]` from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Per-particle records from [`super::g2p_adjoint_bin`].
    pub binned: &'a GpuBuffer,
    /// List heads per base cell from [`super::g2p_adjoint_bin`]; reset to 0
    /// as they are walked (all zero between scatters).
    pub cell_head: &'a GpuBuffer,
    /// List links per particle from [`super::g2p_adjoint_bin`].
    pub particle_next: &'a GpuBuffer,
    /// ∂L/∂(grid velocity), zeroed before (atomic f32).
    pub grid_velocity_grad: &'a GpuBuffer,
}

impl<'a> G2pAdjointCellsBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 6] {
        [
            self.uniforms,
            self.node_box,
            self.binned,
            self.cell_head,
            self.particle_next,
            self.grid_velocity_grad,
        ]
    }
}

/// The `mpm/cell_scatter::g2p_adjoint` kernel.
pub struct G2pAdjointCells {
    kernel: ComputeKernel,
}

impl G2pAdjointCells {
    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/cell_scatter",
                "g2p_adjoint",
                &[
                    Uniform,
                    StorageRead,
                    StorageRead,
                    StorageReadWrite,
                    StorageRead,
                    StorageReadWrite,
                ],
            )?,
        })
    }

    /// Bind group for `b`.
    pub fn bind(&self, ctx: &GpuContext, b: &G2pAdjointCellsBuffers) -> wgpu::BindGroup {
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
