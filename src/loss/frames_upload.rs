//! Reference frames as `[f32; 4]` pixels in one GPU storage buffer, back
//! to back: the GPU side of [`crate::io::Frame`], kept out of
//! `scene` so that the scene's inputs carry no GPU types.

use crate::gpu::{GpuBuffer, GpuContext, GpuError};
use crate::io::Frame;

/// Uploads frames (all the same size) back to back into one labelled
/// storage buffer of `[f32; 4]` pixels: frame `k`'s pixel `(x, y)` is
/// element `k·w·h + y·w + x`.
pub fn upload_frames(
    ctx: &GpuContext,
    label: &str,
    frames: &[Frame],
) -> Result<GpuBuffer, GpuError> {
    let mut all: Vec<[f32; 4]> = Vec::with_capacity(frames.iter().map(|f| f.pixels.len()).sum());
    for f in frames {
        all.extend_from_slice(&f.pixels);
    }
    ctx.storage_from_slice(label, &all)
}
