//! The active box: the grid nodes that the particles' stencils touch in a
//! substep. Per-node work (clearing, the grid update and its adjoint) runs
//! over this box only, through indirect dispatches whose size the GPU
//! computes, so a small object in a large grid does not pay for the whole
//! grid (on a 64³ grid with 8,000 particles the box is ~2% of the nodes).
//! Two kernels: [`super::grid_bounds`] (per particle: min/max stencil
//! nodes, reduced per workgroup) then `mpm/grid_box` (this wrapper; one
//! invocation: box, node count, dispatch arguments, and the reset of the
//! bounds).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Byte offset, in the dispatch arguments written by `mpm/grid_box`, of
/// those of the per-column kernels (one thread per (x, y) column of the
/// active box's base cells, dims − 2 per axis: [`super::cell_scatter`],
/// [`super::g2p_adjoint`] and [`super::p2g_adjoint`] `main_cells`).
pub const COLUMN_DISPATCH_OFFSET: u64 = 12;

/// Records one dispatch of a per-column kernel over the (x, y) columns of
/// the active box's base cells (`dispatch_args` from this kernel, at
/// [`COLUMN_DISPATCH_OFFSET`]).
pub fn dispatch_columns(
    kernel: &ComputeKernel,
    encoder: &mut wgpu::CommandEncoder,
    bind_group: &wgpu::BindGroup,
    dispatch_args: &GpuBuffer,
) {
    kernel.dispatch_indirect(encoder, bind_group, dispatch_args, COLUMN_DISPATCH_OFFSET);
}

/// Buffers of `mpm/grid_box`, named.
pub struct GridBoxBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Bounds from [`super::grid_bounds`] (read, then reset).
    pub bounds: &'a GpuBuffer,
    /// Output: `[origin xyz, dims xyz, count, 0]` (8 u32).
    pub node_box: &'a GpuBuffer,
    /// Output: indirect dispatch arguments of the per-node kernels (3 u32)
    /// then of the per-column kernels (3 u32, from byte
    /// [`COLUMN_DISPATCH_OFFSET`]).
    pub dispatch_args: &'a GpuBuffer,
}

impl<'a> GridBoxBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 4] {
        named_buffers![
            self.uniforms => "params",
            self.bounds,
            self.node_box,
            self.dispatch_args,
        ]
    }
}

/// The `mpm/grid_box` kernel.
pub struct GridBox {
    kernel: ComputeKernel,
}

impl GridBox {
    /// Entry point `main` of shaders/mpm/grid_box.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/grid_box",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read_write("bounds", 1),
            Binding::read_write("node_box", 2),
            Binding::read_write("dispatch_args", 3),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &GridBoxBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.by_name())
    }

    /// Records the one-invocation dispatch.
    pub fn dispatch(&self, encoder: &mut wgpu::CommandEncoder, bind_group: &wgpu::BindGroup) {
        self.kernel.dispatch(encoder, bind_group, [1, 1, 1]);
    }
}
