//! Block step of the exclusive prefix sum (shaders/gpu/prefix_sum_blocks.wgsl):
//! each workgroup scans [`PREFIX_SUM_BLOCK_SIZE`] consecutive u32 in place
//! and writes the block's total. Orchestrated by [`super::prefix_sum::PrefixSum`].

use bytemuck::{Pod, Zeroable};

use super::binding_table::{named_buffers, Binding, KernelSpec};
use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::ComputeKernel;
use super::wgsl_layout::wgsl_mirror;

/// Elements scanned by one workgroup (`BLOCK_SIZE` in the WGSL).
pub const PREFIX_SUM_BLOCK_SIZE: u32 = 2048;

/// Uniforms of `gpu/prefix_sum_blocks` and `gpu/prefix_sum_add` (16-byte aligned).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct PrefixSumUniforms {
    /// Number of elements of this level.
    pub count: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 3],
}

wgsl_mirror!(PrefixSumUniforms => "Uniforms" in ["gpu/prefix_sum_blocks", "gpu/prefix_sum_add"] {
    count,
    _pad,
});

/// Buffers of one dispatch, named.
pub struct PrefixSumBlocksBuffers<'a> {
    /// [`PrefixSumUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `u32` per element, scanned in place within each block.
    pub data: &'a GpuBuffer,
    /// `u32` per block: the block's total (at least `ceil(count / 2048)` elements).
    pub block_sums: &'a GpuBuffer,
}

/// The block-scan kernel.
pub struct PrefixSumBlocks {
    kernel: ComputeKernel,
}

impl PrefixSumBlocks {
    /// Entry point `main` of shaders/gpu/prefix_sum_blocks.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "gpu/prefix_sum_blocks",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read_write("data", 1),
            Binding::read_write("block_sums", 2),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the block scans of `count` elements (one workgroup per block).
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &PrefixSumBlocksBuffers,
        count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![buffers.uniforms, buffers.data, buffers.block_sums,],
        );
        let blocks = count.div_ceil(PREFIX_SUM_BLOCK_SIZE);
        let groups = self
            .kernel
            .workgroups_for(blocks * self.kernel.workgroup_size()[0]);
        self.kernel.dispatch(encoder, &bind_group, groups);
    }
}
