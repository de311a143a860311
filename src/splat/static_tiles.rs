//! Tiles that only static splats reach (shaders/splat/static_tiles.wgsl):
//! `mark` flags the tile of every intersection whose splat may move, `skip`
//! gives every unflagged tile the range `SKIPPED_TILE`, which the blend
//! leaves as the backdrop's pixels and its backward walks past
//! ([`super::backdrop`], docs/design.md § Gaussian splatting).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of both entry points, named.
pub struct StaticTilesBuffers<'a> {
    /// [`super::uniforms::RasterUniforms`] with `intersection_count` set.
    pub uniforms: &'a GpuBuffer,
    /// Tile id per intersection, tile-sorted.
    pub tile_ids: &'a GpuBuffer,
    /// Splat id per intersection, tile-sorted.
    pub splat_ids: &'a GpuBuffer,
    /// u32 per splat: non-zero when it may move.
    pub moving: &'a GpuBuffer,
    /// u32 per tile, cleared by the caller: 1 when a moving splat reaches it.
    pub tile_moving: &'a GpuBuffer,
    /// `vec2<u32>` range per tile, written by the tile-ranges pass.
    pub ranges: &'a GpuBuffer,
}

/// The two static-tile kernels.
pub struct StaticTiles {
    mark: ComputeKernel,
    skip: ComputeKernel,
}

impl StaticTiles {
    /// The bindings of both entry points.
    pub const BINDINGS: &'static [Binding] = &[
        Binding::uniform("u", 0),
        Binding::read("tile_ids", 1),
        Binding::read("splat_ids", 2),
        Binding::read("moving", 3),
        Binding::read_write("tile_moving", 4),
        Binding::read_write("ranges", 5),
    ];

    /// Entry point `mark` of shaders/splat/static_tiles.wgsl.
    pub const MARK: KernelSpec = KernelSpec {
        shader: "splat/static_tiles",
        entry: "mark",
        bindings: Self::BINDINGS,
    };

    /// Entry point `skip` of shaders/splat/static_tiles.wgsl.
    pub const SKIP: KernelSpec = KernelSpec {
        shader: "splat/static_tiles",
        entry: "skip",
        bindings: Self::BINDINGS,
    };

    /// Compiles both entry points.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            mark: ComputeKernel::new(ctx, &Self::MARK)?,
            skip: ComputeKernel::new(ctx, &Self::SKIP)?,
        })
    }

    /// Records both passes: the flags cleared, `mark` over
    /// `intersection_count` intersections, `skip` over `tile_total` tiles.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &StaticTilesBuffers,
        intersection_count: u32,
        tile_total: u32,
    ) {
        encoder.clear_buffer(b.tile_moving, 0, Some(u64::from(tile_total) * 4));
        for (kernel, threads) in [(&self.mark, intersection_count), (&self.skip, tile_total)] {
            let bg = kernel.bind(
                ctx,
                &named_buffers![
                    b.uniforms => "u",
                    b.tile_ids,
                    b.splat_ids,
                    b.moving,
                    b.tile_moving,
                    b.ranges,
                ],
            );
            kernel.dispatch_threads(encoder, &bg, threads);
        }
    }
}
