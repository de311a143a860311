//! `sums[targets[i]] += values[i]`: the smallest scatter-add kernel, used to
//! test both f32 atomic variants on each adapter (shaders/gpu/scatter_add.wgsl).

use bytemuck::{Pod, Zeroable};

use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{BindingKind, ComputeKernel};

/// Uniforms of `gpu/scatter_add` (16-byte aligned).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ScatterAddUniforms {
    /// Number of values.
    pub count: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 3],
}

/// Buffers of one dispatch, named.
pub struct ScatterAddBuffers<'a> {
    /// [`ScatterAddUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `f32` per value.
    pub values: &'a GpuBuffer,
    /// `u32` target slot per value.
    pub targets: &'a GpuBuffer,
    /// `f32` accumulators (must be zeroed or hold the starting sums).
    pub sums: &'a GpuBuffer,
}

/// The scatter-add kernel.
pub struct ScatterAdd {
    kernel: ComputeKernel,
}

impl ScatterAdd {
    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "gpu/scatter_add",
                "main",
                &[Uniform, StorageRead, StorageRead, StorageReadWrite],
            )?,
        })
    }

    /// Records the scatter-add of `count` values.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &ScatterAddBuffers,
        count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &[
                buffers.uniforms,
                buffers.values,
                buffers.targets,
                buffers.sums,
            ],
        );
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}
