//! Radix-sort pass step 1 (shaders/gpu/radix_sort_histogram.wgsl): digit
//! histograms of each tile of [`RADIX_SORT_TILE_SIZE`] keys, digit-major.
//! Orchestrated by [`super::radix_sort::RadixSort`].

use super::binding_table::{named_buffers, Binding, KernelSpec};
use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::ComputeKernel;
use super::radix_sort_pass::RADIX_SORT_TILE_SIZE;

/// Buffers of one dispatch, named.
pub struct RadixSortHistogramBuffers<'a> {
    /// [`super::radix_sort_pass::RadixPassUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `u32` keys.
    pub keys: &'a GpuBuffer,
    /// `u32` per (digit, tile), at `digit * num_tiles + tile` (16 · num_tiles).
    pub histograms: &'a GpuBuffer,
}

/// The histogram kernel.
pub struct RadixSortHistogram {
    kernel: ComputeKernel,
}

impl RadixSortHistogram {
    /// Entry point `main` of shaders/gpu/radix_sort_histogram.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "gpu/radix_sort_histogram",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("keys", 1),
            Binding::read_write("histograms", 2),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the histograms of `count` keys (one workgroup per tile).
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &RadixSortHistogramBuffers,
        count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![buffers.uniforms, buffers.keys, buffers.histograms,],
        );
        let tiles = count.div_ceil(RADIX_SORT_TILE_SIZE);
        let groups = self
            .kernel
            .workgroups_for(tiles * self.kernel.workgroup_size()[0]);
        self.kernel.dispatch(encoder, &bind_group, groups);
    }
}
