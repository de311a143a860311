//! Tile binning kernels (shaders/splat/intersect_tiles.wgsl): `count` writes
//! the number of tiles each splat covers, in depth order; after an exclusive
//! prefix sum, `write` emits the (tile id, splat id) pairs at those offsets.
//! Both read the rectangle stored once by the projection, so the counting and
//! writing passes agree bit for bit.

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

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
}

/// The two binning kernels.
pub struct IntersectTiles {
    count: ComputeKernel,
    write: ComputeKernel,
}

const BINDINGS: [BindingKind; 7] = [
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
];

impl IntersectTiles {
    /// Compiles both entry points.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            count: ComputeKernel::new(ctx, "splat/intersect_tiles", "count", &BINDINGS)?,
            write: ComputeKernel::new(ctx, "splat/intersect_tiles", "write", &BINDINGS)?,
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
            &[
                b.uniforms,
                b.tile_rects,
                b.depth_order,
                b.offsets,
                b.counts,
                b.tile_ids,
                b.splat_ids,
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
