//! The image loss's per-image buffers, kept from one evaluation to the next
//! (a fit evaluates thousands of frames of one size) and grown, never
//! shrunk, when a larger image comes.
//!
//! Reuse rules (read from the kernels, not assumed): every per-pixel buffer
//! is written in full for the image's pixel count before it is read in the
//! same evaluation (`rows` by ssim_rows and again by ssim_grad_rows, `maps`
//! by ssim_cols, every component of `grad_image` by the three ssim_grad_cols
//! passes), and every workgroup of ssim_cols writes its partial sum, so no
//! buffer is cleared. Capacity past the image holds stale data and is never
//! read: the kernels take the pixel count from the uniforms.

use bytemuck::Zeroable;

use crate::gpu::{GpuBuffer, GpuContext, GpuError, STORAGE};

use super::reference_frame::decode_table;
use super::uniforms::{LossUniforms, ReduceUniforms};

/// Makes `buffer` hold at least `bytes` (reallocated under the same label
/// when it does not; contents lost; the old one is dropped first).
fn reserve(ctx: &GpuContext, buffer: &mut GpuBuffer, bytes: u64) -> Result<(), GpuError> {
    if buffer.size() >= bytes {
        return Ok(());
    }
    let label = buffer.label().to_string();
    *buffer = ctx.create_buffer(&label, 4, STORAGE)?;
    *buffer = ctx.create_buffer(&label, bytes, STORAGE)?;
    Ok(())
}

/// Every buffer an evaluation uses besides the caller's (render, reference,
/// terms).
pub(crate) struct Workspace {
    /// [`LossUniforms`] per RGB channel.
    pub uniforms: [GpuBuffer; 3],
    /// [`ReduceUniforms`].
    pub reduce_uniforms: GpuBuffer,
    /// `b / 255` for the 256 byte values (written once).
    pub decode: GpuBuffer,
    /// `vec4<f32>` per pixel: horizontal window sums (forward, then backward).
    pub rows: GpuBuffer,
    /// `vec4<f32>` per pixel: the derivatives of `1 − SSIM` and its value.
    pub maps: GpuBuffer,
    /// `vec4<f32>` per pixel: `∂L/∂(R, G, B, A)`.
    pub grad_image: GpuBuffer,
    /// vec4 per channel and workgroup: partial sums of the loss terms.
    pub partials: GpuBuffer,
    /// One zero word bound as the mask of an unmasked frame (never read:
    /// the uniforms say there is no mask).
    pub no_mask: GpuBuffer,
}

impl Workspace {
    /// An empty workspace (4-byte placeholders, grown on first use).
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        let uniform = |c: usize| {
            ctx.uniform_buffer(
                &format!("loss uniforms channel {c}"),
                &LossUniforms::zeroed(),
            )
        };
        Ok(Self {
            uniforms: [uniform(0)?, uniform(1)?, uniform(2)?],
            reduce_uniforms: ctx
                .uniform_buffer("loss reduce uniforms", &ReduceUniforms::zeroed())?,
            decode: ctx.storage_from_slice("loss byte decode table", &decode_table())?,
            rows: ctx.create_buffer("loss ssim rows", 4, STORAGE)?,
            maps: ctx.create_buffer("loss ssim maps", 4, STORAGE)?,
            grad_image: ctx.create_buffer("loss grad image", 4, STORAGE)?,
            partials: ctx.create_buffer("loss partial sums", 4, STORAGE)?,
            no_mask: ctx.storage_from_slice("loss no mask", &[0u32])?,
        })
    }

    /// Sizes the buffers for `pixels` pixels and `partials` partial sums.
    pub fn reserve(
        &mut self,
        ctx: &GpuContext,
        pixels: u64,
        partials: u64,
    ) -> Result<(), GpuError> {
        reserve(ctx, &mut self.rows, pixels * 16)?;
        reserve(ctx, &mut self.maps, pixels * 16)?;
        reserve(ctx, &mut self.grad_image, pixels * 16)?;
        reserve(ctx, &mut self.partials, partials * 16)?;
        Ok(())
    }
}
