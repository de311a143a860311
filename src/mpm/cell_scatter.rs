//! Second half of the cell-binned P2G (shaders/mpm/cell_scatter.wgsl;
//! [`super::p2g_bin`] explains the binning): per (x, y) column of the
//! active box's base cells, walks its cells in z order, sums each cell's
//! particles' terms (computed from their state and E as it reaches them)
//! over a sliding 3 × 3 × 3 window of nodes and adds each node's complete
//! (m, mv) with one atomic per component. The lists are only read:
//! the substep's adjoint walks them again ([`super::g2p_adjoint`] and
//! [`super::p2g_adjoint`], `main_cells`).

use super::p2g_bin::CellLists;
use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/cell_scatter` dispatch, named, in binding order.
pub struct CellScatterBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state (24 f32 per particle).
    pub state: &'a GpuBuffer,
    /// Young's modulus per particle.
    pub youngs: &'a GpuBuffer,
    /// The active box and the lists walked.
    pub lists: CellLists<'a>,
    /// The grid's (m, mv) (atomic f32, 4 words per node), zero over the box
    /// before.
    pub nodes: &'a GpuBuffer,
}

impl<'a> CellScatterBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 7] {
        let [node_box, cell_head, particle_next] = self.lists.in_binding_order();
        [
            self.uniforms,
            node_box,
            self.state,
            self.youngs,
            cell_head,
            particle_next,
            self.nodes,
        ]
    }
}

/// The `mpm/cell_scatter` kernel (entry point `p2g`).
pub struct CellScatter {
    kernel: ComputeKernel,
}

impl CellScatter {
    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        let bindings = [
            Uniform,
            StorageRead,
            StorageRead,
            StorageRead,
            StorageRead,
            StorageRead,
            StorageReadWrite,
        ];
        Ok(Self {
            kernel: ComputeKernel::new(ctx, "mpm/cell_scatter", "p2g", &bindings)?,
        })
    }

    /// Bind group of a dispatch on `b`.
    pub fn bind(&self, ctx: &GpuContext, b: &CellScatterBuffers) -> wgpu::BindGroup {
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
        super::grid_box::dispatch_columns(&self.kernel, encoder, bind_group, dispatch_args);
    }
}
