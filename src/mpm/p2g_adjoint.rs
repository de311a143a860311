//! Particle side of a substep's adjoint (shaders/mpm/p2g_adjoint.wgsl):
//! particles read (∂L/∂mv_i, ∂L/∂m_i) and v_i at their 27 nodes and write
//! ∂L/∂(state n), the adjoint of P2G (stress, polar derivative,
//! affine and mass paths) plus the particle terms of the adjoint of G2P,
//! and add to ∂L/∂E and ∂L/∂ν. Entry point `main` (GPUs) runs one thread per
//! particle; `main_cells` (CPU adapters) walks the substep's cell lists per (x, y)
//! column of the active box's base cells with a sliding window of nodes instead of
//! gathering them per particle (why: the shader's header).

use super::p2g_bin::CellLists;
use crate::gpu::binding_table::{concat_bindings, named_buffers};
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/p2g_adjoint` dispatch, named.
pub struct P2gAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Particle state at substep n+1, as G2P wrote it from `state` (its v
    /// and C are read instead of summed again).
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
    /// Output: ∂L/∂(state n) (overwritten).
    pub state_grad: &'a GpuBuffer,
    /// ∂L/∂E per particle, accumulated over substeps.
    pub youngs_grad: &'a GpuBuffer,
    /// Lamé record per particle ([`super::lame`]).
    pub lame: &'a GpuBuffer,
    /// ∂L/∂ν per particle, accumulated over substeps.
    pub poisson_grad: &'a GpuBuffer,
}

impl<'a> P2gAdjointBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 12] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.state_next,
            self.youngs,
            self.anchored,
            self.state_grad_next,
            self.grid_grad,
            self.grid_velocity,
            self.state_grad,
            self.youngs_grad,
            self.lame,
            self.poisson_grad,
        ]
    }
}

/// Buffers of one `mpm/p2g_adjoint::main_cells` dispatch: those of `main`,
/// then the substep's active box and cell lists.
pub struct P2gAdjointCellsBuffers<'a> {
    /// The buffers of `main`.
    pub adjoint: P2gAdjointBuffers<'a>,
    /// The lists walked (only read).
    pub lists: CellLists<'a>,
}

impl<'a> P2gAdjointCellsBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 15] {
        let [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11] = self.adjoint.by_name();
        let [l0, l1, l2] = self.lists.by_name();
        [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, l0, l1, l2]
    }
}

/// The two entry points of `mpm/p2g_adjoint`.
pub struct P2gAdjoint {
    kernel: ComputeKernel,
    cells: ComputeKernel,
}

impl P2gAdjoint {
    /// The bindings of `main`.
    const MAIN_BINDINGS: [Binding; 12] = [
        Binding::uniform("params", 0),
        Binding::read("state", 1),
        Binding::read("state_next", 2),
        Binding::read("youngs", 3),
        Binding::read("anchored", 4),
        Binding::read("state_grad_next", 5),
        Binding::read("grid_grad", 6),
        Binding::read("grid_velocity", 7),
        Binding::read_write("state_grad", 8),
        Binding::read_write("youngs_grad", 9),
        Binding::read("lame", 13),
        Binding::read_write("poisson_grad", 14),
    ];

    /// Entry point `main` of shaders/mpm/p2g_adjoint.wgsl.
    pub const MAIN: KernelSpec = KernelSpec {
        shader: "mpm/p2g_adjoint",
        entry: "main",
        bindings: &Self::MAIN_BINDINGS,
    };

    /// Entry point `main_cells` of shaders/mpm/p2g_adjoint.wgsl: the bindings of
    /// `main` and the cell lists.
    pub const MAIN_CELLS: KernelSpec = KernelSpec {
        shader: "mpm/p2g_adjoint",
        entry: "main_cells",
        bindings: &concat_bindings::<15>(&Self::MAIN_BINDINGS, &CellLists::BINDINGS),
    };

    /// Compiles both entry points.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::MAIN)?,
            cells: ComputeKernel::new(ctx, &Self::MAIN_CELLS)?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &P2gAdjointBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.by_name())
    }

    /// Bind group of a `main_cells` dispatch.
    pub fn bind_cells(&self, ctx: &GpuContext, b: &P2gAdjointCellsBuffers) -> wgpu::BindGroup {
        self.cells.bind(ctx, &b.by_name())
    }

    /// Records one `main` dispatch over `count` particles.
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        count: u32,
    ) {
        self.kernel.dispatch_threads(encoder, bind_group, count);
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
