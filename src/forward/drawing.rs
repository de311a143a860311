//! [`Drawing`]: the last stage of the chain (docs/design.md § Gaussian
//! splatting): the scene's splats on the GPU, the rasterizer and the
//! background, with the render's backward into splat gradients. A run at
//! rest (plain `render`, the fit's stiffness picture) is this stage alone;
//! a run in motion poses the splats first ([`super::Chain`]).
//!
//! Mirrors the render twin's `render` / `render_backward`
//! (src/reference/splat/).

use crate::gpu::GpuContext;
use crate::loss::{LossError, RenderedImage};
use crate::io::Frame;
use crate::scene::{Camera, Gaussians};
use crate::splat::{
    BackwardOutput, Rasterizer, RenderOutput, SplatBuffers, SplatError, StaticBackdrop,
};

/// The splats as the rasterizer reads them, the rasterizer and the
/// background its renders composite over (module doc).
pub struct Drawing {
    splats: SplatBuffers,
    raster: Rasterizer,
    background: [f32; 3],
}

impl Drawing {
    /// Uploads `gaussians` (the scene's, or recoloured ones) and builds the
    /// rasterizer; renders composite over `background`.
    pub fn new(
        ctx: &GpuContext,
        gaussians: &Gaussians,
        background: [f32; 3],
    ) -> Result<Self, SplatError> {
        Ok(Self {
            splats: SplatBuffers::upload(ctx, gaussians)?,
            raster: Rasterizer::new(ctx)?,
            background,
        })
    }

    /// The splats as the rasterizer reads them (the deformation writes the
    /// moving ones' centres and rotations here).
    pub fn splats(&self) -> &SplatBuffers {
        &self.splats
    }

    /// Makes every later draw and backward wait for and time each of its
    /// stages (`physfit bench fit`), or stops it.
    pub fn set_profile(&mut self, on: bool) {
        self.raster.profile = on;
    }

    /// Draws the splats as they are from `camera`, kept on the GPU (the
    /// fit's loss and backward read it there).
    pub fn draw(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<RenderOutput, SplatError> {
        self.raster
            .render(ctx, &self.splats, camera, self.background)
    }

    /// [`Drawing::draw`] from `backdrop`'s camera, blending only the tiles
    /// its moving splats reach ([`Rasterizer::render_over`]): the same
    /// image, the backward exact for the moving splats only.
    pub fn draw_over(
        &mut self,
        ctx: &GpuContext,
        backdrop: &StaticBackdrop,
    ) -> Result<RenderOutput, SplatError> {
        self.raster.render_over(ctx, &self.splats, backdrop)
    }

    /// The backward of the draw `out` (this stage's latest): `grad_image`
    /// = ∂L/∂(R, G, B, A) per pixel into ∂L/∂(every splat parameter), held
    /// in the rasterizer's buffers until the next draw
    /// ([`Rasterizer::backward`]).
    pub fn draw_backward(
        &mut self,
        ctx: &GpuContext,
        out: &RenderOutput,
        grad_image: &crate::gpu::GpuBuffer,
    ) -> Result<BackwardOutput<'_>, SplatError> {
        self.raster.backward(ctx, &self.splats, out, grad_image)
    }

    /// The image of the draw `out` on the GPU, as the loss reads it.
    pub fn image(&self, out: &RenderOutput) -> Result<RenderedImage<'_>, LossError> {
        RenderedImage::of_render(&self.raster, out)
    }

    /// Draws from `camera` and reads the image back (RGBA in [0, 1], the
    /// background composited, alpha the coverage).
    pub fn render(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<Frame, SplatError> {
        let out = self.draw(ctx, camera)?;
        Ok(Frame {
            width: out.width,
            height: out.height,
            pixels: self.raster.read_image(ctx, &out)?,
        })
    }

    /// Every splat but `moving` (indices into `gaussians`, the splats this
    /// stage was built with) rendered once from `camera`
    /// ([`StaticBackdrop`]).
    pub fn static_backdrop(
        &mut self,
        ctx: &GpuContext,
        gaussians: &Gaussians,
        moving: &[u32],
        camera: &Camera,
    ) -> Result<StaticBackdrop, SplatError> {
        StaticBackdrop::new(
            ctx,
            &mut self.raster,
            gaussians,
            moving,
            camera,
            self.background,
        )
    }

    /// Reads the splats' centres (world units) and raw rotations back into
    /// `gaussians` (the scene's splats, for writing a `.ply`).
    pub fn read_pose(&self, ctx: &GpuContext, gaussians: &mut Gaussians) -> Result<(), SplatError> {
        gaussians.means = ctx.read_buffer(&self.splats.means)?;
        gaussians.rotations = ctx.read_buffer(&self.splats.rotations)?;
        Ok(())
    }
}
