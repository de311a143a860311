//! Bounds of the active box: per particle, the min/max grid nodes of its
//! stencil, reduced per workgroup then into one global `[min xyz, max xyz]`
//! (shaders/mpm/grid_bounds.wgsl). [`super::grid_box`] turns them into the
//! box and the indirect dispatch arguments of the per-node kernels.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of `mpm/grid_bounds`, named.
pub struct GridBoundsBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state.
    pub state: &'a GpuBuffer,
    /// `[min xyz, max xyz]` node bounds (6 u32), accumulated; must hold
    /// [`EMPTY_BOUNDS`] before the dispatch (`mpm/grid_box` resets it).
    pub bounds: &'a GpuBuffer,
}

impl<'a> GridBoundsBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 3] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.bounds,
        ]
    }
}

/// Particles per invocation of `mpm/grid_bounds` (its `PARTICLES_PER_THREAD`).
const PARTICLES_PER_THREAD: u32 = 8;

/// Initial content of the bounds buffer (empty bounds).
pub const EMPTY_BOUNDS: [u32; 6] = [u32::MAX, u32::MAX, u32::MAX, 0, 0, 0];

/// The `mpm/grid_bounds` kernel.
pub struct GridBounds {
    kernel: ComputeKernel,
}

impl GridBounds {
    /// Entry point `main` of shaders/mpm/grid_bounds.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/grid_bounds",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("state", 1),
            Binding::read_write("bounds", 2),
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
    pub fn bind(&self, ctx: &GpuContext, b: &GridBoundsBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.by_name())
    }

    /// Records one dispatch over `particle_count` particles.
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        particle_count: u32,
    ) {
        self.kernel.dispatch_threads(
            encoder,
            bind_group,
            particle_count.div_ceil(PARTICLES_PER_THREAD),
        );
    }
}
