//! P2G: particles scatter mass, momentum and the anchored-node flag to the grid (shaders/mpm/p2g.wgsl, docs/design.md § MPM step 1).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/p2g` dispatch, named.
pub struct P2gBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state, 24 f32 per particle ([`super::layout`]).
    pub state: &'a GpuBuffer,
    /// Young's modulus per particle (f32).
    pub youngs: &'a GpuBuffer,
    /// Anchored flag per particle (u32, 0/1).
    pub anchored: &'a GpuBuffer,
    /// Grid (m, mv) per node, zeroed before the dispatch (atomic f32).
    pub grid: &'a GpuBuffer,
    /// Anchored flag per node (u32), zeroed before the dispatch.
    pub grid_anchored: &'a GpuBuffer,
    /// Lamé record per particle ([`super::lame`]).
    pub lame: &'a GpuBuffer,
}

impl<'a> P2gBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 7] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.youngs,
            self.anchored,
            self.grid,
            self.grid_anchored,
            self.lame,
        ]
    }
}

/// The `mpm/p2g` kernel.
pub struct P2g {
    kernel: ComputeKernel,
}

impl P2g {
    /// Entry point `main` of shaders/mpm/p2g.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/p2g",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("state", 1),
            Binding::read("youngs", 2),
            Binding::read("anchored", 3),
            Binding::read_write("grid", 4),
            Binding::read_write("grid_anchored", 5),
            Binding::read("lame", 6),
        ],
    };

    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &P2gBuffers) -> wgpu::BindGroup {
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
