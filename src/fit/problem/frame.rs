//! One frame of an evaluation: its state posed, rendered in every
//! selected view and scored, with or without the back-propagation of each
//! view's loss into the frame's state gradient; each view's colour
//! correction between render and loss ([`measure_view`],
//! [`view_gradient`]).

use super::FitError;
use super::FitProblem;
use super::TimedPart;
use crate::gpu::{GpuBuffer, GpuContext};
use crate::loss::{ColorCorrect, ImageLoss, LossTermsBuffer, ReferenceFrame, RenderedImage};
use crate::scene::ColorCorrection;

impl FitProblem {
    /// Renders frame `frame` (drivers in `state`) in every selected view
    /// into slots `slot0..` of `terms`; with `state_grad`, back-propagates
    /// each view's loss into it. Returns the intersections rendered.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn frame(
        &mut self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        frame: usize,
        views: &[usize],
        terms: &LossTermsBuffer,
        slot0: u32,
        state_grad: Option<&GpuBuffer>,
    ) -> Result<u64, FitError> {
        if let Some(g) = state_grad {
            let mut encoder = crate::gpu::encoder(ctx, "fit clear state gradient");
            encoder.clear_buffer(g.raw(), 0, None);
            ctx.queue.submit([encoder.finish()]);
        }
        self.forward.pose_state(ctx, state)?;
        self.profiler.lap(ctx, TimedPart::Deformation)?;
        let mut intersections = 0u64;
        for (i, &view) in views.iter().enumerate() {
            let out = match &self.backdrops[view] {
                Some(backdrop) if self.static_tiles => self.forward.draw_over(ctx, backdrop)?,
                _ => self.forward.draw(ctx, &self.cameras[view])?,
            };
            self.profiler.lap(ctx, TimedPart::RenderForward)?;
            self.profiler.add_stages(&out.timings);
            intersections += u64::from(out.intersection_count);
            let reference = &self.references[view].as_ref().expect("checked selection")[frame];
            let parts = self.forward.parts_mut()?;
            let render = RenderedImage::of_render(parts.raster, &out)?;
            let slot = slot0 + i as u32;
            let correction = self.corrections[view];
            match state_grad {
                None => {
                    measure_view(
                        ctx,
                        &mut self.color,
                        &mut self.loss,
                        render,
                        correction,
                        reference,
                        terms,
                        slot,
                    )?;
                    self.profiler.lap(ctx, TimedPart::Loss)?;
                }
                Some(g) => {
                    let grad_image = view_gradient(
                        ctx,
                        &mut self.color,
                        &mut self.loss,
                        render,
                        correction,
                        reference,
                        terms,
                        slot,
                    )?;
                    self.profiler.lap(ctx, TimedPart::Loss)?;
                    let back = parts.raster.backward(ctx, parts.splats, &out, grad_image)?;
                    self.profiler.lap(ctx, TimedPart::RenderBackward)?;
                    self.profiler.add_stages(&back.timings);
                    let mut encoder = crate::gpu::encoder(ctx, "fit deform backward");
                    parts.deformation.encode_backward(
                        ctx,
                        &mut encoder,
                        state,
                        back.gradients,
                        g,
                    )?;
                    ctx.queue.submit([encoder.finish()]);
                    self.profiler.lap(ctx, TimedPart::Deformation)?;
                }
            }
        }
        Ok(intersections)
    }
}

/// Scores one view's render into `slot` of `terms`, through the view's
/// colour correction. The identity is skipped, so an uncorrected view
/// scores bit for bit as before colour corrections existed.
#[allow(clippy::too_many_arguments)]
fn measure_view(
    ctx: &GpuContext,
    color: &mut ColorCorrect,
    loss: &mut ImageLoss,
    render: RenderedImage<'_>,
    correction: ColorCorrection,
    reference: &ReferenceFrame,
    terms: &LossTermsBuffer,
    slot: u32,
) -> Result<(), FitError> {
    if correction.is_identity() {
        loss.measure(ctx, render, reference, terms, slot)?;
    } else {
        let image = color.apply(ctx, render, correction)?;
        loss.measure(ctx, image, reference, terms, slot)?;
    }
    Ok(())
}

/// [`measure_view`], then the loss's gradient w.r.t. the render (back
/// through the correction unless it is the identity).
#[allow(clippy::too_many_arguments)]
fn view_gradient<'a>(
    ctx: &GpuContext,
    color: &'a mut ColorCorrect,
    loss: &'a mut ImageLoss,
    render: RenderedImage<'_>,
    correction: ColorCorrection,
    reference: &ReferenceFrame,
    terms: &LossTermsBuffer,
    slot: u32,
) -> Result<&'a GpuBuffer, FitError> {
    if correction.is_identity() {
        return Ok(loss.evaluate(ctx, render, reference, terms, slot)?);
    }
    let image = color.apply(ctx, render, correction)?;
    let grad = loss.evaluate(ctx, image, reference, terms, slot)?;
    Ok(color.backward(ctx, render, grad, correction)?)
}
