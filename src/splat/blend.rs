//! Forward blending kernel (shaders/splat/blend.wgsl): one workgroup per
//! 16×16 tile, front-to-back compositing of the tile's depth-ordered list.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct BlendBuffers<'a> {
    /// [`super::uniforms::RasterUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `ProjectedSplat` per splat.
    pub projected: &'a GpuBuffer,
    /// Splat ids of the tile-sorted intersection list.
    pub splat_ids: &'a GpuBuffer,
    /// `vec2<u32>` [start, end) per tile.
    pub ranges: &'a GpuBuffer,
    /// Output `vec4<f32>` per pixel: linear RGB over the background, alpha.
    pub image: &'a GpuBuffer,
    /// Output u32 per pixel: list entries walked up to the last composited one.
    pub last_index: &'a GpuBuffer,
}

/// The blending kernel.
pub struct Blend {
    kernel: ComputeKernel,
}

impl Blend {
    /// Entry point `main` of shaders/splat/blend.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "splat/blend",
        entry: "main",
        bindings: &[
            Binding::uniform("u", 0),
            Binding::read("projected", 1),
            Binding::read("splat_ids", 2),
            Binding::read("ranges", 3),
            Binding::read_write("image", 4),
            Binding::read_write("last_index", 5),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the blend of a `tiles[0] × tiles[1]` tile grid.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &BlendBuffers,
        tiles: [u32; 2],
    ) {
        let bg = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms => "u",
                b.projected,
                b.splat_ids,
                b.ranges,
                b.image,
                b.last_index,
            ],
        );
        self.kernel.dispatch(encoder, &bg, [tiles[0], tiles[1], 1]);
    }
}
