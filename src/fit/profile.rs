//! Timing the parts of [`super::FitProblem`] calls for `physfit bench fit`:
//! each part of a call is waited for on its own and its wall time added to
//! a [`FitTimings`], so the parts' times include one submit/wait round trip
//! each and their sum exceeds an unprofiled call's time. The rasterizer's
//! own stages (project, sorts, blend, their backward) are split out the
//! same way ([`crate::splat::Rasterizer::profile`]), inside the render
//! parts.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use super::error::FitError;
use crate::gpu::GpuContext;

/// Wall seconds of the parts of [`super::FitProblem`] calls made while profiling
/// ([`super::FitProblem::set_profile`]), summed over the calls since the last
/// [`super::FitProblem::take_timings`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FitTimings {
    /// Setting E and the initial state, and the rollout.
    pub mpm_forward_s: f64,
    /// The MPM backward and the map of its gradients to the parameters
    /// (with the TV gradient).
    pub mpm_adjoint_s: f64,
    /// Moving the splats to the drivers and back-propagating through that
    /// (clearing the frame's state gradient included).
    pub deformation_s: f64,
    /// The rasterizer's forward (with its intersection-count readback).
    pub render_forward_s: f64,
    /// The rasterizer's backward.
    pub render_backward_s: f64,
    /// The image loss and its gradient per render, the terms' readback and
    /// the host TV.
    pub loss_s: f64,
    /// Seconds per rasterizer stage (its [`crate::splat::StageTiming`]
    /// names), forward and backward: a split of `render_forward_s` and
    /// `render_backward_s`, not added to [`FitTimings::total_s`].
    pub render_stages_s: BTreeMap<&'static str, f64>,
}

impl FitTimings {
    /// The sum of the parts.
    pub fn total_s(&self) -> f64 {
        self.mpm_forward_s
            + self.mpm_adjoint_s
            + self.deformation_s
            + self.render_forward_s
            + self.render_backward_s
            + self.loss_s
    }
}

/// A part of a call that [`FitTimings`] times (not a fit's stage: a
/// part of one evaluation).
#[derive(Clone, Copy)]
pub(super) enum TimedPart {
    MpmForward,
    MpmAdjoint,
    Deformation,
    RenderForward,
    RenderBackward,
    Loss,
}

/// Times parts when on: [`Profiler::lap`] waits for the GPU and charges
/// the time since the previous lap to a part.
pub(super) struct Profiler {
    pub(super) on: bool,
    since: Instant,
    pub(super) timings: FitTimings,
}

impl Profiler {
    /// Starts a call's first part.
    pub(super) fn start(&mut self) {
        self.since = Instant::now();
    }

    /// When on: waits for submitted work and adds the time since the last
    /// lap (or [`Profiler::start`]) to `part`.
    pub(super) fn lap(&mut self, ctx: &GpuContext, part: TimedPart) -> Result<(), FitError> {
        if !self.on {
            return Ok(());
        }
        ctx.wait()?;
        let now = Instant::now();
        let dt = (now - self.since).as_secs_f64();
        self.since = now;
        let t = &mut self.timings;
        *match part {
            TimedPart::MpmForward => &mut t.mpm_forward_s,
            TimedPart::MpmAdjoint => &mut t.mpm_adjoint_s,
            TimedPart::Deformation => &mut t.deformation_s,
            TimedPart::RenderForward => &mut t.render_forward_s,
            TimedPart::RenderBackward => &mut t.render_backward_s,
            TimedPart::Loss => &mut t.loss_s,
        } += dt;
        Ok(())
    }

    /// When on: adds the rasterizer's stage times of one render or
    /// backward.
    pub(super) fn add_stages(&mut self, stages: &[crate::splat::StageTiming]) {
        if !self.on {
            return;
        }
        for s in stages {
            *self.timings.render_stages_s.entry(s.stage).or_default() += s.ms / 1e3;
        }
    }
}

impl Profiler {
    /// Off, with nothing timed.
    pub(super) fn off() -> Self {
        Self {
            on: false,
            since: Instant::now(),
            timings: FitTimings::default(),
        }
    }
}
