//! Radix-sort pass step 3 (shaders/gpu/radix_sort_scatter.wgsl): stable
//! scatter of each tile's (key, value) pairs to the positions given by the
//! scanned histograms. Orchestrated by [`super::radix_sort::RadixSort`].

use super::binding_table::{named_buffers, Binding, KernelSpec};
use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::ComputeKernel;
use super::radix_sort_pass::RADIX_SORT_TILE_SIZE;

/// Buffers of one dispatch, named.
pub struct RadixSortScatterBuffers<'a> {
    /// [`super::radix_sort_pass::RadixPassUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `u32` keys to read.
    pub keys_in: &'a GpuBuffer,
    /// `u32` values to read.
    pub values_in: &'a GpuBuffer,
    /// Exclusive scan of the digit-major tile histograms.
    pub histogram_offsets: &'a GpuBuffer,
    /// `u32` keys, written in this pass's digit order.
    pub keys_out: &'a GpuBuffer,
    /// `u32` values, moved with their keys.
    pub values_out: &'a GpuBuffer,
}

/// The scatter kernel.
pub struct RadixSortScatter {
    kernel: ComputeKernel,
}

impl RadixSortScatter {
    /// Entry point `main` of shaders/gpu/radix_sort_scatter.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "gpu/radix_sort_scatter",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("keys_in", 1),
            Binding::read("values_in", 2),
            Binding::read("histogram_offsets", 3),
            Binding::read_write("keys_out", 4),
            Binding::read_write("values_out", 5),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the scatter of `count` pairs (one workgroup per tile).
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &RadixSortScatterBuffers,
        count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![
                buffers.uniforms,
                buffers.keys_in,
                buffers.values_in,
                buffers.histogram_offsets,
                buffers.keys_out,
                buffers.values_out,
            ],
        );
        let tiles = count.div_ceil(RADIX_SORT_TILE_SIZE);
        let groups = self
            .kernel
            .workgroups_for(tiles * self.kernel.workgroup_size()[0]);
        self.kernel.dispatch(encoder, &bind_group, groups);
    }
}
