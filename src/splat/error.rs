//! Errors of the splat rasterizer: bad input (named, with the fix) or a GPU
//! failure (including a scene over the device's buffer limits).

use thiserror::Error;

use crate::gpu::primitive_error::PrimitiveError;
use crate::gpu::GpuError;

/// An error from [`super::Rasterizer`] or the splat buffers.
#[derive(Debug, Error)]
pub enum SplatError {
    /// The Gaussians are inconsistent (array lengths, SH degree).
    #[error("invalid Gaussians: {0}")]
    InvalidGaussians(String),
    /// The camera cannot be rendered with.
    #[error("invalid camera: {0}")]
    InvalidCamera(String),
    /// A non-finite background colour (would put NaN in every pixel).
    #[error(
        "invalid background colour {0:?}: components must be finite (linear RGB, usually 0–1)"
    )]
    InvalidBackground([f32; 3]),
    /// A gradient image of the wrong size.
    #[error("gradient image '{label}' holds {size} bytes but the render needs {needed} (vec4<f32> per pixel)")]
    GradientSize {
        /// Buffer label.
        label: String,
        /// Its size.
        size: u64,
        /// Bytes needed.
        needed: u64,
    },
    /// A [`super::RenderOutput`] that is no longer its rasterizer's latest
    /// frame: the rasterizer reuses its buffers, so a later render (even one
    /// that failed) has overwritten what this frame's backward would replay.
    #[error(
        "this frame is render {rendered} of its rasterizer, but render {latest} has started \
         since and reused its buffers: call backward (and read the image) for a frame \
         before rendering the next one with the same Rasterizer, or render frames that must \
         stay alive together with separate Rasterizers"
    )]
    StaleRender {
        /// The frame's render number.
        rendered: u64,
        /// The rasterizer's latest render number.
        latest: u64,
    },
    /// A [`super::RenderOutput`] passed to a rasterizer that did not render it.
    #[error(
        "this frame was rendered by another Rasterizer, whose buffers hold it: call backward \
         (and read the image) on the Rasterizer that rendered it"
    )]
    ForeignRender,
    /// A blending kernel needs more workgroup memory than the device offers.
    #[error(
        "{kernel} needs {needed} bytes of workgroup memory but the device limit \
         max_compute_workgroup_storage_size is {limit}; this adapter cannot run the splat \
         rasterizer (desktop Vulkan, Metal and DX12 devices offer at least 32 KiB)"
    )]
    WorkgroupMemory {
        /// Kernel (shader name).
        kernel: &'static str,
        /// Bytes its workgroup variables take.
        needed: u32,
        /// The device's limit.
        limit: u32,
    },
    /// GPU failure, including [`GpuError::OverLimit`] for scenes too large
    /// for the device in one piece.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

impl SplatError {
    /// Adds the scene's size to a GPU size error (see [`GpuError::in_scene`]).
    pub fn in_scene(self, scene: impl FnOnce() -> String) -> SplatError {
        match self {
            SplatError::Gpu(e) => SplatError::Gpu(e.in_scene(scene)),
            other => other,
        }
    }
}

impl From<PrimitiveError> for SplatError {
    fn from(e: PrimitiveError) -> Self {
        match e {
            PrimitiveError::Gpu(g) => SplatError::Gpu(g),
            other => SplatError::Gpu(GpuError::Validation {
                context: "splat sorting".to_string(),
                message: other.to_string(),
            }),
        }
    }
}
