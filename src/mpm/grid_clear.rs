//! Zeroes the active box's nodes before P2G (shaders/mpm/grid_clear.wgsl):
//! the grid's (m, mv), anchored flags and cell-list heads
//! ([`super::p2g_bin::CellLists`]) in one dispatch. Cheaper than
//! clearing whole grid buffers when the object is small, and one dispatch
//! fewer per substep than clearing each buffer on its own (each costs
//! ~0.15 ms of CPU on lavapipe). ∂L/∂(grid velocity) needs no clear: the
//! adjoint of the grid update zeroes the nodes it reads
//! ([`super::grid_update_adjoint`]).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `clear_grid` dispatch, in binding order.
pub struct GridClearBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Grid (m, mv): four words per node, zeroed.
    pub mass_momentum: &'a GpuBuffer,
    /// Anchored flags: one word per node, zeroed.
    pub anchored: &'a GpuBuffer,
    /// Heads of the cell lists: one word per node, zeroed (emptied).
    pub cell_head: &'a GpuBuffer,
}

impl<'a> GridClearBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 5] {
        [
            self.uniforms,
            self.node_box,
            self.mass_momentum,
            self.anchored,
            self.cell_head,
        ]
    }
}

/// The `mpm/grid_clear` kernel.
pub struct GridClear {
    grid: ComputeKernel,
}

impl GridClear {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            grid: ComputeKernel::new(
                ctx,
                "mpm/grid_clear",
                "clear_grid",
                &[
                    Uniform,
                    StorageRead,
                    StorageReadWrite,
                    StorageReadWrite,
                    StorageReadWrite,
                ],
            )?,
        })
    }

    /// Bind group of a `clear_grid` dispatch.
    pub fn bind_grid(&self, ctx: &GpuContext, b: &GridClearBuffers) -> wgpu::BindGroup {
        self.grid.bind(ctx, &b.in_binding_order())
    }

    /// Records `clear_grid` over the active box (indirect arguments from
    /// [`super::grid_box`]).
    pub fn dispatch_grid(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        dispatch_args: &GpuBuffer,
    ) {
        self.grid
            .dispatch_indirect(encoder, bind_group, dispatch_args, 0);
    }
}
