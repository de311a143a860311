//! Cell-binned P2G, second half: per (x, y) column of the active box, walks
//! its cells in z order, sums each cell's particles' mass and momentum
//! contributions over a sliding 3 × 3 × 3 window of nodes and adds each
//! node's complete sum to the grid with one atomic per component
//! (shaders/mpm/cell_scatter.wgsl, entry point `p2g`, whose column walk
//! [`super::g2p_adjoint_cells`] shares; [`super::p2g_bin`] explains the
//! binning).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/cell_scatter::p2g` dispatch, named, in binding order.
pub struct P2gCellsBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box `[origin xyz, dims xyz, count, 0]` from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Per-particle records from [`super::p2g_bin`].
    pub binned: &'a GpuBuffer,
    /// List heads per base cell from [`super::p2g_bin`]; reset to 0 as
    /// they are walked (all zero between scatters).
    pub cell_head: &'a GpuBuffer,
    /// List links per particle from [`super::p2g_bin`].
    pub particle_next: &'a GpuBuffer,
    /// Grid (m, mv) per node, zeroed before (atomic f32).
    pub grid: &'a GpuBuffer,
}

impl<'a> P2gCellsBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 6] {
        [
            self.uniforms,
            self.node_box,
            self.binned,
            self.cell_head,
            self.particle_next,
            self.grid,
        ]
    }
}

/// The `mpm/cell_scatter::p2g` kernel.
pub struct P2gCells {
    kernel: ComputeKernel,
}

impl P2gCells {
    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/cell_scatter",
                "p2g",
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
    pub fn bind(&self, ctx: &GpuContext, b: &P2gCellsBuffers) -> wgpu::BindGroup {
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
