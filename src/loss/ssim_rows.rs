//! SSIM forward pass 1 (shaders/loss/ssim_rows.wgsl): per pixel of one
//! channel, the horizontal 11-tap window sums of `(x, y, x·y, (x − y)²)`.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct SsimRowsBuffers<'a> {
    /// The channel's [`super::uniforms::LossUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// The render, `vec4<f32>` per pixel.
    pub image: &'a GpuBuffer,
    /// The reference frame, packed 8-bit RGBA per pixel.
    pub reference: &'a GpuBuffer,
    /// `b / 255` for the 256 byte values.
    pub decode: &'a GpuBuffer,
    /// Output: `vec4<f32>` per pixel.
    pub rows: &'a GpuBuffer,
}

/// The `loss/ssim_rows` kernel.
pub struct SsimRows {
    kernel: ComputeKernel,
}

impl SsimRows {
    /// Entry point `main` of shaders/loss/ssim_rows.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "loss/ssim_rows",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("image", 1),
            Binding::read("reference", 2),
            Binding::read("decode", 3),
            Binding::read_write("rows", 4),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the pass over `pixels` pixels.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &SsimRowsBuffers,
        pixels: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![b.uniforms, b.image, b.reference, b.decode, b.rows,],
        );
        self.kernel.dispatch_threads(encoder, &bind_group, pixels);
    }
}
