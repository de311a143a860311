//! Per-tile list ranges (shaders/splat/tile_ranges.wgsl): one thread per
//! intersection of the tile-sorted list marks where each tile's run starts
//! and ends; the ranges buffer must be zeroed first (empty tiles stay (0, 0)).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct TileRangesBuffers<'a> {
    /// [`super::uniforms::RasterUniforms`] with `intersection_count` set.
    pub uniforms: &'a GpuBuffer,
    /// Tile ids, sorted.
    pub tile_ids: &'a GpuBuffer,
    /// Output `vec2<u32>` [start, end) per tile (zeroed by the caller).
    pub ranges: &'a GpuBuffer,
}

/// The tile-ranges kernel.
pub struct TileRanges {
    kernel: ComputeKernel,
}

impl TileRanges {
    /// Entry point `main` of shaders/splat/tile_ranges.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "splat/tile_ranges",
        entry: "main",
        bindings: &[
            Binding::uniform("u", 0),
            Binding::read("tile_ids", 1),
            Binding::read_write("ranges", 2),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the pass over `intersection_count` intersections.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &TileRangesBuffers,
        intersection_count: u32,
    ) {
        let bg = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms => "u",
                b.tile_ids,
                b.ranges,
            ],
        );
        self.kernel
            .dispatch_threads(encoder, &bg, intersection_count);
    }
}
