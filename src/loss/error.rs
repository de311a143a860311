//! Errors of the image loss and the TV regulariser: bad input (named, with
//! both sizes) or a GPU failure.

use thiserror::Error;

use crate::gpu::GpuError;
use crate::splat::SplatError;

/// An error from [`super::ImageLoss`], the reference-frame upload or TV.
#[derive(Debug, Error)]
pub enum LossError {
    /// The render and its reference frame differ in size.
    #[error(
        "the render is {render_width}×{render_height} pixels but its reference frame is \
         {reference_width}×{reference_height}: the camera's image size must match the frames"
    )]
    SizeMismatch {
        /// Render width.
        render_width: u32,
        /// Render height.
        render_height: u32,
        /// Reference width.
        reference_width: u32,
        /// Reference height.
        reference_height: u32,
    },
    /// An image with no pixels.
    #[error("image of {width}×{height} pixels is empty")]
    EmptyImage {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
    },
    /// An image too large for one loss evaluation (pixel indices are u32 and
    /// the gradient image is addressed per float).
    #[error("image of {width}×{height} pixels exceeds the loss's limit of 2²⁸ pixels")]
    ImageTooLarge {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
    },
    /// The render buffer holds fewer pixels than its stated size.
    #[error("render buffer '{label}' holds {size} bytes but a {width}×{height} image needs {needed} (vec4<f32> per pixel)")]
    RenderBuffer {
        /// Buffer label.
        label: String,
        /// Its size in bytes.
        size: u64,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// Bytes needed.
        needed: u64,
    },
    /// A gradient image holding fewer pixels than its image.
    #[error("gradient buffer '{label}' holds {size} bytes but a {width}×{height} image needs {needed} (vec4<f32> per pixel)")]
    GradientBuffer {
        /// Buffer label.
        label: String,
        /// Its size in bytes.
        size: u64,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// Bytes needed.
        needed: u64,
    },
    /// A colour correction with a gain that is not finite and > 0 or an
    /// offset that is not finite.
    #[error("colour correction gain {gain:?}, offset {offset:?}: every gain must be finite and > 0 and every offset finite (`views[i].color_correction`)")]
    InvalidColorCorrection {
        /// Gain per RGB channel.
        gain: [f32; 3],
        /// Offset per RGB channel.
        offset: [f32; 3],
    },
    /// A frame whose pixel list does not match its stated size.
    #[error("frame '{label}' claims {width}×{height} pixels but holds {found}")]
    FramePixels {
        /// Label of the upload.
        label: String,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// Pixels held.
        found: usize,
    },
    /// A loss mask in which no pixel counts: the masked means would be 0/0.
    #[error("mask '{label}' counts no pixel; fix: make the mask white where the object is, or remove the view's `masks`")]
    EmptyMask {
        /// Label of the upload.
        label: String,
    },
    /// A loss mask of another size than its frame.
    #[error("frame '{label}' is {width}×{height} pixels but its mask is {mask_width}×{mask_height}: masks must have the camera's size")]
    MaskSize {
        /// Label of the frame.
        label: String,
        /// Frame width.
        width: u32,
        /// Frame height.
        height: u32,
        /// Mask width.
        mask_width: u32,
        /// Mask height.
        mask_height: u32,
    },
    /// A loss-terms slot past the end of its buffer.
    #[error("loss terms slot {slot} is out of range: the buffer '{label}' has {slots} slots")]
    SlotOutOfRange {
        /// Slot asked for.
        slot: u32,
        /// Slots in the buffer.
        slots: u32,
        /// Buffer label.
        label: String,
    },
    /// Loss weights that are negative or not finite.
    #[error("loss weights must be finite and ≥ 0 (got w_l1 = {l1}, w_ssim = {ssim})")]
    InvalidWeights {
        /// The L1 weight.
        l1: f32,
        /// The D-SSIM weight.
        ssim: f32,
    },
    /// A TV edge names a node past the end of the values.
    #[error("TV edge {edge} ({a}, {b}) names a node past the last of {nodes}")]
    EdgeOutOfRange {
        /// Index of the edge in the list.
        edge: usize,
        /// Its first node.
        a: u32,
        /// Its second node.
        b: u32,
        /// Number of nodes.
        nodes: usize,
    },
    /// TV values whose count is not a multiple of the components per node.
    #[error("TV values: {values} numbers are not a whole number of nodes of {dim} components")]
    TvValues {
        /// Numbers given.
        values: usize,
        /// Components per node.
        dim: usize,
    },
    /// A TV smoothing ε that is not finite and > 0 (the gradient would be
    /// 0/0 on equal neighbours).
    #[error("TV ε must be finite and > 0 (got {0})")]
    TvEpsilon(f64),
    /// The render could not be taken from the rasterizer (stale or foreign frame).
    #[error(transparent)]
    Splat(#[from] SplatError),
    /// GPU failure, including [`GpuError::OverLimit`] for images too large
    /// for the device.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}
