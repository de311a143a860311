//! Uniforms of the image-loss kernels (shaders/loss/uniforms.wgsl and
//! shaders/loss/reduce_terms.wgsl).

use bytemuck::{Pod, Zeroable};

use super::window::gaussian_window;
use crate::gpu::wgsl_layout::wgsl_mirror;

/// Uniforms shared by the four SSIM kernels, one buffer per RGB channel (the
/// channel differs between dispatches recorded into one submission, and a
/// queued uniform write applies to the whole submission). 96 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct LossUniforms {
    /// Image width, pixels.
    pub width: u32,
    /// Image height, pixels.
    pub height: u32,
    /// `width · height`.
    pub pixel_count: u32,
    /// RGB channel of the dispatch (0, 1, 2).
    pub channel: u32,
    /// Workgroup partial sums per channel (stride of the partials buffer).
    pub partials_per_channel: u32,
    /// 1 when the frame has a loss mask (bound as the mask buffer), 0 when
    /// every pixel counts (a placeholder is bound and never read).
    pub masked: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 2],
    /// `w_l1 / (3·counted)`, `w_ssim / (3·counted)`, 0, 0 (`counted`: the
    /// pixels the mask counts, all of them without one).
    pub coefficients: [f32; 4],
    /// The normalised 11-tap Gaussian window (σ = 1.5), slot 11 zero.
    pub window: [f32; 12],
}

wgsl_mirror!(LossUniforms => "LossUniforms" in ["loss/uniforms"] {
    width,
    height,
    pixel_count,
    channel,
    partials_per_channel,
    masked,
    _pad,
    coefficients,
    window,
});

/// The 1-D SSIM window in f32: [`gaussian_window`], computed in f64 (the
/// definition the f64 twin uses too) and rounded once.
pub fn window_f32() -> [f32; 12] {
    let mut out = [0.0f32; 12];
    for (o, w) in out.iter_mut().zip(gaussian_window()) {
        *o = w as f32;
    }
    out
}

/// Uniforms of `loss/reduce_terms` (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ReduceUniforms {
    /// Number of vec4 partial sums.
    pub count: u32,
    /// Slot of the terms buffer written.
    pub slot: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 2],
    /// Multiplies the summed partials (e.g. `1 / (3·pixels)` for means).
    pub scale: [f32; 4],
    /// The loss is `dot(weights, sums · scale)`.
    pub weights: [f32; 4],
}

wgsl_mirror!(ReduceUniforms => "ReduceUniforms" in ["loss/reduce_terms"] {
    count,
    slot,
    _pad,
    scale,
    weights,
});
