//! SSIM forward pass 2 (shaders/loss/ssim_cols.wgsl): the vertical window
//! sums (the four moments), per pixel `1 − SSIM` and its derivatives with
//! respect to the moments, and per-workgroup partial sums of the loss terms.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct SsimColsBuffers<'a> {
    /// The channel's [`super::uniforms::LossUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// The render, `vec4<f32>` per pixel.
    pub image: &'a GpuBuffer,
    /// The reference frame, packed 8-bit RGBA per pixel.
    pub reference: &'a GpuBuffer,
    /// `b / 255` for the 256 byte values.
    pub decode: &'a GpuBuffer,
    /// [`super::ssim_rows`]' output.
    pub rows: &'a GpuBuffer,
    /// Output: `∂(1 − SSIM)/∂(μx, E[xy], E[(x − y)²])` and `1 − SSIM` per pixel.
    pub maps: &'a GpuBuffer,
    /// Output: one vec4 per channel and workgroup.
    pub partials: &'a GpuBuffer,
    /// The loss mask (0/1 bytes), or a placeholder when the uniforms say
    /// the frame has none.
    pub mask: &'a GpuBuffer,
}

/// The `loss/ssim_cols` kernel.
pub struct SsimCols {
    kernel: ComputeKernel,
}

impl SsimCols {
    /// Entry point `main` of shaders/loss/ssim_cols.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "loss/ssim_cols",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("image", 1),
            Binding::read("reference", 2),
            Binding::read("decode", 3),
            Binding::read("rows", 4),
            Binding::read_write("maps", 5),
            Binding::read_write("partials", 6),
            Binding::read("mask", 7),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Workgroups a pass over `pixels` dispatches, all of which write a
    /// partial sum (a grid folded into 2-D counts its padding workgroups
    /// too, which write zeros).
    pub fn partials_for(&self, pixels: u32) -> u32 {
        let [x, y, z] = self.kernel.workgroups_for(pixels);
        x * y * z
    }

    /// Records the pass over `pixels` pixels.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &SsimColsBuffers,
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
                b.maps,
                b.partials,
                b.mask,
            ],
        );
        self.kernel.dispatch_threads(encoder, &bind_group, pixels);
    }
}
