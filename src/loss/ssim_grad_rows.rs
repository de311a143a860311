//! SSIM backward pass 1 (shaders/loss/ssim_grad_rows.wgsl): the horizontal
//! window sums of the derivative maps (the adjoint of the forward's
//! zero-padded convolution with a symmetric window is the same convolution).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct SsimGradRowsBuffers<'a> {
    /// The channel's [`super::uniforms::LossUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// [`super::ssim_cols`]' derivative maps.
    pub maps: &'a GpuBuffer,
    /// Output: `vec4<f32>` per pixel.
    pub rows: &'a GpuBuffer,
}

/// The `loss/ssim_grad_rows` kernel.
pub struct SsimGradRows {
    kernel: ComputeKernel,
}

impl SsimGradRows {
    /// Entry point `main` of shaders/loss/ssim_grad_rows.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "loss/ssim_grad_rows",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("maps", 1),
            Binding::read_write("rows", 2),
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
        b: &SsimGradRowsBuffers,
        pixels: u32,
    ) {
        let bind_group = self
            .kernel
            .bind(ctx, &named_buffers![b.uniforms, b.maps, b.rows,]);
        self.kernel.dispatch_threads(encoder, &bind_group, pixels);
    }
}
