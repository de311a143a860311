//! One view's alignment problem at one pyramid level, apart from its solver
//! (argmin's split): a camera and colour correction in, the fit's own image
//! loss (L1 + D-SSIM against reference frame 0, masks honoured) and its
//! gradient out. The splats are the scene's at rest, held fixed; the
//! gradient comes from the rasterizer's backward
//! ([`Rasterizer::camera_backward`]) and, for the colour, from the
//! correction's own derivative.

use crate::gpu::GpuContext;
use crate::loss::color_correction::{gain_offset_gradient, ColorCorrect};
use crate::loss::{ImageLoss, LossTermsBuffer, LossWeights, ReferenceFrame, RenderedImage};
use crate::io::Frame;
use crate::splat::{CameraGradient, Rasterizer, SplatBuffers};

use super::chart::ViewState;
use super::error::AlignError;

/// The loss of one state, and its gradient when asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The image loss.
    pub loss: f64,
    /// PSNR of the (corrected) render against the reference, dB.
    pub psnr: f64,
    /// The gradient, when asked for.
    pub gradient: Option<StateGradient>,
}

/// dL/d(camera) and dL/d(gain, offset).
#[derive(Clone, Debug, PartialEq)]
pub struct StateGradient {
    /// The camera's.
    pub camera: CameraGradient,
    /// Per channel, dL/d gain.
    pub gain: [f64; 3],
    /// Per channel, dL/d offset.
    pub offset: [f64; 3],
}

/// Renders the scene's splats at rest and scores them against one
/// reference frame (module doc).
pub struct ViewProblem<'a> {
    ctx: &'a GpuContext,
    splats: &'a SplatBuffers,
    background: [f32; 3],
    raster: Rasterizer,
    loss: ImageLoss,
    color: ColorCorrect,
    terms: LossTermsBuffer,
    /// Apply the correction even when it is the identity (it is being fitted).
    fit_color: bool,
    /// Polled at every evaluation ([`ViewProblem::set_stop`]).
    stop: Option<crate::stop::StopSignal>,
}

impl<'a> ViewProblem<'a> {
    /// Compiles the kernels. `fit_color`: the colour correction is fitted,
    /// so it is applied (and differentiated) even at the identity.
    pub fn new(
        ctx: &'a GpuContext,
        splats: &'a SplatBuffers,
        background: [f32; 3],
        weights: LossWeights,
        fit_color: bool,
    ) -> Result<Self, AlignError> {
        Ok(Self {
            ctx,
            splats,
            background,
            raster: Rasterizer::new(ctx)?,
            loss: ImageLoss::new(ctx, weights)?,
            color: ColorCorrect::new(ctx)?,
            terms: LossTermsBuffer::new(ctx, "align loss terms", 1)?,
            fit_color,
            stop: None,
        })
    }

    /// Stops the alignment at its next evaluation once `stop` is raised:
    /// [`ViewProblem::evaluate`] then returns [`AlignError::Stopped`], so a
    /// SIGINT or SIGTERM is honoured between evaluations, not a whole view
    /// later.
    pub fn set_stop(&mut self, stop: crate::stop::StopSignal) {
        self.stop = Some(stop);
    }

    /// The scene's background colour, as rendered (before any correction).
    pub fn background(&self) -> [f32; 3] {
        self.background
    }

    fn corrected(&self, state: &ViewState) -> bool {
        self.fit_color || !state.color.is_identity()
    }

    /// The loss of `state` against `reference` (whose size is the camera's),
    /// with its gradient when `gradient`.
    pub fn evaluate(
        &mut self,
        state: &ViewState,
        reference: &ReferenceFrame,
        gradient: bool,
    ) -> Result<Evaluation, AlignError> {
        if self
            .stop
            .as_ref()
            .is_some_and(crate::stop::StopSignal::raised)
        {
            return Err(AlignError::Stopped);
        }
        let ctx = self.ctx;
        let out = self
            .raster
            .render(ctx, self.splats, &state.camera, self.background)?;
        let image = RenderedImage::of_render(&self.raster, &out)?;
        let corrected = self.corrected(state);
        let grad_corrected = if corrected {
            let shown = self.color.apply(ctx, image, state.color)?;
            if gradient {
                Some(self.loss.evaluate(ctx, shown, reference, &self.terms, 0)?)
            } else {
                self.loss.measure(ctx, shown, reference, &self.terms, 0)?;
                None
            }
        } else if gradient {
            Some(self.loss.evaluate(ctx, image, reference, &self.terms, 0)?)
        } else {
            self.loss.measure(ctx, image, reference, &self.terms, 0)?;
            None
        };
        let terms = self.terms.read(ctx)?[0];
        let mut evaluation = Evaluation {
            loss: f64::from(terms.loss),
            psnr: terms.psnr(),
            gradient: None,
        };
        let Some(grad_corrected) = grad_corrected else {
            return Ok(evaluation);
        };
        let image = RenderedImage::of_render(&self.raster, &out)?;
        let (grad_image, gain, offset) = if corrected {
            let (gain, offset) = gain_offset_gradient(ctx, image, grad_corrected, state.color)?;
            let g = self
                .color
                .backward(ctx, image, grad_corrected, state.color)?;
            (g, gain, offset)
        } else {
            (grad_corrected, [0.0; 3], [0.0; 3])
        };
        let camera = self
            .raster
            .camera_backward(ctx, self.splats, &out, grad_image)?;
        evaluation.gradient = Some(StateGradient {
            camera,
            gain,
            offset,
        });
        Ok(evaluation)
    }

    /// The render of `state` as its video would show it (the correction
    /// applied), read back: for the before/after pictures.
    pub fn picture(&mut self, state: &ViewState) -> Result<Frame, AlignError> {
        let ctx = self.ctx;
        let out = self
            .raster
            .render(ctx, self.splats, &state.camera, self.background)?;
        let pixels = self.raster.read_image(ctx, &out)?;
        let frame = Frame {
            width: out.width,
            height: out.height,
            pixels,
        };
        Ok(state.color.apply_to_frame(frame))
    }
}
