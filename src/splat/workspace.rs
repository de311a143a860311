//! The rasterizer's per-frame buffers, kept from one frame to the next and
//! grown with headroom (never shrunk), so a fitting loop that renders
//! thousands of frames allocates them once instead of ~16 buffers a frame.
//!
//! Reuse rules (read from the kernels in shaders/splat/, not assumed):
//! - Buffers a kernel writes in full for the frame's counts need no clearing:
//!   `project` writes every splat's projected record, tile rectangle, depth
//!   key and order entry (culled ones included); `count` writes all
//!   `splat_count + 1` counts (the last one 0, so the exclusive scan's last
//!   entry is the total); the scan writes the offsets; `write` fills every
//!   intersection slot below the total; `blend` writes the colour and the
//!   last index of every pixel of the image; `project_adjoint` writes (or
//!   zeroes) every gradient of every splat.
//! - Buffers a kernel only partly writes or accumulates into are cleared in
//!   the frame's encoder before it runs ([`wgpu::CommandEncoder::clear_buffer`],
//!   the used prefix only): the per-tile ranges (`tile_ranges` writes only
//!   tiles that have intersections; empty tiles must read (0, 0)) and the 2D
//!   gradients (`blend_adjoint` adds to them with atomics).
//! - Capacity past the frame's counts holds stale data from earlier frames
//!   and is never read: every kernel takes its counts (splats, intersections,
//!   image size, tiles) from the uniforms, the sorts and the scan from their
//!   `count` argument, and host readbacks truncate.
//!
//! Because the buffers are overwritten by the next render, a
//! [`super::RenderOutput`] holds no buffers but the frame's number; see
//! [`super::Rasterizer`] for the rule this gives callers.

use std::sync::atomic::{AtomicU64, Ordering};

use bytemuck::Zeroable;

use crate::gpu::{GpuBuffer, GpuContext, GpuError};

use super::buffer_growth::{placeholder, reserve};
use super::project::PROJECTED_SPLAT_BYTES;
use super::splat_buffers::SplatGradients;
use super::uniforms::RasterUniforms;

/// Source of [`Workspace::id`]: unique per rasterizer in the process.
static NEXT_WORKSPACE_ID: AtomicU64 = AtomicU64::new(1);

/// Every buffer a frame's forward and backward passes use, besides the
/// caller's (splats, gradient image) and the sort / scan scratch (which the
/// primitives keep and grow themselves).
pub(crate) struct Workspace {
    /// Identifies the rasterizer that owns it (outputs of another are refused).
    pub id: u64,
    /// Number of the latest render started (0: none yet); bumped before a
    /// render touches any buffer, so that a failed render also retires the
    /// previous frame.
    pub generation: u64,
    /// [`RasterUniforms`] of the latest frame (rewritten through the queue).
    pub uniforms: GpuBuffer,
    /// `ProjectedSplat` per splat.
    pub projected: GpuBuffer,
    /// `vec4<u32>` tile rectangle per splat.
    pub tile_rects: GpuBuffer,
    /// u32 depth key per splat.
    pub depth_keys: GpuBuffer,
    /// u32 splat ids sorted by depth.
    pub depth_order: GpuBuffer,
    /// u32 tiles per splat in depth order, + 1 zero.
    pub counts: GpuBuffer,
    /// Exclusive scan of `counts`.
    pub offsets: GpuBuffer,
    /// One u32: the intersection total (the frame's one readback).
    pub total: GpuBuffer,
    /// u32 tile id per intersection.
    pub tile_ids: GpuBuffer,
    /// u32 splat id per intersection.
    pub splat_ids: GpuBuffer,
    /// `vec2<u32>` [start, end) per tile — cleared every frame.
    pub ranges: GpuBuffer,
    /// `vec4<f32>` per pixel.
    pub image: GpuBuffer,
    /// u32 per pixel: list entries walked up to the last composited splat.
    pub last_index: GpuBuffer,
    /// 9 f32 per splat accumulated by `blend_adjoint` — cleared every backward.
    pub grad_2d: GpuBuffer,
    /// Parameter gradients, overwritten by `project_adjoint`.
    pub gradients: SplatGradients,
    /// 16 f32 per splat of camera gradients, overwritten by `camera_adjoint`.
    pub grad_camera: GpuBuffer,
}

impl Workspace {
    /// An empty workspace: 4-byte placeholders, grown on first use (so a
    /// rasterizer that only renders never allocates gradients).
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            id: NEXT_WORKSPACE_ID.fetch_add(1, Ordering::Relaxed),
            generation: 0,
            uniforms: ctx.uniform_buffer("splat raster uniforms", &RasterUniforms::zeroed())?,
            projected: placeholder(ctx, "splat projected")?,
            tile_rects: placeholder(ctx, "splat tile rects")?,
            depth_keys: placeholder(ctx, "splat depth keys")?,
            depth_order: placeholder(ctx, "splat depth order")?,
            counts: placeholder(ctx, "splat tile counts")?,
            offsets: placeholder(ctx, "splat intersection offsets")?,
            total: placeholder(ctx, "splat intersection total")?,
            tile_ids: placeholder(ctx, "splat intersection tile ids")?,
            splat_ids: placeholder(ctx, "splat intersection splat ids")?,
            ranges: placeholder(ctx, "splat tile ranges")?,
            image: placeholder(ctx, "splat image")?,
            last_index: placeholder(ctx, "splat last index")?,
            grad_2d: placeholder(ctx, "splat grad 2d")?,
            gradients: SplatGradients::placeholders(ctx)?,
            grad_camera: placeholder(ctx, "splat grad camera")?,
        })
    }

    /// Sizes the per-splat buffers for `splats` splats and the per-pixel and
    /// per-tile ones for the image (everything the forward needs before the
    /// intersection count is known).
    pub fn reserve_frame(
        &mut self,
        ctx: &GpuContext,
        splats: u32,
        pixels: u64,
        tiles: u64,
    ) -> Result<(), GpuError> {
        let n = u64::from(splats);
        reserve(ctx, &mut self.projected, n, PROJECTED_SPLAT_BYTES)?;
        reserve(ctx, &mut self.tile_rects, n, 16)?;
        reserve(ctx, &mut self.depth_keys, n, 4)?;
        reserve(ctx, &mut self.depth_order, n, 4)?;
        reserve(ctx, &mut self.counts, n + 1, 4)?;
        reserve(ctx, &mut self.offsets, n + 1, 4)?;
        reserve(ctx, &mut self.total, 1, 4)?;
        reserve(ctx, &mut self.ranges, tiles, 8)?;
        reserve(ctx, &mut self.image, pixels, 16)?;
        reserve(ctx, &mut self.last_index, pixels, 4)?;
        Ok(())
    }

    /// Sizes the intersection lists.
    pub fn reserve_intersections(
        &mut self,
        ctx: &GpuContext,
        intersections: u32,
    ) -> Result<(), GpuError> {
        let m = u64::from(intersections);
        reserve(ctx, &mut self.tile_ids, m, 4)?;
        reserve(ctx, &mut self.splat_ids, m, 4)?;
        Ok(())
    }
}
