//! Renders of a fit problem's parameters outside an iteration: the
//! forward states, frames read back for synthetic references, reports and
//! the pictures beside the video.

use super::{FitError, FitProblem, Parameters};
use crate::gpu::{GpuBuffer, GpuContext};
use crate::mpm::Rollout;
use crate::io::Frame;

impl FitProblem {
    /// Runs the forward simulation of `params` through frame `last`: the
    /// frame states a stage-2 objective holds constant (see
    /// [`FitProblem::truncated_loss`]).
    pub fn forward_states(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        last: usize,
    ) -> Result<Rollout, FitError> {
        let (_, start) = self.prepare(ctx, params)?;
        Ok(self.chain.rollout(ctx, &start, last as u32)?)
    }

    /// Renders frames `0..=last` of `params` in view `view` and reads them
    /// back (RGBA in [0, 1]): for synthetic reference frames (the twin
    /// experiment, docs/design.md § Verification 5) and reports. Not part of a
    /// fit iteration, which reads back no image.
    pub fn render_frames(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        view: usize,
        last: usize,
    ) -> Result<Vec<Frame>, FitError> {
        self.check_view(view)?;
        let rollout = self.forward_states(ctx, params, last)?;
        rollout
            .frames
            .iter()
            .map(|state| self.render_state(ctx, state, view))
            .collect()
    }

    /// Renders the drivers in `state` (a frame of a [`Rollout`] of this
    /// problem, e.g. from [`FitProblem::forward_states`]) in view `view`
    /// and reads the image back (RGBA in [0, 1], alpha the coverage): one
    /// rollout rendered in every view, as `physfit synth` does, instead of
    /// one rollout per view ([`FitProblem::render_frames`]).
    pub fn render_state(
        &mut self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        view: usize,
    ) -> Result<Frame, FitError> {
        self.check_view(view)?;
        self.chain.pose(ctx, state)?;
        Ok(self.chain.render(ctx, &self.cameras[view])?)
    }

    /// [`FitProblem::render_state`] as the loss compares it with view
    /// `view`'s frames: with the view's colour correction applied
    /// ([`ColorCorrection::apply_to_frame`]; the render itself for the
    /// identity). For the pictures beside the video (the camera check,
    /// `compare/`); `synth` renders with [`FitProblem::render_state`].
    pub fn render_state_corrected(
        &mut self,
        ctx: &GpuContext,
        state: &GpuBuffer,
        view: usize,
    ) -> Result<Frame, FitError> {
        let frame = self.render_state(ctx, state, view)?;
        Ok(self.corrections[view].apply_to_frame(frame))
    }

    /// Fails unless the scene has view `view`.
    fn check_view(&self, view: usize) -> Result<(), FitError> {
        if view >= self.cameras.len() {
            return Err(FitError::NoSuchView {
                view,
                views: self.cameras.len(),
            });
        }
        Ok(())
    }
}
