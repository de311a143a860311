//! Differentiable Gaussian-splat rasterizer on the GPU: classic 3DGS as gsplat
//! implements it (docs/design.md § Gaussian splatting), forward and hand-written
//! backward, tested against the f64 twin in `reference::splat` and gsplat.
//!
//! Forward ([`Rasterizer::render`]), top to bottom:
//! 1. [`project`]: per splat, EWA projection (0.3 px² dilation, Jacobian clamp
//!    at 1.3·tan(half fov)), opacity, SH colour, the tile rectangle covering
//!    every pixel where alpha can reach 1/255, depth key; culls splats behind
//!    the near plane or with non-finite values.
//! 2. GPU radix sort of splat ids by depth (32-bit keys, stable).
//! 3. [`intersect_tiles`] `count`: tiles per splat in depth order (the tiles
//!    of its rectangle that its ellipse reaches); GPU exclusive prefix sum →
//!    write offsets and the intersection total.
//! 4. **One readback per frame**: the intersection total, 4 bytes. The
//!    intersection buffers (and the sort's scratch) are grown to it, so
//!    memory follows the scene instead of a worst-case bound (N × tiles,
//!    which for 500k splats at 1024×576 would be ~9 GiB) and a frame too big
//!    for the device gets a typed [`GpuError::OverLimit`] naming the buffer.
//!    It costs one GPU round trip per frame, small next to blending. (A
//!    readback-free sort over buffers sized for the worst case would trade
//!    it for that worst-case memory.)
//! 5. [`intersect_tiles`] `write`: (tile id, splat id) pairs grouped by splat
//!    in depth order; stable radix sort by tile id (⌈log₂ tiles⌉ bits) →
//!    per-tile front-to-back lists (= sorting by the 64-bit key tile·2³² + depth).
//! 6. [`tile_ranges`]: [start, end) of each tile's run.
//! 7. [`blend`]: per tile, front-to-back compositing → RGBA image (linear RGB
//!    over the background, alpha = 1 − T) + per-pixel stop index.
//!
//! Over a static backdrop ([`Rasterizer::render_over`], [`backdrop`]): after
//! step 6, [`static_tiles`] flags the tiles a splat that may move reaches
//! and marks the others skipped; the backdrop (the static splats' own
//! render) is copied into the image and step 7 blends the flagged tiles
//! only. Same image; the backward skips the other tiles.
//!
//! Backward ([`Rasterizer::backward`]), given dL/d(RGBA) per pixel:
//! 1. [`blend_adjoint`]: per tile, front-to-back replay, per-splat gradients
//!    of (mean₂, conic, opacity, colour) reduced in registers over a 2×2
//!    pixel block per thread, then in workgroup memory, then one f32 atomic
//!    per splat and component per batch of 256 (native or CAS).
//!    The replay divides once by 1 − αᵢ ≥ 0.01 per splat to get what lies
//!    behind it (never a chained division recovering T): see the shader.
//! 2. [`project_adjoint`]: per splat, to means, raw quaternions, log-scales,
//!    opacity logits and SH coefficients.
//!
//! Camera backward ([`Rasterizer::camera_backward`]): the same blend
//! backward, then [`camera_adjoint`] to each splat's share of dL/d(camera
//! pose, focal lengths, principal point), summed on the host — the splats
//! held fixed, the camera moving (`physfit align`).
//!
//! Workspace: every per-frame buffer (projected splats, tile rectangles,
//! depth keys and order, tile counts and offsets, the intersection lists,
//! per-tile ranges, image, per-pixel stop index, uniforms, and the backward's
//! 2D and parameter gradients) belongs to the [`Rasterizer`] and is reused
//! by every frame, grown with 25% headroom when a frame needs more and never
//! shrunk, like the sort and scan scratch; a steady fitting loop allocates
//! none of them (only the primitives' per-call uniform buffers, ~20 of 16
//! bytes, and the 4-byte readback staging buffer). Kernels that write a
//! buffer in full need nothing; the per-tile ranges and the atomically
//! accumulated 2D gradients are cleared in the frame's encoder (the
//! reasoning per buffer is in `workspace.rs`). Capacity past a frame's counts
//! holds stale data and is never read: kernels take their counts from the
//! uniforms. The price is the rule for callers, enforced at run time: **a
//! frame's image and backward are available until the next render on the
//! same rasterizer** (see [`Rasterizer`]; a stale [`RenderOutput`] gets
//! [`SplatError::StaleRender`]), and the gradients [`Rasterizer::backward`]
//! returns are borrowed from it, so the compiler keeps them from outliving
//! the next render or backward.
//!
//! Depth ties: splats whose f32 camera depths are equal keep index order (the
//! sorts are stable), which can differ from an f64 reference where the depths
//! differ below f32 resolution; only the blending order of such pairs changes.
//!
//! Image layout: `vec4<f32>` per pixel, row-major (`y · width + x`); the
//! gradient image has the same layout. Parameter layouts: [`SplatBuffers`].
//! Limits: per-splat buffers (SH degree 3: 192 bytes per splat) and the
//! intersection list (4 bytes per pair and per array, sort scratch 8 more)
//! must each fit `max_storage_buffer_binding_size` (128 MiB on lavapipe:
//! ~33 M intersections); beyond it render returns [`GpuError::OverLimit`].

pub mod backdrop;
pub mod blend;
pub mod blend_adjoint;
mod buffer_growth;
pub mod camera_adjoint;
pub mod error;
pub mod intersect_tiles;
pub mod project;
pub mod project_adjoint;
pub mod splat_buffers;
pub mod stage_recorder;
pub mod static_tiles;
pub mod tile_ranges;
pub mod uniforms;
mod workspace;

pub use backdrop::StaticBackdrop;
pub use camera_adjoint::CameraGradient;
pub use error::SplatError;
pub use splat_buffers::{SplatBuffers, SplatGradients};
#[cfg(feature = "reference")]
pub use splat_buffers::HostGradients;
pub use stage_recorder::StageTiming;

use crate::gpu::prefix_sum::PrefixSum;
use crate::gpu::primitive_error::workgroup_memory_bytes;
use crate::gpu::radix_sort::RadixSort;
use crate::gpu::{GpuBuffer, GpuContext, GpuError};
use crate::scene::Camera;

use blend::{Blend, BlendBuffers};
use blend_adjoint::{BlendAdjoint, BlendAdjointBuffers, GRAD_2D_STRIDE};
use buffer_growth::{grown_u32, reserve};
use camera_adjoint::{CameraAdjoint, CameraAdjointBuffers, CAMERA_GRADIENT_STRIDE};
use intersect_tiles::{IntersectTiles, IntersectTilesBuffers};
use project::{Project, ProjectBuffers};
use project_adjoint::{ProjectAdjoint, ProjectAdjointBuffers};
use stage_recorder::StageRecorder;
use static_tiles::{StaticTiles, StaticTilesBuffers};
use tile_ranges::{TileRanges, TileRangesBuffers};
use uniforms::RasterUniforms;
use workspace::Workspace;

/// A rendered frame: its size and intersection count, and which render of
/// which [`Rasterizer`] it is. The image and everything the backward pass
/// replays live in that rasterizer's workspace, valid until its next render:
/// get the image with [`Rasterizer::image`] / [`Rasterizer::read_image`] and
/// the gradients with [`Rasterizer::backward`], which refuse a frame that is
/// no longer the latest ([`SplatError::StaleRender`]).
pub struct RenderOutput {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Number of (tile, splat) intersections blended.
    pub intersection_count: u32,
    /// Per-stage wall times when the rasterizer was profiling, else empty.
    pub timings: Vec<StageTiming>,
    rasterizer: u64,
    generation: u64,
    tiles: [u32; 2],
    splat_count: u32,
    coeffs_per_splat: u32,
    /// Rendered over a [`StaticBackdrop`]: static splats' gradients are
    /// partial.
    over_backdrop: bool,
}

impl RenderOutput {
    /// Number of this render among its rasterizer's (1 for the first).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// Backward result: parameter gradients (+ timings when profiling).
///
/// The gradients are the rasterizer's own buffers, borrowed: they stay valid
/// while this value lives, and the borrow checker keeps the rasterizer from
/// rendering or back-propagating again (which would overwrite them) until it
/// is dropped. Consume them (or copy them with
/// `wgpu::CommandEncoder::copy_buffer_to_buffer`) before the next frame.
pub struct BackwardOutput<'a> {
    /// dL/d every splat parameter (buffers possibly longer than the splats
    /// need: see [`SplatGradients`]).
    pub gradients: &'a SplatGradients,
    /// Per-stage wall times when the rasterizer was profiling, else empty.
    pub timings: Vec<StageTiming>,
}

/// The rasterizer: compiled kernels, the sort / scan primitives and a
/// workspace of per-frame buffers, all grown to the largest frame seen and
/// reused by every frame (a fitting loop renders thousands).
///
/// The rule for callers: **a frame's image and backward are available until
/// the next [`Rasterizer::render`] on the same rasterizer.** Render, use the
/// image, back-propagate (as many times as needed), then render the next
/// frame. A [`RenderOutput`] kept past the next render is stale: its buffers
/// have been overwritten, so [`Rasterizer::image`], [`Rasterizer::read_image`]
/// and [`Rasterizer::backward`] return [`SplatError::StaleRender`] instead of
/// silently using the newer frame's data (each render gets a number, the
/// output records it). Frames that must stay alive together need one
/// rasterizer each; an output passed to another rasterizer than its own is
/// refused with [`SplatError::ForeignRender`].
pub struct Rasterizer {
    project: Project,
    intersect_tiles: IntersectTiles,
    tile_ranges: TileRanges,
    blend: Blend,
    blend_adjoint: BlendAdjoint,
    project_adjoint: ProjectAdjoint,
    /// Compiled on first use: only `physfit align` moves cameras.
    camera_adjoint: Option<CameraAdjoint>,
    /// Compiled on first use: only renders over a backdrop need it.
    static_tiles: Option<StaticTiles>,
    prefix_sum: Option<PrefixSum>,
    depth_sort: Option<RadixSort>,
    tile_sort: Option<RadixSort>,
    workspace: Workspace,
    /// Submit and wait after every stage, recording wall times (benchmarks).
    pub profile: bool,
}

fn validate_camera(camera: &Camera) -> Result<(), SplatError> {
    let finite = [camera.fx, camera.fy, camera.cx, camera.cy, camera.near]
        .iter()
        .all(|v| v.is_finite())
        && camera.rotation.is_finite()
        && camera.translation.is_finite();
    if camera.width == 0 || camera.height == 0 {
        return Err(SplatError::InvalidCamera(format!(
            "image size {}×{} is empty",
            camera.width, camera.height
        )));
    }
    if !finite || camera.fx <= 0.0 || camera.fy <= 0.0 || camera.near <= 0.0 {
        return Err(SplatError::InvalidCamera(format!(
            "needs finite intrinsics with fx, fy > 0 and near > 0 (got fx {}, fy {}, near {})",
            camera.fx, camera.fy, camera.near
        )));
    }
    Ok(())
}

impl Rasterizer {
    /// Compiles every kernel for the context's atomic mode. The workspace
    /// starts empty and grows on the first frames.
    ///
    /// Errors: [`SplatError::WorkgroupMemory`] on an adapter with less
    /// workgroup memory than the blending kernels stage (22.5 KiB for the
    /// backward).
    pub fn new(ctx: &GpuContext) -> Result<Self, SplatError> {
        for kernel in ["splat/blend", "splat/blend_adjoint"] {
            let needed = workgroup_memory_bytes(ctx, kernel)?;
            let limit = ctx.limits.max_compute_workgroup_storage_size;
            if needed > limit {
                return Err(SplatError::WorkgroupMemory {
                    kernel,
                    needed,
                    limit,
                });
            }
        }
        Ok(Self {
            project: Project::new(ctx)?,
            intersect_tiles: IntersectTiles::new(ctx)?,
            tile_ranges: TileRanges::new(ctx)?,
            blend: Blend::new(ctx)?,
            blend_adjoint: BlendAdjoint::new(ctx)?,
            project_adjoint: ProjectAdjoint::new(ctx)?,
            camera_adjoint: None,
            static_tiles: None,
            prefix_sum: None,
            depth_sort: None,
            tile_sort: None,
            workspace: Workspace::new(ctx)?,
            profile: false,
        })
    }

    /// Renders `splats` seen by `camera` over `background` (linear RGB),
    /// into the workspace: every earlier [`RenderOutput`] of this rasterizer
    /// becomes stale (see [`Rasterizer`]), also when this render fails after
    /// checking its inputs (a render refused for a bad camera or background
    /// touches nothing and leaves the latest frame valid).
    ///
    /// Errors: [`SplatError::InvalidCamera`], [`SplatError::InvalidBackground`];
    /// [`SplatError::Gpu`] with
    /// [`GpuError::OverLimit`] when a buffer of this frame exceeds the device.
    pub fn render(
        &mut self,
        ctx: &GpuContext,
        splats: &SplatBuffers,
        camera: &Camera,
        background: [f32; 3],
    ) -> Result<RenderOutput, SplatError> {
        self.render_frame(ctx, splats, camera, background, None)
            .map_err(|e| {
                e.in_scene(|| {
                    format!(
                        "{} splats, SH degree {}, {}×{} image",
                        splats.count, splats.sh_degree, camera.width, camera.height
                    )
                })
            })
    }

    /// [`Rasterizer::render`] from the backdrop's camera over its
    /// background, blending only the tiles that splats flagged as moving
    /// in `backdrop` reach; the others keep the backdrop's pixels (module
    /// doc of [`backdrop`]). The image is the same as `render`'s when the
    /// splats not flagged are those the backdrop was rendered from; the
    /// backward's gradients are exact for the moving splats only.
    ///
    /// Errors: as [`Rasterizer::render`]; [`SplatError::InvalidGaussians`]
    /// when `splats` are not as many as the backdrop's.
    pub fn render_over(
        &mut self,
        ctx: &GpuContext,
        splats: &SplatBuffers,
        backdrop: &StaticBackdrop,
    ) -> Result<RenderOutput, SplatError> {
        if splats.count != backdrop.splat_count {
            return Err(SplatError::InvalidGaussians(format!(
                "{} splats rendered over a backdrop of {}",
                splats.count, backdrop.splat_count
            )));
        }
        if self.static_tiles.is_none() {
            self.static_tiles = Some(StaticTiles::new(ctx)?);
        }
        let camera = &backdrop.camera;
        self.render_frame(ctx, splats, camera, backdrop.background, Some(backdrop))
            .map_err(|e| {
                e.in_scene(|| {
                    format!(
                        "{} splats, SH degree {}, {}×{} image",
                        splats.count, splats.sh_degree, camera.width, camera.height
                    )
                })
            })
    }

    fn render_frame(
        &mut self,
        ctx: &GpuContext,
        splats: &SplatBuffers,
        camera: &Camera,
        background: [f32; 3],
        backdrop: Option<&StaticBackdrop>,
    ) -> Result<RenderOutput, SplatError> {
        validate_camera(camera)?;
        if !background.iter().all(|c| c.is_finite()) {
            return Err(SplatError::InvalidBackground(background));
        }
        // From here on the workspace may be overwritten: retire the previous
        // frame first, so that an error below cannot leave it looking valid.
        self.workspace.generation += 1;
        let generation = self.workspace.generation;
        let n = splats.count;
        let mut uniform_values = RasterUniforms::new(camera, background, n, splats.sh_degree);
        let tiles = uniform_values.tile_count;
        let tile_total = tiles[0] * tiles[1];
        let pixels = u64::from(camera.width) * u64::from(camera.height);
        self.workspace
            .reserve_frame(ctx, n, pixels, u64::from(tile_total))?;
        self.ensure_capacity(ctx, n, 0)?;
        let ws = &self.workspace;
        // Queued writes land before the next submission and after every
        // earlier one (the previous frame's backward included).
        ctx.write(&ws.uniforms, &[uniform_values]);
        let (prefix_sum, depth_sort) = (
            self.prefix_sum.as_ref().expect("allocated above"),
            self.depth_sort.as_ref().expect("allocated above"),
        );

        let mut rec = StageRecorder::new(ctx, "splat render", self.profile);
        rec.stage("project", |enc| {
            self.project.dispatch(
                ctx,
                enc,
                &ProjectBuffers {
                    uniforms: &ws.uniforms,
                    means: &splats.means,
                    rotations: &splats.rotations,
                    log_scales: &splats.log_scales,
                    opacity_logits: &splats.opacity_logits,
                    sh: &splats.sh,
                    projected: &ws.projected,
                    tile_rects: &ws.tile_rects,
                    depth_keys: &ws.depth_keys,
                    depth_order: &ws.depth_order,
                },
                n,
            );
            Ok(())
        })?;
        rec.stage("depth sort", |enc| {
            Ok(depth_sort.sort(ctx, enc, &ws.depth_keys, &ws.depth_order, n, 32)?)
        })?;
        // The binding set of both binning passes; tile ids / splat ids are
        // placeholders (never written by `count`) until the intersection
        // buffers are sized.
        rec.stage("count tiles + prefix sum", |enc| {
            self.intersect_tiles.dispatch_count(
                ctx,
                enc,
                &IntersectTilesBuffers {
                    uniforms: &ws.uniforms,
                    tile_rects: &ws.tile_rects,
                    depth_order: &ws.depth_order,
                    offsets: &ws.offsets,
                    counts: &ws.counts,
                    tile_ids: &ws.depth_keys,
                    splat_ids: &ws.total,
                    projected: &ws.projected,
                },
                n,
            );
            prefix_sum.scan(ctx, enc, &ws.counts, &ws.offsets, n + 1)?;
            enc.copy_buffer_to_buffer(&ws.offsets, u64::from(n) * 4, &ws.total, 0, 4);
            Ok(())
        })?;
        rec.submit();
        let intersection_count = ctx.read_buffer::<u32>(&ws.total)?[0];
        // The u32 scan wraps past 2³² intersections; only possible when
        // splats × tiles exceeds that, and then the true total is summed in
        // u64 on the host (one more readback, only for such frames).
        if u64::from(n) * u64::from(tile_total) > u64::from(u32::MAX) {
            let counts_host: Vec<u32> = ctx.read_buffer(&ws.counts)?;
            let exact: u64 = counts_host
                .iter()
                .take(n as usize + 1)
                .map(|&c| u64::from(c))
                .sum();
            if exact > u64::from(u32::MAX) {
                return Err(GpuError::OverLimit {
                    label: "splat intersection tile ids".to_string(),
                    size: exact * 4,
                    limit_name: "max_storage_buffer_binding_size",
                    limit: ctx.limits.max_storage_buffer_binding_size,
                }
                .into());
            }
        }

        uniform_values.intersection_count = intersection_count;
        ctx.write(&ws.uniforms, &[uniform_values]);
        self.workspace
            .reserve_intersections(ctx, intersection_count)?;
        self.ensure_capacity(ctx, n, intersection_count)?;
        let ws = &self.workspace;
        let tile_sort = self.tile_sort.as_ref().expect("allocated above");
        let tile_bits = 32 - tile_total.saturating_sub(1).leading_zeros();

        rec.stage("write intersections", |enc| {
            self.intersect_tiles.dispatch_write(
                ctx,
                enc,
                &IntersectTilesBuffers {
                    uniforms: &ws.uniforms,
                    tile_rects: &ws.tile_rects,
                    depth_order: &ws.depth_order,
                    offsets: &ws.offsets,
                    counts: &ws.counts,
                    tile_ids: &ws.tile_ids,
                    splat_ids: &ws.splat_ids,
                    projected: &ws.projected,
                },
                n,
            );
            Ok(())
        })?;
        rec.stage("tile sort", |enc| {
            Ok(tile_sort.sort(
                ctx,
                enc,
                &ws.tile_ids,
                &ws.splat_ids,
                intersection_count,
                tile_bits,
            )?)
        })?;
        rec.stage("tile ranges", |enc| {
            // tile_ranges writes only tiles that have intersections: the
            // others must read (0, 0), not an earlier frame's range.
            enc.clear_buffer(&ws.ranges, 0, Some(u64::from(tile_total) * 8));
            self.tile_ranges.dispatch(
                ctx,
                enc,
                &TileRangesBuffers {
                    uniforms: &ws.uniforms,
                    tile_ids: &ws.tile_ids,
                    ranges: &ws.ranges,
                },
                intersection_count,
            );
            Ok(())
        })?;
        if let Some(backdrop) = backdrop {
            let kernel = self.static_tiles.as_ref().expect("compiled by render_over");
            rec.stage("static tiles", |enc| {
                kernel.dispatch(
                    ctx,
                    enc,
                    &StaticTilesBuffers {
                        uniforms: &ws.uniforms,
                        tile_ids: &ws.tile_ids,
                        splat_ids: &ws.splat_ids,
                        moving: &backdrop.moving,
                        tile_moving: &backdrop.tile_moving,
                        ranges: &ws.ranges,
                    },
                    intersection_count,
                    tile_total,
                );
                enc.copy_buffer_to_buffer(&backdrop.image, 0, &ws.image, 0, pixels * 16);
                Ok(())
            })?;
        }
        rec.stage("blend", |enc| {
            self.blend.dispatch(
                ctx,
                enc,
                &BlendBuffers {
                    uniforms: &ws.uniforms,
                    projected: &ws.projected,
                    splat_ids: &ws.splat_ids,
                    ranges: &ws.ranges,
                    image: &ws.image,
                    last_index: &ws.last_index,
                },
                tiles,
            );
            Ok(())
        })?;
        rec.submit();
        ctx.check()?;
        Ok(RenderOutput {
            width: camera.width,
            height: camera.height,
            intersection_count,
            timings: std::mem::take(&mut rec.timings),
            rasterizer: ws.id,
            generation,
            tiles,
            splat_count: n,
            coeffs_per_splat: splats.coeffs_per_splat(),
            over_backdrop: backdrop.is_some(),
        })
    }

    /// Errors unless `output` is this rasterizer's latest frame.
    fn check_current(&self, output: &RenderOutput) -> Result<(), SplatError> {
        if output.rasterizer != self.workspace.id {
            return Err(SplatError::ForeignRender);
        }
        if output.generation != self.workspace.generation {
            return Err(SplatError::StaleRender {
                rendered: output.generation,
                latest: self.workspace.generation,
            });
        }
        Ok(())
    }

    /// The image of `output`: `vec4<f32>` per pixel, row-major, linear RGB
    /// over the background and alpha. The buffer may be longer than
    /// `width · height` pixels (the workspace keeps the largest image seen);
    /// the rest is unspecified.
    ///
    /// Errors: [`SplatError::StaleRender`], [`SplatError::ForeignRender`].
    pub fn image(&self, output: &RenderOutput) -> Result<&GpuBuffer, SplatError> {
        self.check_current(output)?;
        Ok(&self.workspace.image)
    }

    /// Reads the image of `output` back, RGBA per pixel, row-major
    /// (`width · height` of them). Errors as [`Rasterizer::image`].
    pub fn read_image(
        &self,
        ctx: &GpuContext,
        output: &RenderOutput,
    ) -> Result<Vec<[f32; 4]>, SplatError> {
        let mut pixels: Vec<[f32; 4]> = ctx.read_buffer(self.image(output)?)?;
        pixels.truncate(output.width as usize * output.height as usize);
        Ok(pixels)
    }

    /// Gradients of a loss with respect to every parameter of `splats`, given
    /// `grad_image` = dL/d(R, G, B, A) per pixel (`vec4<f32>`, the layout of
    /// [`Rasterizer::image`]) for the frame `output` rendered from them.
    ///
    /// `output` must be this rasterizer's latest frame (see [`Rasterizer`]);
    /// it may be back-propagated several times. The gradients are returned
    /// in the rasterizer's own buffers, borrowed (see [`BackwardOutput`]).
    /// The blending replays the frame's projected splats, while the
    /// projection's backward reads `splats` as they are now: they must hold
    /// the values the frame was rendered from (do not move them, e.g. with
    /// [`crate::deform::Deformation`], between the render and its backward).
    ///
    /// Errors: [`SplatError::StaleRender`], [`SplatError::ForeignRender`],
    /// [`SplatError::GradientSize`], [`SplatError::InvalidGaussians`] when
    /// `splats` do not match the frame's.
    pub fn backward(
        &mut self,
        ctx: &GpuContext,
        splats: &SplatBuffers,
        output: &RenderOutput,
        grad_image: &GpuBuffer,
    ) -> Result<BackwardOutput<'_>, SplatError> {
        self.prepare_backward(ctx, splats, output, grad_image)?;
        let n = splats.count;
        self.workspace
            .gradients
            .reserve(ctx, n, splats.coeffs_per_splat())?;
        let ws = &self.workspace;
        let mut rec = StageRecorder::new(ctx, "splat backward", self.profile);
        rec.stage("blend backward", |enc| {
            self.record_blend_adjoint(ctx, enc, output, grad_image, n);
            Ok(())
        })?;
        rec.stage("project backward", |enc| {
            self.project_adjoint.dispatch(
                ctx,
                enc,
                &ProjectAdjointBuffers {
                    uniforms: &ws.uniforms,
                    means: &splats.means,
                    rotations: &splats.rotations,
                    log_scales: &splats.log_scales,
                    opacity_logits: &splats.opacity_logits,
                    sh: &splats.sh,
                    tile_rects: &ws.tile_rects,
                    grad_2d: &ws.grad_2d,
                    grad_means: &ws.gradients.means,
                    grad_rotations: &ws.gradients.rotations,
                    grad_log_scales: &ws.gradients.log_scales,
                    grad_opacity_logits: &ws.gradients.opacity_logits,
                    grad_sh: &ws.gradients.sh,
                },
                n,
            );
            Ok(())
        })?;
        rec.submit();
        ctx.check()?;
        Ok(BackwardOutput {
            gradients: &self.workspace.gradients,
            timings: std::mem::take(&mut rec.timings),
        })
    }

    /// Gradient of a loss with respect to the camera `output` was rendered
    /// with, given `grad_image` = dL/d(R, G, B, A) per pixel, the splats held
    /// fixed (gsplat's view-matrix gradient): the same blend backward as
    /// [`Rasterizer::backward`], then each splat's share of dL/d(R, t, fx,
    /// fy, cx, cy), read back (16 floats per splat) and summed in f64.
    ///
    /// Not differentiated: which splats are culled and which tiles they
    /// cover (piecewise constant in the camera), and the near plane.
    /// Requirements and errors as [`Rasterizer::backward`].
    pub fn camera_backward(
        &mut self,
        ctx: &GpuContext,
        splats: &SplatBuffers,
        output: &RenderOutput,
        grad_image: &GpuBuffer,
    ) -> Result<CameraGradient, SplatError> {
        if output.over_backdrop {
            // Every splat's share counts for a camera, static ones too.
            return Err(SplatError::InvalidGaussians(
                "the camera gradient needs every splat's share, but this frame was rendered \
                 over a static backdrop, which skips the static splats' tiles: render it with \
                 Rasterizer::render"
                    .into(),
            ));
        }
        self.prepare_backward(ctx, splats, output, grad_image)?;
        let n = splats.count;
        reserve(
            ctx,
            &mut self.workspace.grad_camera,
            u64::from(CAMERA_GRADIENT_STRIDE) * u64::from(n),
            4,
        )?;
        if self.camera_adjoint.is_none() {
            self.camera_adjoint = Some(CameraAdjoint::new(ctx)?);
        }
        let kernel = self.camera_adjoint.as_ref().expect("compiled above");
        let ws = &self.workspace;
        let mut rec = StageRecorder::new(ctx, "splat camera backward", self.profile);
        rec.stage("blend backward", |enc| {
            self.record_blend_adjoint(ctx, enc, output, grad_image, n);
            Ok(())
        })?;
        rec.stage("camera backward", |enc| {
            kernel.dispatch(
                ctx,
                enc,
                &CameraAdjointBuffers {
                    uniforms: &ws.uniforms,
                    means: &splats.means,
                    rotations: &splats.rotations,
                    log_scales: &splats.log_scales,
                    sh: &splats.sh,
                    tile_rects: &ws.tile_rects,
                    grad_2d: &ws.grad_2d,
                    grad_camera: &ws.grad_camera,
                },
                n,
            );
            Ok(())
        })?;
        rec.submit();
        ctx.check()?;
        let mut rows: Vec<f32> = ctx.read_buffer(&ws.grad_camera)?;
        rows.truncate(CAMERA_GRADIENT_STRIDE as usize * n as usize);
        Ok(CameraGradient::sum_rows(&rows))
    }

    /// The checks both backward passes share, and the 2D gradients' buffer.
    fn prepare_backward(
        &mut self,
        ctx: &GpuContext,
        splats: &SplatBuffers,
        output: &RenderOutput,
        grad_image: &GpuBuffer,
    ) -> Result<(), SplatError> {
        self.check_current(output)?;
        let needed = u64::from(output.width) * u64::from(output.height) * 16;
        if grad_image.size() < needed {
            return Err(SplatError::GradientSize {
                label: grad_image.label().to_string(),
                size: grad_image.size(),
                needed,
            });
        }
        if splats.count != output.splat_count
            || splats.coeffs_per_splat() != output.coeffs_per_splat
        {
            return Err(SplatError::InvalidGaussians(format!(
                "backward got {} splats with {} SH coefficients but the frame was rendered from {} with {}",
                splats.count,
                splats.coeffs_per_splat(),
                output.splat_count,
                output.coeffs_per_splat
            )));
        }
        let grad_2d_floats = u64::from(GRAD_2D_STRIDE) * u64::from(splats.count);
        reserve(ctx, &mut self.workspace.grad_2d, grad_2d_floats, 4)?;
        Ok(())
    }

    /// Records the blend backward of `output` into the (cleared) 2D
    /// gradients of its `n` splats.
    fn record_blend_adjoint(
        &self,
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        output: &RenderOutput,
        grad_image: &GpuBuffer,
        n: u32,
    ) {
        let ws = &self.workspace;
        let grad_2d_floats = u64::from(GRAD_2D_STRIDE) * u64::from(n);
        // blend_adjoint adds into grad_2d with atomics.
        if grad_2d_floats > 0 {
            enc.clear_buffer(&ws.grad_2d, 0, Some(grad_2d_floats * 4));
        }
        self.blend_adjoint.dispatch(
            ctx,
            enc,
            &BlendAdjointBuffers {
                uniforms: &ws.uniforms,
                projected: &ws.projected,
                splat_ids: &ws.splat_ids,
                ranges: &ws.ranges,
                image: &ws.image,
                last_index: &ws.last_index,
                grad_image,
                grad_2d: &ws.grad_2d,
            },
            output.tiles,
        );
    }

    /// Grows the scan and sort scratch to hold `splats` splats and
    /// `intersections` intersections.
    fn ensure_capacity(
        &mut self,
        ctx: &GpuContext,
        splats: u32,
        intersections: u32,
    ) -> Result<(), SplatError> {
        // Grow with headroom; only the scratch buffers are reallocated, the
        // compiled sort and scan kernels are kept.
        let scan_needed = splats + 1;
        match self.prefix_sum.as_mut() {
            None => self.prefix_sum = Some(PrefixSum::new(ctx, grown_u32(scan_needed))?),
            Some(p) if p.max_count() < scan_needed => p.reserve(ctx, grown_u32(scan_needed))?,
            Some(_) => {}
        }
        match self.depth_sort.as_mut() {
            None => self.depth_sort = Some(RadixSort::new(ctx, grown_u32(splats))?),
            Some(s) if s.max_count() < splats => s.reserve(ctx, grown_u32(splats))?,
            Some(_) => {}
        }
        // Headroom capped at the largest count the device can bind.
        let limit =
            (ctx.limits.max_storage_buffer_binding_size / 4).min(u64::from(u32::MAX)) as u32;
        let capacity = grown_u32(intersections).min(limit).max(intersections);
        match self.tile_sort.as_mut() {
            None => self.tile_sort = Some(RadixSort::new(ctx, capacity)?),
            Some(s) if s.max_count() < intersections => s.reserve(ctx, capacity)?,
            Some(_) => {}
        }
        Ok(())
    }
}

/// Convenience for tests and tools: uploads a host gradient image.
pub fn upload_grad_image(ctx: &GpuContext, grad: &[[f32; 4]]) -> Result<GpuBuffer, GpuError> {
    ctx.storage_from_slice("splat grad image", grad)
}
