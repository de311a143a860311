//! The active box: the grid nodes that the particles' stencils touch in a
//! substep. Per-node work (clearing, the grid update and its adjoint) runs
//! over this box only, through indirect dispatches whose size the GPU
//! computes, so a small object in a large grid does not pay for the whole
//! grid (on a 64³ grid with 8,000 particles the box is ~2% of the nodes).
//! Two kernels: `mpm/grid_bounds` (per particle: min/max stencil nodes,
//! reduced per workgroup) and `mpm/grid_box` (one invocation: box, node
//! count, dispatch arguments, and the reset of the bounds).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of `mpm/grid_bounds`, in binding order.
pub struct GridBoundsBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state.
    pub state: &'a GpuBuffer,
    /// `[min xyz, max xyz]` node bounds (6 u32), accumulated.
    pub bounds: &'a GpuBuffer,
}

/// Buffers of `mpm/grid_box`, in binding order.
pub struct GridBoxBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Bounds from `mpm/grid_bounds` (read, then reset).
    pub bounds: &'a GpuBuffer,
    /// Output: `[origin xyz, dims xyz, count, 0]` (8 u32).
    pub node_box: &'a GpuBuffer,
    /// Output: indirect dispatch arguments (3 u32) of the per-node kernels.
    pub dispatch_args: &'a GpuBuffer,
}

/// Particles per invocation of `mpm/grid_bounds` (its `PARTICLES_PER_THREAD`).
const PARTICLES_PER_THREAD: u32 = 8;

/// Initial content of the bounds buffer (empty bounds).
pub const EMPTY_BOUNDS: [u32; 6] = [u32::MAX, u32::MAX, u32::MAX, 0, 0, 0];

/// The two active-box kernels.
pub struct GridBox {
    bounds: ComputeKernel,
    finish: ComputeKernel,
}

impl GridBox {
    /// Compiles both kernels.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            bounds: ComputeKernel::new(
                ctx,
                "mpm/grid_bounds",
                "main",
                &[Uniform, StorageRead, StorageReadWrite],
            )?,
            finish: ComputeKernel::new(
                ctx,
                "mpm/grid_box",
                "main",
                &[
                    Uniform,
                    StorageReadWrite,
                    StorageReadWrite,
                    StorageReadWrite,
                ],
            )?,
        })
    }

    /// Bind group of the bounds kernel.
    pub fn bind_bounds(&self, ctx: &GpuContext, b: &GridBoundsBuffers) -> wgpu::BindGroup {
        self.bounds.bind(ctx, &[b.uniforms, b.state, b.bounds])
    }

    /// Bind group of the box kernel.
    pub fn bind_box(&self, ctx: &GpuContext, b: &GridBoxBuffers) -> wgpu::BindGroup {
        self.finish
            .bind(ctx, &[b.uniforms, b.bounds, b.node_box, b.dispatch_args])
    }

    /// Records both kernels: bounds over `particle_count` particles, then the box.
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bounds_group: &wgpu::BindGroup,
        box_group: &wgpu::BindGroup,
        particle_count: u32,
    ) {
        self.bounds.dispatch_threads(
            encoder,
            bounds_group,
            particle_count.div_ceil(PARTICLES_PER_THREAD),
        );
        self.finish.dispatch(encoder, box_group, [1, 1, 1]);
    }
}
