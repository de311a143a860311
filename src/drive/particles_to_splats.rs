//! Particles → splats on the GPU (shaders/drive/particles_to_splats.wgsl):
//! moves each simulated splat's centre to its particle's position in world
//! units, so a rollout's frame renders without a readback.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Uniforms of `drive/particles_to_splats` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ParticlesToSplatsUniforms {
    /// The simulation cube's lower corner (world units) and its side.
    pub box_min_side: [f32; 4],
    /// Number of particles.
    pub count: u32,
    /// Padding to 32 bytes.
    pub _pad: [u32; 3],
}

/// Buffers of one dispatch, named, in binding order.
pub struct ParticlesToSplatsBuffers<'a> {
    /// [`ParticlesToSplatsUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// MPM state (24 f32 per particle, [`crate::mpm::layout`]).
    pub state: &'a GpuBuffer,
    /// The splat index of each particle (u32).
    pub splat_index: &'a GpuBuffer,
    /// Splat centres, 3 f32 per splat ([`crate::splat::SplatBuffers::means`]).
    pub means: &'a GpuBuffer,
}

/// The `drive/particles_to_splats` kernel.
pub struct ParticlesToSplats {
    kernel: ComputeKernel,
}

impl ParticlesToSplats {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "drive/particles_to_splats",
                "main",
                &[Uniform, StorageRead, StorageRead, StorageReadWrite],
            )?,
        })
    }

    /// Records the update of `count` particles' splats.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &ParticlesToSplatsBuffers,
        count: u32,
    ) {
        let bind_group = self
            .kernel
            .bind(ctx, &[b.uniforms, b.state, b.splat_index, b.means]);
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}
