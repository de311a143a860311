//! Adjoint of G2P, grid side (shaders/mpm/g2p_adjoint.wgsl): each
//! non-anchored particle adds its ∂L/∂(grid velocity) terms to its 27
//! nodes. Entry point `main` (GPUs) does it per particle with f32 atomics;
//! `main_cells` (CPU adapters) walks the substep's cell lists per (x, y)
//! column of the active box's base cells, as [`super::cell_scatter`] does for P2G, and
//! adds each node's sum once. The particle side of G2P* is in
//! [`super::p2g_adjoint`].

use super::p2g_bin::CellLists;
use crate::gpu::binding_table::{concat_bindings, named_buffers};
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/g2p_adjoint` dispatch, named.
pub struct G2pAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// ∂L/∂(state n+1), 24 f32 per particle.
    pub state_grad_next: &'a GpuBuffer,
    /// ∂L/∂(grid velocity), zero before the dispatch (atomic f32).
    pub grid_velocity_grad: &'a GpuBuffer,
}

impl<'a> G2pAdjointBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 5] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.anchored,
            self.state_grad_next,
            self.grid_velocity_grad,
        ]
    }
}

/// Buffers of one `mpm/g2p_adjoint::main_cells` dispatch: those of `main`,
/// then the substep's active box and cell lists.
pub struct G2pAdjointCellsBuffers<'a> {
    /// The buffers of `main`.
    pub adjoint: G2pAdjointBuffers<'a>,
    /// The lists walked (only read).
    pub lists: CellLists<'a>,
}

impl<'a> G2pAdjointCellsBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 8] {
        let [a0, a1, a2, a3, a4] = self.adjoint.by_name();
        let [l0, l1, l2] = self.lists.by_name();
        [a0, a1, a2, a3, a4, l0, l1, l2]
    }
}

/// The two entry points of `mpm/g2p_adjoint`.
pub struct G2pAdjoint {
    kernel: ComputeKernel,
    cells: ComputeKernel,
}

impl G2pAdjoint {
    /// The bindings of `main`.
    const MAIN_BINDINGS: [Binding; 5] = [
        Binding::uniform("params", 0),
        Binding::read("state", 1),
        Binding::read("anchored", 2),
        Binding::read("state_grad_next", 3),
        Binding::read_write("grid_velocity_grad", 4),
    ];

    /// Entry point `main` of shaders/mpm/g2p_adjoint.wgsl.
    pub const MAIN: KernelSpec = KernelSpec {
        shader: "mpm/g2p_adjoint",
        entry: "main",
        bindings: &Self::MAIN_BINDINGS,
    };

    /// Entry point `main_cells` of shaders/mpm/g2p_adjoint.wgsl: the bindings of
    /// `main` and the cell lists.
    pub const MAIN_CELLS: KernelSpec = KernelSpec {
        shader: "mpm/g2p_adjoint",
        entry: "main_cells",
        bindings: &concat_bindings::<8>(&Self::MAIN_BINDINGS, &CellLists::BINDINGS),
    };

    /// Compiles both entry points for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::MAIN)?,
            cells: ComputeKernel::new(ctx, &Self::MAIN_CELLS)?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &G2pAdjointBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.by_name())
    }

    /// Records one dispatch over `count` particles.
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        count: u32,
    ) {
        self.kernel.dispatch_threads(encoder, bind_group, count);
    }

    /// Bind group of a `main_cells` dispatch.
    pub fn bind_cells(&self, ctx: &GpuContext, b: &G2pAdjointCellsBuffers) -> wgpu::BindGroup {
        self.cells.bind(ctx, &b.by_name())
    }

    /// Records one `main_cells` dispatch over the (x, y) columns of the
    /// active box (`dispatch_args` from [`super::grid_box`]).
    pub fn dispatch_cells(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        dispatch_args: &GpuBuffer,
    ) {
        super::grid_box::dispatch_columns(&self.cells, encoder, bind_group, dispatch_args);
    }
}
