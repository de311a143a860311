//! Add-back step of the exclusive prefix sum (shaders/gpu/prefix_sum_add.wgsl):
//! `data[i] += block_offsets[i / 2048]`, the scanned block totals of the level
//! below. Orchestrated by [`super::prefix_sum::PrefixSum`].

use super::binding_table::{named_buffers, Binding, KernelSpec};
use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::ComputeKernel;

/// Buffers of one dispatch, named.
pub struct PrefixSumAddBuffers<'a> {
    /// [`super::prefix_sum_blocks::PrefixSumUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `u32` per element, block-scanned.
    pub data: &'a GpuBuffer,
    /// `u32` per block: exclusive scan of the block totals.
    pub block_offsets: &'a GpuBuffer,
}

/// The add-back kernel.
pub struct PrefixSumAdd {
    kernel: ComputeKernel,
}

impl PrefixSumAdd {
    /// Entry point `main` of shaders/gpu/prefix_sum_add.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "gpu/prefix_sum_add",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read_write("data", 1),
            Binding::read("block_offsets", 2),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the add-back over `count` elements.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &PrefixSumAddBuffers,
        count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![buffers.uniforms, buffers.data, buffers.block_offsets,],
        );
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}
