//! Tile binning kernels (shaders/splat/intersect_tiles.wgsl): `count` writes
//! the number of tiles each splat reaches, in depth order; after an
//! exclusive prefix sum, `write` emits the (tile id, splat id) pairs at
//! those offsets. A splat reaches the tiles of the rectangle stored once by
//! the projection (its ellipse's axis-aligned box) that the ellipse itself
//! reaches: a thin, tilted splat's box holds many tiles it never touches,
//! each a blending pass of 256 pixels over a splat that adds nothing
//! (docs/design.md § Gaussian splatting, "Tile binning"). The shader's
//! header says why the two passes' lists always agree.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of both entry points, named.
pub struct IntersectTilesBuffers<'a> {
    /// [`super::uniforms::RasterUniforms`] (`intersection_count` set for `write`).
    pub uniforms: &'a GpuBuffer,
    /// `vec4<u32>` tile rectangle per splat.
    pub tile_rects: &'a GpuBuffer,
    /// Splat ids sorted by depth.
    pub depth_order: &'a GpuBuffer,
    /// Exclusive prefix sum of `counts` (read by `write`; a separate buffer,
    /// since one bind group cannot hold a buffer both read-only and writable).
    pub offsets: &'a GpuBuffer,
    /// `splat_count + 1` u32: tiles per splat in depth order, last entry 0.
    pub counts: &'a GpuBuffer,
    /// Output tile id per intersection.
    pub tile_ids: &'a GpuBuffer,
    /// Output splat id per intersection.
    pub splat_ids: &'a GpuBuffer,
    /// The projected splats (mean, conic, opacity: the ellipse each tile
    /// is tested against).
    pub projected: &'a GpuBuffer,
}

/// The two binning kernels.
pub struct IntersectTiles {
    count: ComputeKernel,
    write: ComputeKernel,
}

impl IntersectTiles {
    /// The bindings of both entry points.
    pub const BINDINGS: &'static [Binding] = &[
        Binding::uniform("u", 0),
        Binding::read("tile_rects", 1),
        Binding::read("depth_order", 2),
        Binding::read("offsets", 3),
        Binding::read_write("counts", 4),
        Binding::read_write("tile_ids", 5),
        Binding::read_write("splat_ids", 6),
        Binding::read("projected", 7),
    ];

    /// Entry point `count` of shaders/splat/intersect_tiles.wgsl.
    pub const COUNT: KernelSpec = KernelSpec {
        shader: "splat/intersect_tiles",
        entry: "count",
        bindings: Self::BINDINGS,
    };

    /// Entry point `write` of shaders/splat/intersect_tiles.wgsl.
    pub const WRITE: KernelSpec = KernelSpec {
        shader: "splat/intersect_tiles",
        entry: "write",
        bindings: Self::BINDINGS,
    };

    /// Compiles both entry points.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            count: ComputeKernel::new(ctx, &Self::COUNT)?,
            write: ComputeKernel::new(ctx, &Self::WRITE)?,
        })
    }

    fn bind(
        &self,
        kernel: &ComputeKernel,
        ctx: &GpuContext,
        b: &IntersectTilesBuffers,
    ) -> wgpu::BindGroup {
        kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms => "u",
                b.tile_rects,
                b.depth_order,
                b.offsets,
                b.counts,
                b.tile_ids,
                b.splat_ids,
                b.projected,
            ],
        )
    }

    /// Records the counting pass over `splat_count` splats (+1 zero entry).
    pub fn dispatch_count(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &IntersectTilesBuffers,
        splat_count: u32,
    ) {
        let bg = self.bind(&self.count, ctx, b);
        self.count.dispatch_threads(encoder, &bg, splat_count + 1);
    }

    /// Records the writing pass over `splat_count` splats.
    pub fn dispatch_write(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &IntersectTilesBuffers,
        splat_count: u32,
    ) {
        let bg = self.bind(&self.write, ctx, b);
        self.write.dispatch_threads(encoder, &bg, splat_count);
    }
}
