//! One evaluation of a fit problem: the loss and its exact gradient
//! w.r.t. both groups of parameters (the problem's module doc, steps 1–4).

use super::{FitError, FitProblem, Parameters, Selection, TimedPart};
use crate::fit::evaluation::Evaluation;
use crate::fit::param_gather::GatherBuffers;
use crate::gpu::{GpuBuffer, GpuContext};
use crate::loss::LossTermsBuffer;
use crate::mpm::{FrameGradient, GradientFlow, MpmGradients, ParticleState};

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
        let terms = self.terms_buffer(ctx, selection)?;
        while self.state_grads.len() < selection.frames.len() {
            let label = format!("fit state gradient {}", self.state_grads.len());
            self.state_grads.push(self.chain.state_buffer(ctx, &label)?);
        }
        let mut intersections = 0;
        let grads = std::mem::take(&mut self.state_grads);
        let frame_by_frame =
            self.kept_forward && flow == GradientFlow::Truncated && selection.frames[0] >= 1;
        let mpm = if frame_by_frame {
            self.truncated_frames(ctx, &start, selection, &terms, &grads, &mut intersections)
        } else {
            self.rollout_then_backward(ctx, &start, selection, flow, &terms, &grads, &mut intersections)
        };
        self.state_grads = grads;
        let mpm = mpm?;
        self.replayed_substeps = mpm.replayed_substeps;
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

    /// The MPM of an evaluation as one rollout through the last selected
    /// frame, every frame's renders and seeds, then one backward pass over
    /// all of them (either flow). With [`FitProblem::set_kept_forward`] on,
    /// the rollout keeps what the backward would otherwise recompute (its
    /// in-frame checkpoints, [`crate::forward::Chain::rollout_for_backward`]).
    #[allow(clippy::too_many_arguments)]
    fn rollout_then_backward(
        &mut self,
        ctx: &GpuContext,
        start: &ParticleState,
        selection: &Selection,
        flow: GradientFlow,
        terms: &LossTermsBuffer,
        grads: &[GpuBuffer],
        intersections: &mut u64,
    ) -> Result<MpmGradients, FitError> {
        let last = *selection.frames.last().unwrap() as u32;
        let rollout = if self.kept_forward {
            self.chain.rollout_for_backward(ctx, start, last)?
        } else {
            self.chain.rollout(ctx, start, last)?
        };
        // Between the forward rollout and the (longer) backward pass.
        self.check_stop()?;
        self.profiler.lap(ctx, TimedPart::MpmForward)?;
        let views = selection.views.len() as u32;
        for (f, &k) in selection.frames.iter().enumerate() {
            *intersections += self.frame_gradient(
                ctx,
                &rollout.frames[k],
                k,
                &selection.views,
                terms,
                f as u32 * views,
                &grads[f],
            )?;
        }
        let frame_grads: Vec<FrameGradient> = selection
            .frames
            .iter()
            .zip(grads)
            .map(|(&frame, grad)| FrameGradient { frame, grad })
            .collect();
        let mpm = self
            .chain
            .rollout_backward(ctx, &rollout, &frame_grads, flow)?;
        self.profiler.lap(ctx, TimedPart::MpmAdjoint)?;
        Ok(mpm)
    }

    /// The MPM of a truncated evaluation frame by frame (src/mpm/truncated_pass.rs):
    /// each selected frame simulated, rendered and seeded, then its adjoint
    /// at once from what its forward kept, without replaying the frame.
    /// The same loss and, up to the order of float atomics, the same
    /// gradient as [`FitProblem::rollout_then_backward`]; needs the selected
    /// frames to start at 1 or later.
    fn truncated_frames(
        &mut self,
        ctx: &GpuContext,
        start: &ParticleState,
        selection: &Selection,
        terms: &LossTermsBuffer,
        grads: &[GpuBuffer],
        intersections: &mut u64,
    ) -> Result<MpmGradients, FitError> {
        let (mut rollout, mut pass) = self.chain.truncated_start(ctx, start)?;
        let views = selection.views.len() as u32;
        for (f, &k) in selection.frames.iter().enumerate() {
            while rollout.frames.len() <= k {
                self.chain.truncated_forward(ctx, &mut rollout)?;
            }
            self.check_stop()?;
            self.profiler.lap(ctx, TimedPart::MpmForward)?;
            *intersections += self.frame_gradient(
                ctx,
                &rollout.frames[k],
                k,
                &selection.views,
                terms,
                f as u32 * views,
                &grads[f],
            )?;
            self.chain
                .truncated_backward(ctx, &mut pass, &mut rollout, k, &grads[f])?;
            self.profiler.lap(ctx, TimedPart::MpmAdjoint)?;
        }
        Ok(self.chain.truncated_finish(ctx, pass)?)
    }
}
