//! [`StaticBackdrop`]: what the static splats of a scene look like from one
//! camera, rendered once, so that frames in which only some splats move
//! blend only the tiles those reach (docs/design.md § Gaussian splatting,
//! "Static tiles").
//!
//! Why it is exact: a tile's list is every splat whose tile rectangle
//! covers it, in depth order (a stable sort, ties in index order). When no
//! splat that may move covers a tile, its list is the static splats' list
//! for that tile in the same order, so blending it gives bit for bit the
//! pixels of a render of the static splats alone (projection is per
//! splat). [`super::Rasterizer::render_over`] flags the tiles a moving splat
//! reaches from the frame's own intersections (so the bound is exact for
//! that frame, recomputed every frame, whatever the motion), copies the
//! backdrop into the image and blends the flagged tiles only. The image,
//! hence any loss of it, is that of [`super::Rasterizer::render`]; its
//! backward skips the other tiles, which hold static splats only, so the
//! gradients of the moving splats are exact too (up to the order of float
//! atomics) and those of static splats are partial: callers must not read
//! them.

use super::{Rasterizer, SplatBuffers, SplatError};
use crate::gpu::{GpuBuffer, GpuContext};
use crate::scene::{Camera, Gaussians};

/// The static splats' render from one camera over one background, and which
/// splats may move (module doc).
pub struct StaticBackdrop {
    pub(super) camera: Camera,
    pub(super) background: [f32; 3],
    /// `vec4<f32>` per pixel, the layout of [`Rasterizer::image`].
    pub(super) image: GpuBuffer,
    /// u32 per splat of the full scene: 1 when it may move.
    pub(super) moving: GpuBuffer,
    /// u32 per tile, the flags of the latest frame (scratch).
    pub(super) tile_moving: GpuBuffer,
    pub(super) splat_count: u32,
}

impl StaticBackdrop {
    /// Renders every splat of `gaussians` not listed in `moving` (the
    /// indices of the splats that may move, each below `gaussians.len()`)
    /// from `camera` over `background` with `raster` (its latest frame is
    /// overwritten), and keeps the image.
    ///
    /// Errors: as [`Rasterizer::render`]; [`SplatError::InvalidGaussians`]
    /// for an index out of range.
    pub fn new(
        ctx: &GpuContext,
        raster: &mut Rasterizer,
        gaussians: &Gaussians,
        moving: &[u32],
        camera: &Camera,
        background: [f32; 3],
    ) -> Result<Self, SplatError> {
        let n = gaussians.len();
        let mut flags = vec![0u32; n.max(1)];
        for &i in moving {
            let Some(f) = flags.get_mut(i as usize).filter(|_| (i as usize) < n) else {
                return Err(SplatError::InvalidGaussians(format!(
                    "moving splat {i} of a backdrop, but the scene has {n} splats"
                )));
            };
            *f = 1;
        }
        let still = static_subset(gaussians, &flags);
        let image_bytes = u64::from(camera.width) * u64::from(camera.height) * 16;
        let pixels = camera.width as usize * camera.height as usize;
        let image = ctx.storage_zeroed::<[f32; 4]>("splat backdrop image", pixels)?;
        if still.is_empty() {
            // Nothing static: the background everywhere (no tile is
            // skipped then anyway, unless it is empty).
            let pixel = [background[0], background[1], background[2], 0.0];
            ctx.write(&image, &vec![pixel; pixels]);
        } else {
            let splats = SplatBuffers::upload(ctx, &still)?;
            let out = raster.render(ctx, &splats, camera, background)?;
            let mut encoder = crate::gpu::encoder(ctx, "splat backdrop copy");
            encoder.copy_buffer_to_buffer(raster.image(&out)?, 0, &image, 0, image_bytes);
            ctx.queue.submit([encoder.finish()]);
        }
        let tiles = super::uniforms::RasterUniforms::new(camera, background, 0, 0).tile_count;
        Ok(Self {
            camera: camera.clone(),
            background,
            image,
            moving: ctx.storage_from_slice("splat backdrop moving flags", &flags)?,
            tile_moving: ctx.storage_zeroed::<u32>(
                "splat backdrop moving tiles",
                (tiles[0] * tiles[1]) as usize,
            )?,
            splat_count: n as u32,
        })
    }

    /// The camera it was rendered from.
    pub fn camera(&self) -> &Camera {
        &self.camera
    }

    /// Tiles of the latest frame rendered over it that no moving splat
    /// reached (kept as the backdrop's pixels), and the tile total: one
    /// readback, for benchmarks and tests.
    pub fn skipped_tiles(&self, ctx: &GpuContext) -> Result<(u32, u32), SplatError> {
        let flags: Vec<u32> = ctx.read_buffer(&self.tile_moving)?;
        let skipped = flags.iter().filter(|&&f| f == 0).count() as u32;
        Ok((skipped, flags.len() as u32))
    }
}

/// The splats whose flag is 0, in their order.
fn static_subset(g: &Gaussians, moving: &[u32]) -> Gaussians {
    let keep = |i: &usize| moving[*i] == 0;
    let coeffs = g.coeffs_per_splat();
    Gaussians {
        means: (0..g.len()).filter(keep).map(|i| g.means[i]).collect(),
        rotations: (0..g.len()).filter(keep).map(|i| g.rotations[i]).collect(),
        log_scales: (0..g.len()).filter(keep).map(|i| g.log_scales[i]).collect(),
        opacity_logits: (0..g.len())
            .filter(keep)
            .map(|i| g.opacity_logits[i])
            .collect(),
        sh_degree: g.sh_degree,
        sh: (0..g.len())
            .filter(keep)
            .flat_map(|i| g.sh[i * coeffs..(i + 1) * coeffs].iter().copied())
            .collect(),
    }
}
