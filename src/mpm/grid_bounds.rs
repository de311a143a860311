//! Bounds of the active box: per particle, the min/max grid nodes of its
//! stencil, reduced per workgroup then into one global `[min xyz, max xyz]`
//! (shaders/mpm/grid_bounds.wgsl). [`super::grid_box`] turns them into the
//! box and the indirect dispatch arguments of the per-node kernels.

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of `mpm/grid_bounds`, in binding order.
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
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 3] {
        [self.uniforms, self.state, self.bounds]
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
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/grid_bounds",
                "main",
                &[Uniform, StorageRead, StorageReadWrite],
            )?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &GridBoundsBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.in_binding_order())
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
