//! A view's colour correction on the GPU (shaders/loss/color_correction.wgsl;
//! the type and its meaning: [`crate::scene::ColorCorrection`]): per RGB
//! channel `c' = clamp(a·c + b, 0, 1)` of the composited render, alpha
//! passed through, between the rasterizer and the image loss.
//!
//! Forward, [`ColorCorrect::apply`]: the corrected image, in a buffer of
//! its own, as a [`RenderedImage`] that [`super::ImageLoss::evaluate`] and
//! [`super::ImageLoss::measure`] take. Backward, [`ColorCorrect::backward`]:
//! `∂L/∂c = a · ∂L/∂c'` where the clamp is inactive (`0 < a·c + b < 1`),
//! else 0 (the clamp's derivative, as the rasterizer zeroes its own
//! clamps' gradients), the alpha gradient passed through: what
//! [`crate::splat::Rasterizer::backward`] takes. For `physfit align`,
//! [`gain_offset_gradient`]: `∂L/∂a`, `∂L/∂b` per channel, summed in f64
//! on the host from both images read back (a readback per call, which a
//! fit iteration never makes, but an alignment of a handful of parameters
//! can afford).
//!
//! Callers skip the correction when it is the identity
//! ([`crate::scene::ColorCorrection::is_identity`]), so that every
//! uncorrected result is bit for bit what it was without this module (the
//! clamp alone would change renders outside [0, 1], and a copy costs a
//! pass).
//!
//! One uniform buffer holds the correction; it is written on the queue by
//! [`ColorCorrect::apply`] and [`ColorCorrect::backward`], which submit
//! their own command buffers, so each submission sees its own correction.
//! The output buffers (`vec4<f32>` per pixel each, 32 bytes per pixel in
//! all) grow to the largest image seen and are reused; past the image they
//! hold stale data that nothing reads (the kernels take the pixel count
//! from the uniforms).

use bytemuck::{Pod, Zeroable};

use super::error::LossError;
use super::{RenderedImage, MAX_PIXELS};
use crate::gpu::binding_table::named_buffers;
use crate::gpu::wgsl_layout::wgsl_mirror;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, STORAGE};
use crate::scene::ColorCorrection;

/// Uniforms of `loss/color_correction` (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ColorCorrectionUniforms {
    /// `width · height`.
    pub pixel_count: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 3],
    /// Gain per RGB channel, then 1.
    pub gain: [f32; 4],
    /// Offset per RGB channel, then 0.
    pub offset: [f32; 4],
}

wgsl_mirror!(ColorCorrectionUniforms => "ColorCorrectionUniforms" in ["loss/color_correction"] {
    pixel_count,
    _pad,
    gain,
    offset,
});

/// Buffers of both entry points, named.
pub struct ColorCorrectBuffers<'a> {
    /// [`ColorCorrectionUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// The uncorrected render, `vec4<f32>` per pixel.
    pub image: &'a GpuBuffer,
    /// `∂L/∂corrected`, `vec4<f32>` per pixel (read by `backward`; any
    /// buffer for `apply`, never read).
    pub grad_corrected: &'a GpuBuffer,
    /// Output of `apply`: the corrected render.
    pub corrected: &'a GpuBuffer,
    /// Output of `backward`: `∂L/∂image`.
    pub grad_image: &'a GpuBuffer,
}

/// The `loss/color_correction` kernels with their own uniforms and output
/// buffers (module doc).
pub struct ColorCorrect {
    apply: ComputeKernel,
    backward: ComputeKernel,
    uniforms: GpuBuffer,
    /// Bound as `grad_corrected` by `apply` (never read there).
    no_gradient: GpuBuffer,
    corrected: GpuBuffer,
    grad_image: GpuBuffer,
}

/// Makes `buffer` hold at least `bytes` (reallocated under the same label
/// when it does not; contents lost; the old one is dropped first).
fn reserve(ctx: &GpuContext, buffer: &mut GpuBuffer, bytes: u64) -> Result<(), GpuError> {
    if buffer.size() >= bytes {
        return Ok(());
    }
    let label = buffer.label().to_string();
    *buffer = ctx.create_buffer(&label, 4, STORAGE)?;
    *buffer = ctx.create_buffer(&label, bytes, STORAGE)?;
    Ok(())
}

/// The pixel count of `image`, checked: not empty, within [`MAX_PIXELS`],
/// its buffer large enough.
fn pixels_of(image: &RenderedImage<'_>) -> Result<u32, LossError> {
    let (width, height) = (image.width, image.height);
    if width == 0 || height == 0 {
        return Err(LossError::EmptyImage { width, height });
    }
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_PIXELS {
        return Err(LossError::ImageTooLarge { width, height });
    }
    let needed = pixels * 16;
    if image.buffer.size() < needed {
        return Err(LossError::RenderBuffer {
            label: image.buffer.label().to_string(),
            size: image.buffer.size(),
            width,
            height,
            needed,
        });
    }
    Ok(pixels as u32)
}

/// Fails unless `grad` holds a `vec4<f32>` per pixel of `image`.
fn check_gradient(image: &RenderedImage<'_>, grad: &GpuBuffer) -> Result<(), LossError> {
    let needed = u64::from(image.width) * u64::from(image.height) * 16;
    if grad.size() < needed {
        return Err(LossError::GradientBuffer {
            label: grad.label().to_string(),
            size: grad.size(),
            width: image.width,
            height: image.height,
            needed,
        });
    }
    Ok(())
}

/// Fails unless every gain is finite and > 0 and every offset finite (what
/// the scene accepts: `views[i].color_correction`).
fn check_correction(correction: &ColorCorrection) -> Result<(), LossError> {
    let ok = correction.gain.iter().all(|a| a.is_finite() && *a > 0.0)
        && correction.offset.iter().all(|b| b.is_finite());
    if ok {
        Ok(())
    } else {
        Err(LossError::InvalidColorCorrection {
            gain: correction.gain,
            offset: correction.offset,
        })
    }
}

impl ColorCorrect {
    /// The bindings of both entry points.
    pub const BINDINGS: &'static [Binding] = &[
        Binding::uniform("uniforms", 0),
        Binding::read("image", 1),
        Binding::read("grad_corrected", 2),
        Binding::read_write("corrected", 3),
        Binding::read_write("grad_image", 4),
    ];

    /// Entry point `apply` of shaders/loss/color_correction.wgsl.
    pub const APPLY: KernelSpec = KernelSpec {
        shader: "loss/color_correction",
        entry: "apply",
        bindings: Self::BINDINGS,
    };

    /// Entry point `backward` of shaders/loss/color_correction.wgsl.
    pub const BACKWARD: KernelSpec = KernelSpec {
        shader: "loss/color_correction",
        entry: "backward",
        bindings: Self::BINDINGS,
    };

    /// Compiles both entry points (output buffers grown on first use).
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            apply: ComputeKernel::new(ctx, &Self::APPLY)?,
            backward: ComputeKernel::new(ctx, &Self::BACKWARD)?,
            uniforms: ctx.uniform_buffer(
                "color correction uniforms",
                &ColorCorrectionUniforms::zeroed(),
            )?,
            no_gradient: ctx.create_buffer("color correction no gradient", 16, STORAGE)?,
            corrected: ctx.create_buffer("color corrected image", 4, STORAGE)?,
            grad_image: ctx.create_buffer("color correction grad image", 4, STORAGE)?,
        })
    }

    /// Records the forward pass over `pixels` pixels.
    pub fn dispatch_apply(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &ColorCorrectBuffers,
        pixels: u32,
    ) {
        let bg = self.bind(&self.apply, ctx, b);
        self.apply.dispatch_threads(encoder, &bg, pixels);
    }

    /// Records the backward pass over `pixels` pixels.
    pub fn dispatch_backward(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &ColorCorrectBuffers,
        pixels: u32,
    ) {
        let bg = self.bind(&self.backward, ctx, b);
        self.backward.dispatch_threads(encoder, &bg, pixels);
    }

    fn bind(
        &self,
        kernel: &ComputeKernel,
        ctx: &GpuContext,
        b: &ColorCorrectBuffers,
    ) -> wgpu::BindGroup {
        kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms,
                b.image,
                b.grad_corrected,
                b.corrected,
                b.grad_image,
            ],
        )
    }

    /// Checks `image` and `correction`, writes the uniforms and sizes the
    /// outputs; returns the pixel count.
    fn prepare(
        &mut self,
        ctx: &GpuContext,
        image: &RenderedImage<'_>,
        correction: &ColorCorrection,
    ) -> Result<u32, LossError> {
        check_correction(correction)?;
        let pixels = pixels_of(image)?;
        let bytes = u64::from(pixels) * 16;
        let scene = || format!("{}×{} colour correction", image.width, image.height);
        reserve(ctx, &mut self.corrected, bytes).map_err(|e| e.in_scene(scene))?;
        reserve(ctx, &mut self.grad_image, bytes).map_err(|e| e.in_scene(scene))?;
        let [a0, a1, a2] = correction.gain;
        let [b0, b1, b2] = correction.offset;
        ctx.write(
            &self.uniforms,
            &[ColorCorrectionUniforms {
                pixel_count: pixels,
                _pad: [0; 3],
                gain: [a0, a1, a2, 1.0],
                offset: [b0, b1, b2, 0.0],
            }],
        );
        Ok(pixels)
    }

    /// Writes `image` corrected by `correction` (`vec4<f32>` per pixel,
    /// alpha unchanged) into this kernel's own buffer and returns it,
    /// borrowed until the next call, as an image of `image`'s size. Submits
    /// its own command buffer; reads nothing back.
    ///
    /// Errors: [`LossError::InvalidColorCorrection`],
    /// [`LossError::EmptyImage`], [`LossError::ImageTooLarge`],
    /// [`LossError::RenderBuffer`]; GPU errors.
    pub fn apply(
        &mut self,
        ctx: &GpuContext,
        image: RenderedImage<'_>,
        correction: ColorCorrection,
    ) -> Result<RenderedImage<'_>, LossError> {
        let pixels = self.prepare(ctx, &image, &correction)?;
        let mut encoder = crate::gpu::encoder(ctx, "color correction");
        self.dispatch_apply(
            ctx,
            &mut encoder,
            &ColorCorrectBuffers {
                uniforms: &self.uniforms,
                image: image.buffer,
                grad_corrected: &self.no_gradient,
                corrected: &self.corrected,
                grad_image: &self.grad_image,
            },
            pixels,
        );
        ctx.queue.submit([encoder.finish()]);
        ctx.check()?;
        Ok(RenderedImage {
            buffer: &self.corrected,
            width: image.width,
            height: image.height,
        })
    }

    /// `∂L/∂image` from `grad_corrected` (`∂L/∂` the image
    /// [`ColorCorrect::apply`] made of `image`, e.g. the gradient
    /// [`super::ImageLoss::evaluate`] returned for it): `a·g` per RGB
    /// channel where `0 < a·c + b < 1`, else 0, the alpha gradient
    /// unchanged; `vec4<f32>` per pixel in this kernel's own buffer,
    /// borrowed until the next call. `image` is the **uncorrected** render.
    /// Submits its own command buffer; reads nothing back.
    ///
    /// Errors: as [`ColorCorrect::apply`], and
    /// [`LossError::GradientBuffer`] for a gradient smaller than the image.
    pub fn backward(
        &mut self,
        ctx: &GpuContext,
        image: RenderedImage<'_>,
        grad_corrected: &GpuBuffer,
        correction: ColorCorrection,
    ) -> Result<&GpuBuffer, LossError> {
        check_gradient(&image, grad_corrected)?;
        let pixels = self.prepare(ctx, &image, &correction)?;
        let mut encoder = crate::gpu::encoder(ctx, "color correction backward");
        self.dispatch_backward(
            ctx,
            &mut encoder,
            &ColorCorrectBuffers {
                uniforms: &self.uniforms,
                image: image.buffer,
                grad_corrected,
                corrected: &self.corrected,
                grad_image: &self.grad_image,
            },
            pixels,
        );
        ctx.queue.submit([encoder.finish()]);
        ctx.check()?;
        Ok(&self.grad_image)
    }
}

/// `(∂L/∂gain, ∂L/∂offset)` per RGB channel of `correction` applied to
/// `image` (the **uncorrected** render), given `grad_corrected` (`∂L/∂` the
/// corrected image): `Σ g·c` and `Σ g` over the pixels where
/// `0 < a·c + b < 1` (computed in f32 as the kernel does), summed in f64 on
/// the host after reading both buffers back (module doc: for `physfit
/// align`, not for a fit's iterations).
///
/// Errors: [`LossError::InvalidColorCorrection`], [`LossError::EmptyImage`],
/// [`LossError::ImageTooLarge`], [`LossError::RenderBuffer`],
/// [`LossError::GradientBuffer`]; GPU errors.
pub fn gain_offset_gradient(
    ctx: &GpuContext,
    image: RenderedImage<'_>,
    grad_corrected: &GpuBuffer,
    correction: ColorCorrection,
) -> Result<([f64; 3], [f64; 3]), LossError> {
    check_correction(&correction)?;
    let pixels = pixels_of(&image)? as usize;
    check_gradient(&image, grad_corrected)?;
    let values: Vec<[f32; 4]> = ctx.read_buffer(image.buffer)?;
    let grads: Vec<[f32; 4]> = ctx.read_buffer(grad_corrected)?;
    let (mut d_gain, mut d_offset) = ([0.0f64; 3], [0.0f64; 3]);
    for (p, g) in values.iter().zip(&grads).take(pixels) {
        for c in 0..3 {
            let z = correction.gain[c] * p[c] + correction.offset[c];
            if z > 0.0 && z < 1.0 {
                d_gain[c] += f64::from(g[c]) * f64::from(p[c]);
                d_offset[c] += f64::from(g[c]);
            }
        }
    }
    Ok((d_gain, d_offset))
}
