//! Backward blending kernel (shaders/splat/blend_adjoint.wgsl): per tile,
//! front-to-back replay of the forward walk (64 threads, a 2×2 pixel block
//! each), per-splat gradients reduced in registers over the block, then in
//! workgroup memory, then one global atomic add per splat and component per batch
//! of 256 splats (f32 atomics in the context's mode: native or CAS).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Floats per splat in the 2D gradient buffer: mean x, y; conic a, b, c;
/// opacity; red, green, blue.
pub const GRAD_2D_STRIDE: u32 = 9;

/// Buffers of one dispatch, named.
pub struct BlendAdjointBuffers<'a> {
    /// [`super::uniforms::RasterUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `ProjectedSplat` per splat (from the forward).
    pub projected: &'a GpuBuffer,
    /// Splat ids of the tile-sorted intersection list (from the forward).
    pub splat_ids: &'a GpuBuffer,
    /// `vec2<u32>` per tile (from the forward).
    pub ranges: &'a GpuBuffer,
    /// The forward's output image.
    pub image: &'a GpuBuffer,
    /// The forward's last-index per pixel.
    pub last_index: &'a GpuBuffer,
    /// dL/d(R, G, B, A) per pixel, `vec4<f32>`.
    pub grad_image: &'a GpuBuffer,
    /// Output, accumulated: [`GRAD_2D_STRIDE`] f32 per splat (zeroed by the caller).
    pub grad_2d: &'a GpuBuffer,
}

/// The backward blending kernel.
pub struct BlendAdjoint {
    kernel: ComputeKernel,
}

impl BlendAdjoint {
    /// Entry point `main` of shaders/splat/blend_adjoint.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "splat/blend_adjoint",
        entry: "main",
        bindings: &[
            Binding::uniform("u", 0),
            Binding::read("projected", 1),
            Binding::read("splat_ids", 2),
            Binding::read("ranges", 3),
            Binding::read("image", 4),
            Binding::read("last_index", 5),
            Binding::read("grad_image", 6),
            Binding::read_write("grad_2d", 7),
        ],
    };

    /// Compiles the kernel for the context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the backward blend over a `tiles[0] × tiles[1]` tile grid.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &BlendAdjointBuffers,
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
                b.grad_image,
                b.grad_2d,
            ],
        );
        self.kernel.dispatch(encoder, &bg, [tiles[0], tiles[1], 1]);
    }
}
