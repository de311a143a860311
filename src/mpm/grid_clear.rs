//! Zeroes the active box's nodes before P2G (shaders/mpm/grid_clear.wgsl):
//! the grid's (m, mv), anchored flags (set to the fixed held nodes of the
//! `splats` anchoring rule, 0 under the others) and, with binned scatters, cell-list
//! heads ([`super::p2g_bin::CellLists`]) in one dispatch. Cheaper than
//! clearing whole grid buffers when the object is small, and one dispatch
//! fewer per substep than clearing each buffer on its own (each costs
//! ~0.15 ms of CPU on lavapipe). ∂L/∂(grid velocity) needs no clear: the
//! adjoint of the grid update zeroes the nodes it reads
//! ([`super::grid_update_adjoint`]).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `clear_grid` dispatch, named.
pub struct GridClearBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Grid (m, mv): four words per node, zeroed.
    pub mass_momentum: &'a GpuBuffer,
    /// Anchored flags: one word per node, set to `held`.
    pub anchored: &'a GpuBuffer,
    /// The fixed held nodes: one word per node
    /// ([`super::MpmSimulator`]'s `held_nodes`).
    pub held: &'a GpuBuffer,
    /// Heads of the cell lists, with binned scatters: one word per node,
    /// zeroed (emptied); selects the entry point `clear_grid_and_lists`.
    pub cell_head: Option<&'a GpuBuffer>,
}

impl<'a> GridClearBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> Vec<NamedBuffer<'a>> {
        let mut buffers = named_buffers![
            self.uniforms => "params",
            self.node_box,
            self.mass_momentum => "nodes",
            self.anchored => "flags",
            self.held,
        ]
        .to_vec();
        buffers.extend(self.cell_head.map(|head| ("cell_head", head)));
        buffers
    }
}

/// The two entry points of `mpm/grid_clear`.
pub struct GridClear {
    grid: ComputeKernel,
    grid_and_lists: ComputeKernel,
}

impl GridClear {
    /// Entry point `clear_grid` of shaders/mpm/grid_clear.wgsl and its bindings.
    pub const CLEAR_GRID: KernelSpec = KernelSpec {
        shader: "mpm/grid_clear",
        entry: "clear_grid",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("node_box", 1),
            Binding::read_write("nodes", 2),
            Binding::read_write("flags", 3),
            Binding::read("held", 4),
        ],
    };

    /// Entry point `clear_grid_and_lists` of shaders/mpm/grid_clear.wgsl and its bindings.
    pub const CLEAR_GRID_AND_LISTS: KernelSpec = KernelSpec {
        shader: "mpm/grid_clear",
        entry: "clear_grid_and_lists",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("node_box", 1),
            Binding::read_write("nodes", 2),
            Binding::read_write("flags", 3),
            Binding::read("held", 4),
            Binding::read_write("cell_head", 5),
        ],
    };

    /// Compiles both entry points.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            grid: ComputeKernel::new(ctx, &Self::CLEAR_GRID)?,
            grid_and_lists: ComputeKernel::new(ctx, &Self::CLEAR_GRID_AND_LISTS)?,
        })
    }

    /// The entry point for `b`: with the lists when it has them.
    fn kernel(&self, b: &GridClearBuffers) -> &ComputeKernel {
        match b.cell_head {
            Some(_) => &self.grid_and_lists,
            None => &self.grid,
        }
    }

    /// Bind group of a dispatch on `b`.
    pub fn bind_grid(&self, ctx: &GpuContext, b: &GridClearBuffers) -> wgpu::BindGroup {
        self.kernel(b).bind(ctx, &b.by_name())
    }

    /// Records the dispatch on `b` (whose bind group is `bind_group`) over
    /// the active box (indirect arguments from [`super::grid_box`]).
    pub fn dispatch_grid(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        b: &GridClearBuffers,
        bind_group: &wgpu::BindGroup,
        dispatch_args: &GpuBuffer,
    ) {
        self.kernel(b)
            .dispatch_indirect(encoder, bind_group, dispatch_args, 0);
    }
}
