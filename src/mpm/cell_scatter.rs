//! Second half of the cell-binned P2G (shaders/mpm/cell_scatter.wgsl;
//! [`super::p2g_bin`] explains the binning): per (x, y) column of the
//! active box's base cells, walks its cells in z order, sums each cell's
//! particles' terms (computed from their state and E as it reaches them)
//! over a sliding 3 × 3 × 3 window of nodes and adds each node's complete
//! (m, mv) with one atomic per component. The lists are only read:
//! the substep's adjoint walks them again ([`super::g2p_adjoint`] and
//! [`super::p2g_adjoint`], `main_cells`).

use super::p2g_bin::CellLists;
use crate::gpu::binding_table::{concat_bindings, named_buffers};
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/cell_scatter` dispatch, named.
pub struct CellScatterBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state (24 f32 per particle).
    pub state: &'a GpuBuffer,
    /// Young's modulus per particle.
    pub youngs: &'a GpuBuffer,
    /// Lamé record per particle ([`super::lame`]).
    pub lame: &'a GpuBuffer,
    /// Anchored flag per particle (u32): one that holds its whole stencil
    /// adds nothing a free node sees and is skipped.
    pub anchored: &'a GpuBuffer,
    /// The active box and the lists walked.
    pub lists: CellLists<'a>,
    /// The grid's (m, mv) (atomic f32, 4 words per node), zero over the box
    /// before.
    pub nodes: &'a GpuBuffer,
}

impl<'a> CellScatterBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 9] {
        let [params, state, youngs, lame, anchored, nodes] = named_buffers![
            self.uniforms => "params",
            self.state,
            self.youngs,
            self.lame,
            self.anchored,
            self.nodes,
        ];
        let [node_box, cell_head, particle_next] = self.lists.by_name();
        [
            params,
            state,
            youngs,
            lame,
            anchored,
            nodes,
            node_box,
            cell_head,
            particle_next,
        ]
    }
}

/// The `mpm/cell_scatter` kernel (entry point `p2g`).
pub struct CellScatter {
    kernel: ComputeKernel,
}

impl CellScatter {
    /// Entry point `p2g` of shaders/mpm/cell_scatter.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/cell_scatter",
        entry: "p2g",
        bindings: &concat_bindings::<9>(
            &[
                Binding::uniform("params", 0),
                Binding::read("state", 2),
                Binding::read("youngs", 3),
                Binding::read("lame", 4),
                Binding::read("anchored", 5),
                Binding::read_write("nodes", 6),
            ],
            &CellLists::BINDINGS,
        ),
    };

    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Bind group of a dispatch on `b`.
    pub fn bind(&self, ctx: &GpuContext, b: &CellScatterBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.by_name())
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
