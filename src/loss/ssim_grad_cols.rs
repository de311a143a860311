//! SSIM backward pass 2 and the loss gradient (shaders/loss/ssim_grad_cols.wgsl):
//! the vertical window sums of the derivative maps, combined with the L1
//! term's sign into one channel of `∂L/∂pixel`.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct SsimGradColsBuffers<'a> {
    /// The channel's [`super::uniforms::LossUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// The render, `vec4<f32>` per pixel.
    pub image: &'a GpuBuffer,
    /// The reference frame, packed 8-bit RGBA per pixel.
    pub reference: &'a GpuBuffer,
    /// `b / 255` for the 256 byte values.
    pub decode: &'a GpuBuffer,
    /// [`super::ssim_grad_rows`]' output.
    pub rows: &'a GpuBuffer,
    /// Output: `∂L/∂(R, G, B, A)` per pixel, `vec4<f32>`; this pass writes
    /// its channel (and, for red, the alpha gradient 0).
    pub grad_image: &'a GpuBuffer,
    /// The loss mask (0/1 bytes), or a placeholder when the uniforms say
    /// the frame has none.
    pub mask: &'a GpuBuffer,
}

/// The `loss/ssim_grad_cols` kernel.
pub struct SsimGradCols {
    kernel: ComputeKernel,
}

impl SsimGradCols {
    /// Entry point `main` of shaders/loss/ssim_grad_cols.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "loss/ssim_grad_cols",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("image", 1),
            Binding::read("reference", 2),
            Binding::read("decode", 3),
            Binding::read("rows", 4),
            Binding::read_write("grad_image", 5),
            Binding::read("mask", 6),
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
        b: &SsimGradColsBuffers,
        pixels: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms,
                b.image,
                b.reference,
                b.decode,
                b.rows,
                b.grad_image,
                b.mask,
            ],
        );
        self.kernel.dispatch_threads(encoder, &bind_group, pixels);
    }
}
