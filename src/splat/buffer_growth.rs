//! Growing the rasterizer's buffers with headroom: shared by the frame
//! workspace ([`super::workspace`]) and the splat gradients
//! ([`super::splat_buffers`]), which both keep buffers across frames and
//! reallocate only when a frame needs more.

use crate::gpu::{GpuBuffer, GpuContext, GpuError, STORAGE};

/// Elements to allocate for `needed`: 25% headroom (at least 1024) so that a
/// slowly growing count does not reallocate every frame.
pub(crate) fn grown(needed: u64) -> u64 {
    needed.saturating_add(needed / 4).max(1024)
}

/// [`grown`] for the sort and scan primitives, whose capacities are u32.
pub(crate) fn grown_u32(needed: u32) -> u32 {
    grown(u64::from(needed)).min(u64::from(u32::MAX)) as u32
}

/// Makes `buffer` hold at least `count` (≥ 1) elements of `element_bytes`.
/// When it does not, it is reallocated under the same label with
/// [`grown`] headroom, capped at what the device can bind (contents lost);
/// a `count` beyond the device's limits fails with [`GpuError::OverLimit`]
/// naming the buffer. The old buffer is released first (lower peak memory).
pub(crate) fn reserve(
    ctx: &GpuContext,
    buffer: &mut GpuBuffer,
    count: u64,
    element_bytes: u64,
) -> Result<(), GpuError> {
    let count = count.max(1);
    if buffer.size() >= count.saturating_mul(element_bytes) {
        return Ok(());
    }
    let label = buffer.label().to_string();
    *buffer = placeholder(ctx, &label)?;
    let limit = ctx
        .limits
        .max_storage_buffer_binding_size
        .min(ctx.limits.max_buffer_size)
        / element_bytes;
    let capacity = grown(count).min(limit).max(count);
    *buffer = ctx.create_buffer(&label, capacity.saturating_mul(element_bytes), STORAGE)?;
    Ok(())
}

/// A 4-byte buffer standing for one not yet sized (grown on first use).
pub(crate) fn placeholder(ctx: &GpuContext, label: &str) -> Result<GpuBuffer, GpuError> {
    ctx.create_buffer(label, 4, STORAGE)
}
