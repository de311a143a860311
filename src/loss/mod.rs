//! The image loss on the GPU, forward and backward, and the TV regulariser
//! (docs/design.md § Loss, parameters, fit), checked against the f64 twin the
//! tests compile with the `reference` feature (`reference::loss`).
//!
//! Per frame and view, `L = w_l1 · mean|I − Î| + w_ssim · (1 − mean SSIM(I, Î))`
//! (defaults 0.1 / 0.9, PhysDreamer eq. 10), the means over pixels and the
//! three RGB channels; alpha is not compared. SSIM is 3DGS's
//! (`utils/loss_utils.py`): per channel, an 11×11 Gaussian window of σ = 1.5,
//! zero padding ([`window`]), C1 = 0.01², C2 = 0.03². `I` is the render
//! ([`crate::splat::Rasterizer::image`], RGB already over the background),
//! `Î` a [`ReferenceFrame`] kept on the GPU as 8-bit RGBA.
//!
//! [`ImageLoss::evaluate`] records, per channel, in one submission:
//! 1. [`ssim_rows`]: horizontal 11-tap window sums of `(x, y, xy, (x − y)²)`;
//! 2. [`ssim_cols`]: vertical sums → the window moments; per pixel `1 − SSIM`
//!    and its derivatives with respect to the moments; per workgroup, the
//!    partial sums of `|x − y|`, `1 − SSIM` and `(x − y)²`;
//! 3. [`ssim_grad_rows`], [`ssim_grad_cols`]: the backward, the same
//!    separable convolutions applied to the derivative maps (the window is
//!    symmetric and the padding zero, so the adjoint of the convolution is
//!    itself), combined with the L1 sign into `∂L/∂pixel`;
//!
//! then [`reduce_terms`] sums the partials and writes the frame's
//! [`LossTerms`] to a slot of a [`LossTermsBuffer`].
//!
//! Moments: SSIM needs only `σx² + σy²`, never the two apart, and
//! `σx² + σy² = E[(x − y)²] − (μx − μy)² + 2σxy`, so the GPU convolves four
//! maps, `x`, `y`, `xy` and `(x − y)²`, instead of the textbook five. With
//! the rearranged forms in shaders/loss/ssim_cols.wgsl this avoids the
//! cancellation of `1 − SSIM` near 1 and makes the loss of identical images
//! and its gradient **exactly 0** on any adapter: every term is a product
//! with a difference that is exactly zero when `I = Î` bit for bit (which
//! holds for a render equal to [`unpack_rgba8`] of the reference), whatever
//! the shader compiler fuses.
//!
//! Reductions are deterministic: a fixed tree in workgroup memory per
//! workgroup of 256 pixels, then one workgroup summing the partials in a
//! fixed order; no atomics, so repeated evaluations give the same bits.
//!
//! The gradient image is `vec4<f32>` per pixel, row-major, alpha gradient 0:
//! exactly what [`crate::splat::Rasterizer::backward`] takes. It lives in
//! the loss's workspace, borrowed by the caller until the next evaluation.
//! Memory: three `vec4<f32>` buffers per pixel (48 bytes per pixel, about
//! 100 MB at 1080p); each must fit `max_storage_buffer_binding_size` like
//! the rasterizer's own image (which is as large), else a typed
//! [`GpuError::OverLimit`].
//!
//! Masks: a [`ReferenceFrame`] may carry a
//! [`ReferenceMask`], `m_p ∈ {0, 1}` per pixel. Then every pixel's `|I − Î|`,
//! `1 − SSIM_p` and `(I − Î)²` is multiplied by `m_p`, and the means divide
//! by `3 · Σ m_p`, the counted values, instead of `3 · pixels`:
//! `L = w_l1 · Σ m_p|I − Î|_p / (3M) + w_ssim · Σ m_p (1 − SSIM_p) / (3M)`.
//! Normalising by the counted pixels (not all of them) keeps the loss on the
//! same scale as an unmasked one (docs/design.md § Loss, parameters, fit: means
//! over pixels and channels), so the default weights and learning rates keep
//! their meaning whatever share of the image the object covers, and the
//! reported MSE/PSNR is the object's. The SSIM maps themselves are
//! unchanged: a counted pixel's window still reads its neighbours up to 5 px
//! into the ignored region (docs/scene.md asks for a margin); a change of the
//! reference further inside the ignored region changes neither the loss nor
//! its gradient. Without a mask the kernels skip the weighting entirely, so
//! the unmasked loss is bit for bit what it was.
//!
//! Colour correction: a view may carry a camera's gain and offset per
//! channel ([`crate::scene::ColorCorrection`]); [`ColorCorrect`] applies it
//! to the render before the loss and carries `∂L/∂pixel` back through it
//! ([`color_correction`]). The loss itself never sees it.
//!
//! TV ([`tv`]) runs on the CPU: see that module for why.

pub mod color_correction;
pub mod error;
#[cfg(feature = "reference")]
pub mod frames_upload;
pub mod reduce_terms;
pub mod reference_frame;
pub mod reference_mask;
pub mod ssim_cols;
pub mod ssim_grad_cols;
pub mod ssim_grad_rows;
pub mod ssim_rows;
pub mod terms;
pub mod tv;
pub mod uniforms;
pub mod window;
mod workspace;

pub use color_correction::ColorCorrect;
#[cfg(feature = "reference")]
pub use color_correction::gain_offset_gradient;
pub use error::LossError;
pub use reference_frame::ReferenceFrame;
#[cfg(feature = "reference")]
pub use reference_frame::{pack_rgba8, unpack_rgba8};
pub use reference_mask::ReferenceMask;
#[cfg(feature = "reference")]
pub use reference_mask::pack_mask;
pub use terms::{LossTerms, LossTermsBuffer};
pub use tv::{tv_scalar, tv_vector, TV_EPSILON};
#[cfg(feature = "reference")]
pub use tv::Tv;
#[cfg(feature = "reference")]
pub use window::{gaussian_window, SSIM_SIGMA, SSIM_WINDOW};

use crate::gpu::{GpuBuffer, GpuContext, GpuError};
use crate::splat::{Rasterizer, RenderOutput};

use reduce_terms::{ReduceTerms, ReduceTermsBuffers};
use ssim_cols::{SsimCols, SsimColsBuffers};
use ssim_grad_cols::{SsimGradCols, SsimGradColsBuffers};
use ssim_grad_rows::{SsimGradRows, SsimGradRowsBuffers};
use ssim_rows::{SsimRows, SsimRowsBuffers};
use uniforms::{window_f32, LossUniforms, ReduceUniforms};
use workspace::Workspace;

/// Largest image one evaluation takes: pixel indices are u32 and the
/// gradient image is addressed per float (4 per pixel).
pub const MAX_PIXELS: u64 = 1 << 28;

/// Weights of the two image-loss terms (docs/design.md § Loss, parameters, fit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossWeights {
    /// Weight of `mean|I − Î|` (default 0.1).
    pub l1: f32,
    /// Weight of `1 − mean SSIM` (default 0.9).
    pub ssim: f32,
}

impl Default for LossWeights {
    /// PhysDreamer's 0.1 / 0.9 (paper eq. 10).
    fn default() -> Self {
        Self { l1: 0.1, ssim: 0.9 }
    }
}

impl LossWeights {
    fn validate(&self) -> Result<(), LossError> {
        let ok = |w: f32| w.is_finite() && w >= 0.0;
        if ok(self.l1) && ok(self.ssim) {
            Ok(())
        } else {
            Err(LossError::InvalidWeights {
                l1: self.l1,
                ssim: self.ssim,
            })
        }
    }
}

/// A rendered image on the GPU: `vec4<f32>` per pixel, row-major, RGB over
/// the background ([`crate::splat::Rasterizer::image`]'s layout). The buffer
/// may be longer than `width · height` pixels (the rasterizer keeps its
/// largest image); the rest is ignored.
#[derive(Clone, Copy)]
pub struct RenderedImage<'a> {
    /// The pixels.
    pub buffer: &'a GpuBuffer,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
}

impl<'a> RenderedImage<'a> {
    /// The image of `output`, `rasterizer`'s latest frame.
    ///
    /// Errors: [`crate::splat::SplatError::StaleRender`] or
    /// [`crate::splat::SplatError::ForeignRender`] (as [`LossError::Splat`]).
    pub fn of_render(rasterizer: &'a Rasterizer, output: &RenderOutput) -> Result<Self, LossError> {
        Ok(Self {
            buffer: rasterizer.image(output)?,
            width: output.width,
            height: output.height,
        })
    }
}

/// The image loss: compiled kernels and a workspace sized to the largest
/// image seen, reused by every evaluation (module doc).
///
/// Typical use in a fit, per frame and view: render, [`ImageLoss::evaluate`]
/// into slot `k` of a [`LossTermsBuffer`], pass the returned gradient image
/// to [`crate::splat::Rasterizer::backward`], and read the terms buffer once
/// per iteration.
pub struct ImageLoss {
    rows: SsimRows,
    cols: SsimCols,
    grad_rows: SsimGradRows,
    grad_cols: SsimGradCols,
    reduce: ReduceTerms,
    workspace: Workspace,
    weights: LossWeights,
}

impl ImageLoss {
    /// Compiles the kernels.
    ///
    /// Errors: [`LossError::InvalidWeights`] for a negative or non-finite
    /// weight; GPU errors.
    pub fn new(ctx: &GpuContext, weights: LossWeights) -> Result<Self, LossError> {
        weights.validate()?;
        Ok(Self {
            rows: SsimRows::new(ctx)?,
            cols: SsimCols::new(ctx)?,
            grad_rows: SsimGradRows::new(ctx)?,
            grad_cols: SsimGradCols::new(ctx)?,
            reduce: ReduceTerms::new(ctx)?,
            workspace: Workspace::new(ctx)?,
            weights,
        })
    }

    /// The weights of the two terms.
    #[cfg(feature = "reference")]
pub fn weights(&self) -> LossWeights {
        self.weights
    }

    /// Replaces the weights of the two terms: they are written into every
    /// evaluation's uniforms, so nothing is rebuilt (a fit switching
    /// stages).
    ///
    /// Errors: [`LossError::InvalidWeights`] for a negative or non-finite
    /// weight (the weights stay as they were).
    pub fn set_weights(&mut self, weights: LossWeights) -> Result<(), LossError> {
        weights.validate()?;
        self.weights = weights;
        Ok(())
    }

    /// Evaluates the loss of `render` against `reference`, writes its
    /// [`LossTerms`] to `slot` of `terms`, and returns `∂L/∂pixel`
    /// (`vec4<f32>` per pixel, row-major, alpha gradient 0; possibly longer
    /// than the image), borrowed until the next evaluation. Submits its own
    /// command buffer; reads nothing back.
    ///
    /// Errors: [`LossError::SizeMismatch`] naming both sizes,
    /// [`LossError::EmptyImage`], [`LossError::ImageTooLarge`],
    /// [`LossError::RenderBuffer`], [`LossError::SlotOutOfRange`]; GPU
    /// errors.
    pub fn evaluate(
        &mut self,
        ctx: &GpuContext,
        render: RenderedImage<'_>,
        reference: &ReferenceFrame,
        terms: &LossTermsBuffer,
        slot: u32,
    ) -> Result<&GpuBuffer, LossError> {
        self.record(ctx, render, reference, terms, slot, true)?;
        Ok(&self.workspace.grad_image)
    }

    /// [`ImageLoss::evaluate`] without the backward passes: only the terms
    /// (for reports, e.g. PSNR of frame 0 before fitting). Errors as
    /// [`ImageLoss::evaluate`].
    pub fn measure(
        &mut self,
        ctx: &GpuContext,
        render: RenderedImage<'_>,
        reference: &ReferenceFrame,
        terms: &LossTermsBuffer,
        slot: u32,
    ) -> Result<(), LossError> {
        self.record(ctx, render, reference, terms, slot, false)
    }

    fn record(
        &mut self,
        ctx: &GpuContext,
        render: RenderedImage<'_>,
        reference: &ReferenceFrame,
        terms: &LossTermsBuffer,
        slot: u32,
        with_gradient: bool,
    ) -> Result<(), LossError> {
        let (width, height) = (render.width, render.height);
        if (width, height) != (reference.width(), reference.height()) {
            return Err(LossError::SizeMismatch {
                render_width: width,
                render_height: height,
                reference_width: reference.width(),
                reference_height: reference.height(),
            });
        }
        if width == 0 || height == 0 {
            return Err(LossError::EmptyImage { width, height });
        }
        let pixels64 = u64::from(width) * u64::from(height);
        if pixels64 > MAX_PIXELS {
            return Err(LossError::ImageTooLarge { width, height });
        }
        let needed = pixels64 * 16;
        if render.buffer.size() < needed {
            return Err(LossError::RenderBuffer {
                label: render.buffer.label().to_string(),
                size: render.buffer.size(),
                width,
                height,
                needed,
            });
        }
        terms.check_slot(slot)?;
        let pixels = pixels64 as u32;
        let per_channel = self.cols.partials_for(pixels);
        let partial_count = 3 * per_channel;
        self.workspace
            .reserve(ctx, pixels64, u64::from(partial_count))
            .map_err(|e: GpuError| e.in_scene(|| format!("{width}×{height} image loss")))?;

        let ws = &self.workspace;
        let (mask, masked, counted) = match reference.mask() {
            Some(m) => (m.buffer(), 1, m.counted()),
            None => (&ws.no_mask, 0, pixels64),
        };
        let n3 = 3.0 * counted as f64;
        let coefficients = [
            (f64::from(self.weights.l1) / n3) as f32,
            (f64::from(self.weights.ssim) / n3) as f32,
            0.0,
            0.0,
        ];
        for (c, uniform) in ws.uniforms.iter().enumerate() {
            ctx.write(
                uniform,
                &[LossUniforms {
                    width,
                    height,
                    pixel_count: pixels,
                    channel: c as u32,
                    partials_per_channel: per_channel,
                    masked,
                    _pad: [0; 2],
                    coefficients,
                    window: window_f32(),
                }],
            );
        }
        let inv = (1.0 / n3) as f32;
        ctx.write(
            &ws.reduce_uniforms,
            &[ReduceUniforms {
                count: partial_count,
                slot,
                _pad: [0; 2],
                scale: [inv, inv, inv, 0.0],
                weights: [self.weights.l1, self.weights.ssim, 0.0, 0.0],
            }],
        );

        let mut enc = crate::gpu::encoder(ctx, "image loss");
        for uniforms in &ws.uniforms {
            self.rows.dispatch(
                ctx,
                &mut enc,
                &SsimRowsBuffers {
                    uniforms,
                    image: render.buffer,
                    reference: reference.buffer(),
                    decode: &ws.decode,
                    rows: &ws.rows,
                },
                pixels,
            );
            self.cols.dispatch(
                ctx,
                &mut enc,
                &SsimColsBuffers {
                    uniforms,
                    image: render.buffer,
                    reference: reference.buffer(),
                    decode: &ws.decode,
                    rows: &ws.rows,
                    maps: &ws.maps,
                    partials: &ws.partials,
                    mask,
                },
                pixels,
            );
            if with_gradient {
                self.grad_rows.dispatch(
                    ctx,
                    &mut enc,
                    &SsimGradRowsBuffers {
                        uniforms,
                        maps: &ws.maps,
                        rows: &ws.rows,
                    },
                    pixels,
                );
                self.grad_cols.dispatch(
                    ctx,
                    &mut enc,
                    &SsimGradColsBuffers {
                        uniforms,
                        image: render.buffer,
                        reference: reference.buffer(),
                        decode: &ws.decode,
                        rows: &ws.rows,
                        grad_image: &ws.grad_image,
                        mask,
                    },
                    pixels,
                );
            }
        }
        self.reduce.dispatch(
            ctx,
            &mut enc,
            &ReduceTermsBuffers {
                uniforms: &ws.reduce_uniforms,
                partials: &ws.partials,
                terms: terms.buffer(),
            },
        );
        ctx.queue.submit([enc.finish()]);
        ctx.check()?;
        Ok(())
    }
}
