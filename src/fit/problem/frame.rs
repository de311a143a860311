//! One frame of an evaluation, read as the chain (src/reference/chain.rs,
//! `frame_seed_with`): pose the splats at the frame's state; per selected
//! view draw, colour-correct and score ([`FitProblem::frame_loss`]); with
//! a gradient, back the same way: `∂L/∂pixel` through the correction, the
//! draw and the pose into the frame's state gradient
//! ([`FitProblem::frame_gradient`]).

use super::FitError;
use super::FitProblem;
use super::TimedPart;
use crate::gpu::{GpuBuffer, GpuContext};
use crate::loss::{ColorCorrect, ImageLoss, LossTermsBuffer, ReferenceFrame, RenderedImage};
use crate::scene::ColorCorrection;
use crate::splat::RenderOutput;

impl FitProblem {
    /// Frame `frame` (drivers in `state`) scored in every selected view
    /// into slots `slot0..` of `terms`: pose, then per view draw and loss.
    /// Returns the intersections drawn.
    pub(super) fn frame_loss(
        &mut self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        frame: usize,
        views: &[usize],
        terms: &LossTermsBuffer,
        slot0: u32,
    ) -> Result<u64, FitError> {
        self.pose(ctx, state)?;
        let mut intersections = 0u64;
        for (i, &view) in views.iter().enumerate() {
            let out = self.draw_view(ctx, view)?;
            intersections += u64::from(out.intersection_count);
            measure_view(
                ctx,
                &mut self.color,
                &mut self.loss,
                self.chain.image(&out)?,
                self.corrections[view],
                reference(&self.references, view, frame),
                terms,
                slot0 + i as u32,
            )?;
            self.profiler.lap(ctx, TimedPart::Loss)?;
        }
        Ok(intersections)
    }

    /// [`FitProblem::frame_loss`] with each view's loss back-propagated:
    /// loss → draw backward → pose backward, which adds `∂L/∂x` of the
    /// drivers into `state_grad` (cleared first): the frame's seed of the
    /// rollout's backward. Returns the intersections drawn.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn frame_gradient(
        &mut self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        frame: usize,
        views: &[usize],
        terms: &LossTermsBuffer,
        slot0: u32,
        state_grad: &GpuBuffer,
    ) -> Result<u64, FitError> {
        let mut encoder = crate::gpu::encoder(ctx, "fit clear state gradient");
        encoder.clear_buffer(state_grad.raw(), 0, None);
        ctx.queue.submit([encoder.finish()]);
        self.pose(ctx, state)?;
        let mut intersections = 0u64;
        for (i, &view) in views.iter().enumerate() {
            let out = self.draw_view(ctx, view)?;
            intersections += u64::from(out.intersection_count);
            let grad_image = view_gradient(
                ctx,
                &mut self.color,
                &mut self.loss,
                self.chain.image(&out)?,
                self.corrections[view],
                reference(&self.references, view, frame),
                terms,
                slot0 + i as u32,
            )?;
            self.profiler.lap(ctx, TimedPart::Loss)?;
            let back = self.chain.draw_backward(ctx, &out, grad_image)?;
            self.profiler.lap(ctx, TimedPart::RenderBackward)?;
            self.profiler.add_stages(&back.timings);
            back.pose_backward(ctx, state, state_grad)?;
            self.profiler.lap(ctx, TimedPart::Deformation)?;
        }
        Ok(intersections)
    }

    /// Poses the splats at the drivers of `state`.
    fn pose(&mut self, ctx: &GpuContext, state: &GpuBuffer) -> Result<(), FitError> {
        self.chain.pose(ctx, state)?;
        self.profiler.lap(ctx, TimedPart::Deformation)?;
        Ok(())
    }

    /// Draws the posed splats in view `view`: over the view's static
    /// backdrop when it has one (and static tiles are on), else every tile
    /// (module doc of [`super`], "Static tiles").
    fn draw_view(&mut self, ctx: &GpuContext, view: usize) -> Result<RenderOutput, FitError> {
        let out = match &self.backdrops[view] {
            Some(backdrop) if self.static_tiles => self.chain.draw_over(ctx, backdrop)?,
            _ => self.chain.draw(ctx, &self.cameras[view])?,
        };
        self.profiler.lap(ctx, TimedPart::RenderForward)?;
        self.profiler.add_stages(&out.timings);
        Ok(out)
    }
}

/// View `view`'s reference of frame `frame` (the selection was checked).
fn reference(
    references: &[Option<Vec<ReferenceFrame>>],
    view: usize,
    frame: usize,
) -> &ReferenceFrame {
    &references[view].as_ref().expect("checked selection")[frame]
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
