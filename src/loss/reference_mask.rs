//! Loss masks on the GPU ([`crate::scene::masks`]): one
//! byte per pixel, 0 (ignored) or 1 (counts), four pixels to a u32 with
//! pixel `4j` in the low byte of word `j`.
//!
//! Why 8 bits: like the [`super::ReferenceFrame`]s they go with, a fit keeps
//! every mask of every view on the GPU for the whole run, uploaded once; a
//! byte per pixel is a quarter of a packed frame. The shaders read the byte
//! as the pixel's weight (`f32` of 0 or 1, exact).

use crate::gpu::{GpuBuffer, GpuContext};
use crate::scene::masks::Mask;

use super::error::LossError;

/// Packs per-pixel flags into bytes of 0/1, four to a u32 (module doc); the
/// last word is padded with zeros.
pub fn pack_mask(counts: &[bool]) -> Vec<u32> {
    counts
        .chunks(4)
        .map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (b, &c)| acc | (u32::from(c) << (8 * b)))
        })
        .collect()
}

/// One frame's loss mask resident on the GPU (module doc), with the number
/// of pixels it counts (the loss's means are over them).
pub struct ReferenceMask {
    buffer: GpuBuffer,
    width: u32,
    height: u32,
    counted: u64,
}

impl ReferenceMask {
    /// Packs and uploads `mask` into a buffer labelled `label`.
    ///
    /// Errors: [`LossError::FramePixels`] when `mask.counts` does not hold
    /// `width · height` flags, [`LossError::EmptyImage`],
    /// [`LossError::EmptyMask`] when no pixel counts; GPU errors.
    pub fn upload(ctx: &GpuContext, label: &str, mask: &Mask) -> Result<Self, LossError> {
        let (width, height) = (mask.width, mask.height);
        if width == 0 || height == 0 {
            return Err(LossError::EmptyImage { width, height });
        }
        if mask.counts.len() as u64 != u64::from(width) * u64::from(height) {
            return Err(LossError::FramePixels {
                label: label.to_string(),
                width,
                height,
                found: mask.counts.len(),
            });
        }
        let counted = mask.counted() as u64;
        if counted == 0 {
            return Err(LossError::EmptyMask {
                label: label.to_string(),
            });
        }
        Ok(Self {
            buffer: ctx.storage_from_slice(label, &pack_mask(&mask.counts))?,
            width,
            height,
            counted,
        })
    }

    /// Width, pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height, pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Pixels that count (≥ 1).
    pub fn counted(&self) -> u64 {
        self.counted
    }

    /// The packed bytes (module doc).
    pub fn buffer(&self) -> &GpuBuffer {
        &self.buffer
    }
}
