//! Cell-binned P2G, first half: the per-cell particle lists
//! (shaders/mpm/p2g_bin.wgsl, docs/design.md § MPM step 1).
//!
//! On CPU adapters (lavapipe) every f32 atomic add is a per-lane
//! compare-and-swap loop, and P2G's 108 per particle are ~75% of its time.
//! Binned P2G links each particle into the list of its stencil's base cell
//! (one u32 exchange per particle, reading only x), then
//! [`super::cell_scatter`] computes each particle's P2G terms as it walks
//! the lists and sums each cell's particles in registers before one atomic
//! per node and component per cell. The lists ([`CellLists`]) belong to
//! the substep's grid: the adjoint of the substep walks them again, for G2P*'s scatter
//! ([`super::g2p_adjoint`] `main_cells`) and for P2G*
//! ([`super::p2g_adjoint`] `main_cells`), and [`super::grid_clear`] empties
//! them before the grid's next binning. GPUs keep the one-kernel scatter of
//! [`super::p2g`] (fast L2 atomics, no list walks);
//! [`super::simulator::MpmSimulator`] picks by adapter type.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// What a column walk over a substep's particles reads: the substep's
/// active box and the cell lists its P2G binning built (every particle,
/// anchored or not, on the list of its stencil's base cell at x_n).
#[derive(Clone, Copy)]
pub struct CellLists<'a> {
    /// Active box `[origin xyz, dims xyz, count, 0]` from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Per node (as base cell): p + 1 of the list's first particle, 0 = empty.
    pub cell_head: &'a GpuBuffer,
    /// Per particle: the next particle of its cell's list (p + 1, 0 = end).
    pub particle_next: &'a GpuBuffer,
}

impl<'a> CellLists<'a> {
    /// Their rows in every walker's binding table: shaders/mpm/cell_lists.wgsl
    /// declares them once for the three walkers.
    pub const BINDINGS: [Binding; 3] = [
        Binding::read("node_box", 10),
        Binding::read("cell_head", 11),
        Binding::read("particle_next", 12),
    ];

    /// The three buffers, named as every walker declares them (at bindings
    /// 10–12: shaders/mpm/cell_lists.wgsl).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 3] {
        named_buffers![self.node_box, self.cell_head, self.particle_next]
    }
}

/// Buffers of one `mpm/p2g_bin` dispatch, named.
pub struct P2gBinBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state, 24 f32 per particle ([`super::layout`]; only x is
    /// read).
    pub state: &'a GpuBuffer,
    /// Anchored flag per particle (u32, 0/1).
    pub anchored: &'a GpuBuffer,
    /// Per node (as base cell): p + 1 of the list's first particle, 0 =
    /// empty; zero over the active box before the dispatch
    /// ([`super::grid_clear`]).
    pub cell_head: &'a GpuBuffer,
    /// Output: per particle, the next particle of its cell's list (p + 1, 0 = end).
    pub particle_next: &'a GpuBuffer,
    /// Anchored flag per node (u32), zeroed before the dispatch.
    pub grid_anchored: &'a GpuBuffer,
}

impl<'a> P2gBinBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 6] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.anchored,
            self.cell_head,
            self.particle_next,
            self.grid_anchored,
        ]
    }
}

/// The `mpm/p2g_bin` kernel.
pub struct P2gBin {
    kernel: ComputeKernel,
}

impl P2gBin {
    /// Entry point `main` of shaders/mpm/p2g_bin.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/p2g_bin",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("state", 1),
            Binding::read("anchored", 2),
            Binding::read_write("cell_head", 3),
            Binding::read_write("particle_next", 4),
            Binding::read_write("grid_anchored", 5),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Bind group for `b`.
    pub fn bind(&self, ctx: &GpuContext, b: &P2gBinBuffers) -> wgpu::BindGroup {
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
}
