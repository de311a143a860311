//! One evaluation of a fit problem: the loss and its exact gradient
//! w.r.t. both groups of parameters (the problem's module doc, steps 1–4).

use super::{FitError, FitProblem, Parameters, Selection, TimedPart};
use crate::fit::evaluation::Evaluation;
use crate::fit::param_gather::GatherBuffers;
use crate::gpu::GpuContext;
use crate::mpm::{FrameGradient, GradientFlow};

impl FitProblem {
    /// The loss of `params` on `selection` and its gradients w.r.t. the
    /// `log10 E` and velocity parameters for `flow` (module doc).
    pub fn evaluate(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        selection: &Selection,
        flow: GradientFlow,
    ) -> Result<Evaluation, FitError> {
        self.check_selection(selection)?;
        self.profiler.start();
        let (prepared, start) = self.prepare(ctx, params)?;
        let last = *selection.frames.last().unwrap();
        let rollout = self.chain.rollout(ctx, &start, last as u32)?;
        // Between the forward rollout and the (longer) backward pass.
        self.check_stop()?;
        let terms = self.terms_buffer(ctx, selection)?;
        while self.state_grads.len() < selection.frames.len() {
            let label = format!("fit state gradient {}", self.state_grads.len());
            self.state_grads.push(self.chain.state_buffer(ctx, &label)?);
        }
        self.profiler.lap(ctx, TimedPart::MpmForward)?;
        let views = selection.views.len() as u32;
        let mut intersections = 0;
        let grads = std::mem::take(&mut self.state_grads);
        let rendered: Result<(), FitError> = (|| {
            for (f, &k) in selection.frames.iter().enumerate() {
                intersections += self.frame_gradient(
                    ctx,
                    &rollout.frames[k],
                    k,
                    &selection.views,
                    &terms,
                    f as u32 * views,
                    &grads[f],
                )?;
            }
            Ok(())
        })();
        let frame_grads: Vec<FrameGradient> = selection
            .frames
            .iter()
            .zip(&grads)
            .map(|(&frame, grad)| FrameGradient { frame, grad })
            .collect();
        let mpm = rendered.and_then(|()| {
            Ok(self
                .chain
                .rollout_backward(ctx, &rollout, &frame_grads, flow)?)
        });
        drop(frame_grads);
        self.state_grads = grads;
        let mpm = mpm?;
        self.profiler.lap(ctx, TimedPart::MpmAdjoint)?;
        let (report, tv_gradient) =
            self.report(ctx, selection, &terms, &prepared, intersections)?;
        self.profiler.lap(ctx, TimedPart::Loss)?;
        let tv: Vec<f32> = self
            .youngs_map
            .transpose(&tv_gradient.log10)
            .iter()
            .map(|g| (g * self.tv_weight) as f32)
            .collect();
        if !tv.is_empty() {
            ctx.write(&self.youngs_init, &tv);
        }
        // The velocity TV's gradient through the velocity map's transpose,
        // as the E TV's; written at weight 0 too (zeros), so that a stage
        // switched to weight 0 ([`FitProblem::set_stage`]) leaves nothing of
        // the previous stage's term.
        let tv: Vec<f32> = self
            .velocity_map
            .transpose(&tv_gradient.velocity)
            .iter()
            .map(|g| (g * self.velocity_tv_weight) as f32)
            .collect();
        if !tv.is_empty() {
            ctx.write(&self.velocity_init, &tv);
        }
        let youngs_gradient =
            ctx.storage_zeroed::<f32>("fit log10 E gradient", self.youngs_map.params.max(1))?;
        let velocity_gradient =
            ctx.storage_zeroed::<f32>("fit v0 gradient", self.velocity_map.params.max(1))?;
        let mut encoder = crate::gpu::encoder(ctx, "fit parameter gradients");
        self.gather.dispatch(
            ctx,
            &mut encoder,
            &self.youngs_plan,
            &GatherBuffers {
                src: &mpm.youngs,
                scale: &self.youngs_scale,
                init: &self.youngs_init,
                out: &youngs_gradient,
            },
        );
        self.gather.dispatch(
            ctx,
            &mut encoder,
            &self.velocity_plan,
            &GatherBuffers {
                src: &mpm.initial_state,
                scale: &self.youngs_scale,
                init: &self.velocity_init,
                out: &velocity_gradient,
            },
        );
        ctx.queue.submit([encoder.finish()]);
        self.profiler.lap(ctx, TimedPart::MpmAdjoint)?;
        ctx.check()?;
        Ok(Evaluation {
            report,
            youngs_gradient,
            velocity_gradient,
            // The simulator's particles are the drivers.
            poisson_gradient: mpm.poisson,
        })
    }
}
