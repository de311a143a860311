//! Reference frames on the GPU as 8-bit RGBA, one u32 per pixel.
//!
//! Why 8 bits: a fit keeps every reference frame of every view on the GPU
//! for the whole run (uploaded once, reused every iteration), and a 1080p
//! frame takes 8.3 MB packed against 33 MB as `vec4<f32>`. Video frames are
//! 8-bit to begin with. The colour convention is docs/design.md's (§ Units and
//! frames, the 3DGS one): a channel byte `b` is the value `b / 255`, no
//! transfer curve. The shaders decode bytes through a 256-entry table of
//! `b as f32 / 255.0` computed on the host ([`decode_table`]), so the GPU
//! sees exactly the f32 values [`unpack_rgba8`] gives, on any adapter
//! (WGSL's `unpack4x8unorm` and a division in the shader need not be
//! correctly rounded).
//!
//! Precision: a [`Frame`] holds f32 in [0, 1]; packing rounds each channel
//! to `round(255 · clamp(v, 0, 1))`. 8-bit PNGs and JPEGs round-trip
//! exactly; **16-bit PNGs lose their extra precision here** (to 1/255, the
//! precision of the 8-bit frames 3DGS objects are trained on). Alpha is
//! packed but the loss does not compare it.
//!
//! A frame may carry its view's loss mask ([`ReferenceFrame::with_mask`],
//! [`super::ReferenceMask`]), so that the loss reads the two together and
//! no caller can pair a frame with another frame's mask.

use crate::gpu::{GpuBuffer, GpuContext};
use crate::io::Frame;

use super::error::LossError;
use super::reference_mask::ReferenceMask;

/// Packs RGBA in [0, 1] into one u32, red in the low byte:
/// `round(255 · clamp(v, 0, 1))` per channel, NaN → 0 (the rule of
/// `scene::frames::write_png`).
pub fn pack_rgba8(pixel: [f32; 4]) -> u32 {
    let byte = |v: f32| -> u32 {
        if v.is_nan() {
            0
        } else {
            (v.clamp(0.0, 1.0) * 255.0).round() as u32
        }
    };
    pixel
        .iter()
        .enumerate()
        .fold(0, |acc, (c, &v)| acc | (byte(v) << (8 * c)))
}

/// The f32 values the GPU loss sees for a packed pixel: `b as f32 / 255.0`
/// per channel (correctly rounded, like the shaders' table).
#[cfg(feature = "reference")]
pub fn unpack_rgba8(packed: u32) -> [f32; 4] {
    std::array::from_fn(|c| ((packed >> (8 * c)) & 0xff) as f32 / 255.0)
}

/// `b as f32 / 255.0` for `b` in 0..256: the shaders' decoding table.
pub fn decode_table() -> Vec<f32> {
    (0..256).map(|b| b as f32 / 255.0).collect()
}

/// One reference frame (one frame of one view) resident on the GPU: packed
/// 8-bit RGBA per pixel, row-major from the top left, in its own buffer (so
/// that no single binding has to hold a whole video).
pub struct ReferenceFrame {
    buffer: GpuBuffer,
    width: u32,
    height: u32,
    mask: Option<ReferenceMask>,
}

impl ReferenceFrame {
    /// Packs and uploads `frame` into a buffer labelled `label`.
    ///
    /// Errors: [`LossError::FramePixels`] when `frame.pixels` does not hold
    /// `width · height` pixels, [`LossError::EmptyImage`], GPU errors.
    pub fn upload(ctx: &GpuContext, label: &str, frame: &Frame) -> Result<Self, LossError> {
        let packed: Vec<u32> = frame.pixels.iter().map(|&p| pack_rgba8(p)).collect();
        Self::from_packed(ctx, label, frame.width, frame.height, &packed)
    }

    /// Uploads already packed pixels (see [`pack_rgba8`]).
    ///
    /// Errors as [`ReferenceFrame::upload`].
    pub fn from_packed(
        ctx: &GpuContext,
        label: &str,
        width: u32,
        height: u32,
        packed: &[u32],
    ) -> Result<Self, LossError> {
        if width == 0 || height == 0 {
            return Err(LossError::EmptyImage { width, height });
        }
        if packed.len() as u64 != u64::from(width) * u64::from(height) {
            return Err(LossError::FramePixels {
                label: label.to_string(),
                width,
                height,
                found: packed.len(),
            });
        }
        Ok(Self {
            buffer: ctx.storage_from_slice(label, packed)?,
            width,
            height,
            mask: None,
        })
    }

    /// This frame with the loss limited to the pixels `mask` counts
    /// (docs/design.md § Loss, parameters, fit); replaces any
    /// mask it had.
    ///
    /// Errors: [`LossError::MaskSize`] naming both sizes.
    pub fn with_mask(mut self, mask: ReferenceMask) -> Result<Self, LossError> {
        if (mask.width(), mask.height()) != (self.width, self.height) {
            return Err(LossError::MaskSize {
                label: self.buffer.label().to_string(),
                width: self.width,
                height: self.height,
                mask_width: mask.width(),
                mask_height: mask.height(),
            });
        }
        self.mask = Some(mask);
        Ok(self)
    }

    /// The frame's loss mask, if it has one.
    pub fn mask(&self) -> Option<&ReferenceMask> {
        self.mask.as_ref()
    }

    /// Uploads a sequence of frames, one buffer each, labelled
    /// `"{label} {k}"`.
    pub fn upload_all(
        ctx: &GpuContext,
        label: &str,
        frames: &[Frame],
    ) -> Result<Vec<Self>, LossError> {
        frames
            .iter()
            .enumerate()
            .map(|(k, f)| Self::upload(ctx, &format!("{label} {k}"), f))
            .collect()
    }

    /// Width, pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height, pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The packed pixels (u32 per pixel).
    pub fn buffer(&self) -> &GpuBuffer {
        &self.buffer
    }
}
