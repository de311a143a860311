//! Uniforms of a radix sort whose count lives in a GPU buffer
//! (shaders/gpu/radix_sort_indirect_params.wgsl): one invocation reads the
//! count, clamps it to the capacity, and writes every pass's and prefix-sum
//! level's uniforms plus a status pair. Used by
//! [`super::radix_sort::RadixSort::sort_indirect`].

use bytemuck::{Pod, Zeroable};

use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{BindingKind, ComputeKernel};

/// Uniforms of `gpu/radix_sort_indirect_params` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RadixSortIndirectParamsUniforms {
    /// Index of the count (u32) in the count buffer.
    pub count_index: u32,
    /// Capacity; larger counts are clamped.
    pub max_count: u32,
    /// Number of LSD passes.
    pub num_passes: u32,
    /// Number of prefix-sum levels over the tile histograms.
    pub num_levels: u32,
}

/// Buffers of one dispatch, named.
pub struct RadixSortIndirectParamsBuffers<'a> {
    /// [`RadixSortIndirectParamsUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Holds the count at `count_index`.
    pub count_source: &'a GpuBuffer,
    /// [`super::radix_sort::RadixPassUniforms`] per pass (shift, digit_mask used).
    pub pass_templates: &'a GpuBuffer,
    /// Output: 4 u32 per pass, 4 per level, then [requested, sorted] counts.
    pub params: &'a GpuBuffer,
}

/// The parameter kernel (a single invocation).
pub struct RadixSortIndirectParams {
    kernel: ComputeKernel,
}

impl RadixSortIndirectParams {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "gpu/radix_sort_indirect_params",
                "main",
                &[Uniform, StorageRead, StorageRead, StorageReadWrite],
            )?,
        })
    }

    /// Records the single-invocation dispatch.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &RadixSortIndirectParamsBuffers,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &[
                buffers.uniforms,
                buffers.count_source,
                buffers.pass_templates,
                buffers.params,
            ],
        );
        self.kernel.dispatch(encoder, &bind_group, [1, 1, 1]);
    }
}
