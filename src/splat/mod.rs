//! Differentiable Gaussian-splat rasterizer on the GPU: classic 3DGS as gsplat
//! implements it (DESIGN.md § Gaussian splatting), forward and hand-written
//! backward, tested against the f64 twin in `reference::splat` and gsplat.
//!
//! Forward ([`Rasterizer::render`]), top to bottom:
//! 1. [`project`]: per splat, EWA projection (0.3 px² dilation, Jacobian clamp
//!    at 1.3·tan(half fov)), opacity, SH colour, the tile rectangle covering
//!    every pixel where alpha can reach 1/255, depth key; culls splats behind
//!    the near plane or with non-finite values.
//! 2. GPU radix sort of splat ids by depth (32-bit keys, stable).
//! 3. [`intersect_tiles`] `count`: tiles per splat in depth order; GPU
//!    exclusive prefix sum → write offsets and the intersection total.
//! 4. **One readback per frame**: the intersection total, 4 bytes. The
//!    intersection buffers (and the sort's scratch) are sized to it, so
//!    memory follows the scene instead of a worst-case bound (N × tiles,
//!    which for 500k splats at 1024×576 would be ~9 GiB) and a frame too big
//!    for the device gets a typed [`GpuError::OverLimit`] naming the buffer.
//!    It costs one GPU round trip per frame, small next to blending. (The
//!    readback-free alternative, `RadixSort::sort_indirect` over buffers
//!    sized for a worst case, trades it for that worst-case memory.)
//! 5. [`intersect_tiles`] `write`: (tile id, splat id) pairs grouped by splat
//!    in depth order; stable radix sort by tile id (⌈log₂ tiles⌉ bits) →
//!    per-tile front-to-back lists (= sorting by the 64-bit key tile·2³² + depth).
//! 6. [`tile_ranges`]: [start, end) of each tile's run.
//! 7. [`blend`]: per tile, front-to-back compositing → RGBA image (linear RGB
//!    over the background, alpha = 1 − T) + per-pixel stop index.
//!
//! Backward ([`Rasterizer::backward`]), given dL/d(RGBA) per pixel:
//! 1. [`blend_backward`]: per tile, front-to-back replay, per-splat gradients
//!    of (mean₂, conic, opacity, colour) reduced in registers over a 2×2
//!    pixel block per thread, then in workgroup memory, then one f32 atomic
//!    per splat and component per batch of 256 (native or CAS).
//!    The replay divides once by 1 − αᵢ ≥ 0.01 per splat to get what lies
//!    behind it (never a chained division recovering T): see the shader.
//! 2. [`project_backward`]: per splat, to means, raw quaternions, log-scales,
//!    opacity logits and SH coefficients.
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

pub mod blend;
pub mod blend_backward;
pub mod error;
pub mod intersect_tiles;
pub mod project;
pub mod project_backward;
pub mod splat_buffers;
pub mod stage_recorder;
pub mod tile_ranges;
pub mod uniforms;

pub use error::SplatError;
pub use splat_buffers::{HostGradients, SplatBuffers, SplatGradients};
pub use stage_recorder::StageTiming;

use crate::gpu::prefix_sum::PrefixSum;
use crate::gpu::primitive_error::workgroup_memory_bytes;
use crate::gpu::radix_sort::RadixSort;
use crate::gpu::{GpuBuffer, GpuContext, GpuError};
use crate::scene::Camera;

use blend::{Blend, BlendBuffers};
use blend_backward::{BlendBackward, BlendBackwardBuffers, GRAD_2D_STRIDE};
use intersect_tiles::{IntersectTiles, IntersectTilesBuffers};
use project::{Project, ProjectBuffers, PROJECTED_SPLAT_BYTES};
use project_backward::{ProjectBackward, ProjectBackwardBuffers};
use stage_recorder::StageRecorder;
use tile_ranges::{TileRanges, TileRangesBuffers};
use uniforms::RasterUniforms;

/// A rendered frame: the image and everything the backward pass replays.
pub struct RenderOutput {
    /// `vec4<f32>` per pixel, row-major: linear RGB over the background, alpha.
    pub image: GpuBuffer,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Number of (tile, splat) intersections blended.
    pub intersection_count: u32,
    /// Per-stage wall times when the rasterizer was profiling, else empty.
    pub timings: Vec<StageTiming>,
    uniforms: GpuBuffer,
    projected: GpuBuffer,
    tile_rects: GpuBuffer,
    splat_ids: GpuBuffer,
    ranges: GpuBuffer,
    last_index: GpuBuffer,
    tiles: [u32; 2],
    splat_count: u32,
    coeffs_per_splat: u32,
}

impl RenderOutput {
    /// Reads the image back, RGBA per pixel, row-major.
    pub fn read_image(&self, ctx: &GpuContext) -> Result<Vec<[f32; 4]>, SplatError> {
        let mut pixels: Vec<[f32; 4]> = ctx.read_buffer(&self.image)?;
        pixels.truncate((self.width * self.height) as usize);
        Ok(pixels)
    }
}

/// Backward result: parameter gradients (+ timings when profiling).
pub struct BackwardOutput {
    /// dL/d every splat parameter.
    pub gradients: SplatGradients,
    /// Per-stage wall times when the rasterizer was profiling, else empty.
    pub timings: Vec<StageTiming>,
}

/// The rasterizer: compiled kernels plus the sort / scan primitives, whose
/// scratch grows to the largest frame seen.
pub struct Rasterizer {
    project: Project,
    intersect_tiles: IntersectTiles,
    tile_ranges: TileRanges,
    blend: Blend,
    blend_backward: BlendBackward,
    project_backward: ProjectBackward,
    prefix_sum: Option<PrefixSum>,
    depth_sort: Option<RadixSort>,
    tile_sort: Option<RadixSort>,
    /// Submit and wait after every stage, recording wall times (benchmarks).
    pub profile: bool,
}

/// Capacity to allocate for `needed` elements: some headroom so a slowly
/// growing scene does not reallocate every frame.
fn grown(needed: u32) -> u32 {
    needed.saturating_add(needed / 4).max(1024)
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
    /// Compiles every kernel for the context's atomic mode.
    ///
    /// Errors: [`SplatError::WorkgroupMemory`] on an adapter with less
    /// workgroup memory than the blending kernels stage (22.5 KiB for the
    /// backward).
    pub fn new(ctx: &GpuContext) -> Result<Self, SplatError> {
        for kernel in ["splat/blend", "splat/blend_backward"] {
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
            blend_backward: BlendBackward::new(ctx)?,
            project_backward: ProjectBackward::new(ctx)?,
            prefix_sum: None,
            depth_sort: None,
            tile_sort: None,
            profile: false,
        })
    }

    /// Renders `splats` seen by `camera` over `background` (linear RGB).
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
        self.render_frame(ctx, splats, camera, background)
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
    ) -> Result<RenderOutput, SplatError> {
        validate_camera(camera)?;
        if !background.iter().all(|c| c.is_finite()) {
            return Err(SplatError::InvalidBackground(background));
        }
        let n = splats.count;
        let mut uniform_values = RasterUniforms::new(camera, background, n, splats.sh_degree);
        let tiles = uniform_values.tile_count;
        let tile_total = tiles[0] * tiles[1];
        let pixels = camera.width as usize * camera.height as usize;
        let uniforms = ctx.uniform_buffer("splat raster uniforms", &uniform_values)?;
        // At least one element: WGSL arrays of vec4 cannot bind 4-byte buffers.
        let projected = ctx.create_buffer(
            "splat projected",
            u64::from(n.max(1)) * PROJECTED_SPLAT_BYTES,
            crate::gpu::STORAGE,
        )?;
        let tile_rects = ctx.storage_zeroed::<[u32; 4]>("splat tile rects", n.max(1) as usize)?;
        let depth_keys = ctx.storage_zeroed::<u32>("splat depth keys", n as usize)?;
        let depth_order = ctx.storage_zeroed::<u32>("splat depth order", n as usize)?;
        let counts = ctx.storage_zeroed::<u32>("splat tile counts", n as usize + 1)?;
        let offsets = ctx.storage_zeroed::<u32>("splat intersection offsets", n as usize + 1)?;
        let total_buffer = ctx.storage_zeroed::<u32>("splat intersection total", 1)?;
        self.ensure_capacity(ctx, n, 0)?;
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
                    uniforms: &uniforms,
                    means: &splats.means,
                    rotations: &splats.rotations,
                    log_scales: &splats.log_scales,
                    opacity_logits: &splats.opacity_logits,
                    sh: &splats.sh,
                    projected: &projected,
                    tile_rects: &tile_rects,
                    depth_keys: &depth_keys,
                    depth_order: &depth_order,
                },
                n,
            );
            Ok(())
        })?;
        rec.stage("depth sort", |enc| {
            Ok(depth_sort.sort(ctx, enc, &depth_keys, &depth_order, n, 32)?)
        })?;
        // The binding set of both binning passes; tile ids / splat ids are
        // placeholders until the intersection buffers exist.
        rec.stage("count tiles + prefix sum", |enc| {
            self.intersect_tiles.dispatch_count(
                ctx,
                enc,
                &IntersectTilesBuffers {
                    uniforms: &uniforms,
                    tile_rects: &tile_rects,
                    depth_order: &depth_order,
                    offsets: &offsets,
                    counts: &counts,
                    tile_ids: &depth_keys,
                    splat_ids: &total_buffer,
                },
                n,
            );
            prefix_sum.scan(ctx, enc, &counts, &offsets, n + 1)?;
            enc.copy_buffer_to_buffer(&offsets, u64::from(n) * 4, &total_buffer, 0, 4);
            Ok(())
        })?;
        rec.submit();
        let intersection_count = ctx.read_buffer::<u32>(&total_buffer)?[0];
        // The u32 scan wraps past 2³² intersections; only possible when
        // splats × tiles exceeds that, and then the true total is summed in
        // u64 on the host (one more readback, only for such frames).
        if u64::from(n) * u64::from(tile_total) > u64::from(u32::MAX) {
            let counts_host: Vec<u32> = ctx.read_buffer(&counts)?;
            let exact: u64 = counts_host.iter().map(|&c| u64::from(c)).sum();
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
        drop(depth_keys);

        uniform_values.intersection_count = intersection_count;
        ctx.write(&uniforms, &[uniform_values]);
        let m = intersection_count as usize;
        let tile_ids = ctx.storage_zeroed::<u32>("splat intersection tile ids", m)?;
        let splat_ids = ctx.storage_zeroed::<u32>("splat intersection splat ids", m)?;
        self.ensure_capacity(ctx, n, intersection_count)?;
        let tile_sort = self.tile_sort.as_ref().expect("allocated above");
        let ranges = ctx.storage_zeroed::<[u32; 2]>("splat tile ranges", tile_total as usize)?;
        let image = ctx.storage_zeroed::<[f32; 4]>("splat image", pixels)?;
        let last_index = ctx.storage_zeroed::<u32>("splat last index", pixels)?;
        let tile_bits = 32 - tile_total.saturating_sub(1).leading_zeros();

        rec.stage("write intersections", |enc| {
            self.intersect_tiles.dispatch_write(
                ctx,
                enc,
                &IntersectTilesBuffers {
                    uniforms: &uniforms,
                    tile_rects: &tile_rects,
                    depth_order: &depth_order,
                    offsets: &offsets,
                    counts: &counts,
                    tile_ids: &tile_ids,
                    splat_ids: &splat_ids,
                },
                n,
            );
            Ok(())
        })?;
        rec.stage("tile sort", |enc| {
            Ok(tile_sort.sort(
                ctx,
                enc,
                &tile_ids,
                &splat_ids,
                intersection_count,
                tile_bits,
            )?)
        })?;
        rec.stage("tile ranges", |enc| {
            self.tile_ranges.dispatch(
                ctx,
                enc,
                &TileRangesBuffers {
                    uniforms: &uniforms,
                    tile_ids: &tile_ids,
                    ranges: &ranges,
                },
                intersection_count,
            );
            Ok(())
        })?;
        rec.stage("blend", |enc| {
            self.blend.dispatch(
                ctx,
                enc,
                &BlendBuffers {
                    uniforms: &uniforms,
                    projected: &projected,
                    splat_ids: &splat_ids,
                    ranges: &ranges,
                    image: &image,
                    last_index: &last_index,
                },
                tiles,
            );
            Ok(())
        })?;
        rec.submit();
        ctx.check()?;
        Ok(RenderOutput {
            image,
            width: camera.width,
            height: camera.height,
            intersection_count,
            timings: std::mem::take(&mut rec.timings),
            uniforms,
            projected,
            tile_rects,
            splat_ids,
            ranges,
            last_index,
            tiles,
            splat_count: n,
            coeffs_per_splat: splats.coeffs_per_splat(),
        })
    }

    /// Gradients of a loss with respect to every parameter of `splats`, given
    /// `grad_image` = dL/d(R, G, B, A) per pixel (`vec4<f32>`, the layout of
    /// [`RenderOutput::image`]) for the frame `output` rendered from them.
    pub fn backward(
        &self,
        ctx: &GpuContext,
        splats: &SplatBuffers,
        output: &RenderOutput,
        grad_image: &GpuBuffer,
    ) -> Result<BackwardOutput, SplatError> {
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
        let n = splats.count;
        let grad_2d = ctx.storage_zeroed::<f32>("splat grad 2d", (GRAD_2D_STRIDE * n) as usize)?;
        let gradients = SplatGradients::zeroed(ctx, n, splats.coeffs_per_splat())?;
        let mut rec = StageRecorder::new(ctx, "splat backward", self.profile);
        rec.stage("blend backward", |enc| {
            self.blend_backward.dispatch(
                ctx,
                enc,
                &BlendBackwardBuffers {
                    uniforms: &output.uniforms,
                    projected: &output.projected,
                    splat_ids: &output.splat_ids,
                    ranges: &output.ranges,
                    image: &output.image,
                    last_index: &output.last_index,
                    grad_image,
                    grad_2d: &grad_2d,
                },
                output.tiles,
            );
            Ok(())
        })?;
        rec.stage("project backward", |enc| {
            self.project_backward.dispatch(
                ctx,
                enc,
                &ProjectBackwardBuffers {
                    uniforms: &output.uniforms,
                    means: &splats.means,
                    rotations: &splats.rotations,
                    log_scales: &splats.log_scales,
                    opacity_logits: &splats.opacity_logits,
                    sh: &splats.sh,
                    tile_rects: &output.tile_rects,
                    grad_2d: &grad_2d,
                    grad_means: &gradients.means,
                    grad_rotations: &gradients.rotations,
                    grad_log_scales: &gradients.log_scales,
                    grad_opacity_logits: &gradients.opacity_logits,
                    grad_sh: &gradients.sh,
                },
                n,
            );
            Ok(())
        })?;
        rec.submit();
        ctx.check()?;
        Ok(BackwardOutput {
            gradients,
            timings: std::mem::take(&mut rec.timings),
        })
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
            None => self.prefix_sum = Some(PrefixSum::new(ctx, grown(scan_needed))?),
            Some(p) if p.max_count() < scan_needed => p.reserve(ctx, grown(scan_needed))?,
            Some(_) => {}
        }
        match self.depth_sort.as_mut() {
            None => self.depth_sort = Some(RadixSort::new(ctx, grown(splats))?),
            Some(s) if s.max_count() < splats => s.reserve(ctx, grown(splats))?,
            Some(_) => {}
        }
        // Headroom capped at the largest count the device can bind.
        let limit =
            (ctx.limits.max_storage_buffer_binding_size / 4).min(u64::from(u32::MAX)) as u32;
        let capacity = grown(intersections).min(limit).max(intersections);
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
