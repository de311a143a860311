//! Per-frame loss terms on the GPU: a small buffer of slots, one vec4 each,
//! written by [`super::ImageLoss`] and read back as a few scalars.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{GpuBuffer, GpuContext, GpuError};

use super::error::LossError;

/// The terms of one image-loss evaluation (one frame and view), as the GPU
/// wrote them (f32).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct LossTerms {
    /// `w_l1 · l1 + w_ssim · dssim`.
    pub loss: f32,
    /// `mean|I − Î|` over pixels and RGB.
    pub l1: f32,
    /// `1 − mean SSIM`, reduced as the mean of `1 − SSIM` per pixel (more
    /// precise than `1 −` a mean SSIM near 1).
    pub dssim: f32,
    /// `mean (I − Î)²` over pixels and RGB.
    pub mse: f32,
}

impl LossTerms {
    /// Mean SSIM over pixels and RGB.
    pub fn ssim(&self) -> f64 {
        1.0 - f64::from(self.dssim)
    }

    /// PSNR in dB for the dynamic range 1, `−10 · log10(mse)`: `+∞` when the
    /// images are identical (`mse` is then exactly 0; no cap).
    pub fn psnr(&self) -> f64 {
        if self.mse <= 0.0 {
            f64::INFINITY
        } else {
            -10.0 * f64::from(self.mse).log10()
        }
    }
}

/// A GPU buffer of [`LossTerms`] slots, e.g. one per frame and view of a fit
/// iteration, so that a whole iteration is read back once, as scalars.
pub struct LossTermsBuffer {
    buffer: GpuBuffer,
    slots: u32,
}

impl LossTermsBuffer {
    /// A zeroed buffer of `slots` (at least 1) slots labelled `label`.
    pub fn new(ctx: &GpuContext, label: &str, slots: u32) -> Result<Self, GpuError> {
        let slots = slots.max(1);
        Ok(Self {
            buffer: ctx.storage_zeroed::<LossTerms>(label, slots as usize)?,
            slots,
        })
    }

    /// Number of slots.
    #[cfg(feature = "reference")]
pub fn slots(&self) -> u32 {
        self.slots
    }

    /// The buffer: one `vec4<f32>` (loss, l1, dssim, mse) per slot.
    pub fn buffer(&self) -> &GpuBuffer {
        &self.buffer
    }

    /// Errors unless `slot` is one of this buffer's.
    pub(crate) fn check_slot(&self, slot: u32) -> Result<(), LossError> {
        if slot >= self.slots {
            return Err(LossError::SlotOutOfRange {
                slot,
                slots: self.slots,
                label: self.buffer.label().to_string(),
            });
        }
        Ok(())
    }

    /// Reads every slot back (waits for the GPU).
    pub fn read(&self, ctx: &GpuContext) -> Result<Vec<LossTerms>, GpuError> {
        let mut terms: Vec<LossTerms> = ctx.read_buffer(&self.buffer)?;
        terms.truncate(self.slots as usize);
        Ok(terms)
    }
}
