//! The loss of a fit problem without gradients (for line searches, the
//! scan, reports and finite differences), and the loss report every
//! evaluation sums from its terms buffer.

use super::{FitError, FitProblem, Parameters, Prepared, Selection, TimedPart, TvGradients};
use crate::fit::evaluation::{ImageTerms, LossReport};
use crate::gpu::{GpuBuffer, GpuContext};
use crate::loss::{tv_scalar, tv_vector, LossTerms, LossTermsBuffer, TV_EPSILON};
use crate::mpm::{ParticleState, Rollout};

impl FitProblem {
    /// Reads the terms buffer and sums the report.
    pub(super) fn report(
        &self,
        ctx: &GpuContext,
        selection: &Selection,
        terms: &LossTermsBuffer,
        prepared: &Prepared,
        intersections: u64,
    ) -> Result<(LossReport, TvGradients), FitError> {
        let slots: Vec<LossTerms> = ctx.read_buffer(terms.buffer())?;
        let mut images = Vec::new();
        let (mut image, mut l1, mut dssim) = (0.0, 0.0, 0.0);
        for (f, &frame) in selection.frames.iter().enumerate() {
            for (v, &view) in selection.views.iter().enumerate() {
                let t = slots[f * selection.views.len() + v];
                image += f64::from(t.loss);
                l1 += f64::from(t.l1);
                dssim += f64::from(t.dssim);
                images.push(ImageTerms {
                    frame,
                    view,
                    terms: t,
                });
            }
        }
        let tv = tv_scalar(&prepared.log10, &self.drivers.graph, TV_EPSILON)?;
        let v: Vec<[f64; 3]> = prepared
            .velocity
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        let velocity_tv = tv_vector(&v, &self.drivers.graph, TV_EPSILON)?;
        Ok((
            LossReport {
                loss: image
                    + self.tv_weight * tv.value
                    + self.velocity_tv_weight * velocity_tv.value,
                image,
                l1,
                dssim,
                tv: tv.value,
                velocity_tv: velocity_tv.value,
                images,
                intersections,
            },
            TvGradients {
                log10: tv.gradient,
                velocity: velocity_tv.gradient.into_iter().flatten().collect(),
            },
        ))
    }

    pub(super) fn terms_buffer(
        &self,
        ctx: &GpuContext,
        selection: &Selection,
    ) -> Result<LossTermsBuffer, FitError> {
        Ok(LossTermsBuffer::new(
            ctx,
            "fit loss terms",
            (selection.frames.len() * selection.views.len()) as u32,
        )?)
    }

    /// The loss of `params` on `selection` without gradients (one rollout
    /// from frame 0, renders, loss terms): for line searches, reports and
    /// finite differences.
    pub fn loss(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        selection: &Selection,
    ) -> Result<LossReport, FitError> {
        self.check_selection(selection)?;
        self.profiler.start();
        let (prepared, start) = self.prepare(ctx, params)?;
        self.loss_from(ctx, &prepared, &start, selection)
    }

    /// One rollout from `start` through the last selected frame, rendered
    /// and scored (shared by [`FitProblem::loss`] and
    /// [`FitProblem::loss_of_drivers`]).
    fn loss_from(
        &mut self,
        ctx: &GpuContext,
        prepared: &Prepared,
        start: &ParticleState,
        selection: &Selection,
    ) -> Result<LossReport, FitError> {
        let last = *selection.frames.last().unwrap();
        let rollout = self.chain.rollout(ctx, start, last as u32)?;
        let terms = self.terms_buffer(ctx, selection)?;
        self.profiler.lap(ctx, TimedPart::MpmForward)?;
        let states: Vec<&GpuBuffer> = selection
            .frames
            .iter()
            .map(|&k| &rollout.frames[k])
            .collect();
        self.report_frames(ctx, selection, &terms, prepared, &states)
    }

    /// [`FitProblem::loss`] of per-driver values rather than parameters:
    /// `log10_youngs` one per driver (normalised units), `velocity` three
    /// per driver (world units/s), `velocity_gradient` the initial affine
    /// velocity `C0`, nine per driver (row-major `∂v_a/∂x_b`, 1/s; `None`:
    /// `C0 = 0`; [`crate::synth::TruthValues::velocity_gradient`]). A twin
    /// experiment's truth is per-driver
    /// whatever the fit's fields, so its loss on the fit's own frames,
    /// views and weights is measured with this. When the fit fits ν, ν is
    /// `material.poisson_ratio` here (the ν `physfit synth` simulates a
    /// truth with unless the truth gives its own:
    /// [`FitProblem::loss_of_drivers_with_poisson`]).
    pub fn loss_of_drivers(
        &mut self,
        ctx: &GpuContext,
        log10_youngs: &[f64],
        velocity: &[f64],
        velocity_gradient: Option<&[f64]>,
        selection: &Selection,
    ) -> Result<LossReport, FitError> {
        let values = RolloutValues {
            log10_youngs,
            velocity,
            velocity_gradient,
            poisson: None,
        };
        self.loss_of_drivers_with_poisson(ctx, &values, selection)
    }

    /// [`FitProblem::loss_of_drivers`] with Poisson's ratio per driver
    /// when `values.poisson` gives it (a truth with its own ν): set for
    /// this and every later evaluation, as [`FitProblem::set_poisson`]
    /// does, until an evaluation of a fit of ν sets its own.
    pub fn loss_of_drivers_with_poisson(
        &mut self,
        ctx: &GpuContext,
        values: &RolloutValues<'_>,
        selection: &Selection,
    ) -> Result<LossReport, FitError> {
        self.check_selection(selection)?;
        if let Some(d) = values
            .log10_youngs
            .iter()
            .position(|&v| v > self.log10_max)
        {
            return Err(FitError::YoungsAboveRange {
                driver: d,
                value: values.log10_youngs[d],
                max: self.log10_max,
            });
        }
        self.profiler.start();
        match values.poisson {
            Some(nu) => self.set_poisson(ctx, nu)?,
            None if self.poisson_map.is_some() => {
                let nu = self.driver_poisson(&[])?;
                self.set_poisson(ctx, &nu)?;
            }
            None => {}
        }
        let (prepared, start) = self.prepare_drivers(
            ctx,
            values.log10_youngs.to_vec(),
            values.velocity.to_vec(),
            values.velocity_gradient,
        )?;
        self.loss_from(ctx, &prepared, &start, selection)
    }

    /// The loss report of `selection` whose frame `selection.frames[f]` is
    /// the MPM state `states[f]`: renders and losses only, no gradients
    /// (shared by [`FitProblem::loss`] and [`FitProblem::truncated_loss`]).
    fn report_frames(
        &mut self,
        ctx: &GpuContext,
        selection: &Selection,
        terms: &LossTermsBuffer,
        prepared: &Prepared,
        states: &[&GpuBuffer],
    ) -> Result<LossReport, FitError> {
        let views = selection.views.len() as u32;
        let mut intersections = 0;
        for (f, (&k, state)) in selection.frames.iter().zip(states).enumerate() {
            intersections +=
                self.frame_loss(ctx, state, k, &selection.views, terms, f as u32 * views)?;
        }
        let report = self
            .report(ctx, selection, terms, prepared, intersections)?
            .0;
        self.profiler.lap(ctx, TimedPart::Loss)?;
        Ok(report)
    }

    /// The stage-2 objective whose gradient [`GradientFlow::Truncated`]
    /// gives: each selected frame k ≥ 2 simulated one frame from
    /// `frozen.frames[k − 1]` (held constant) with the E of `params`; frame
    /// 1 from the initial state of `params`. `frozen` comes from
    /// [`FitProblem::forward_states`]; at its own parameters this equals
    /// [`FitProblem::loss`]. For finite-difference checks of stage 2.
    pub fn truncated_loss(
        &mut self,
        ctx: &GpuContext,
        params: &Parameters,
        selection: &Selection,
        frozen: &Rollout,
    ) -> Result<LossReport, FitError> {
        self.check_selection(selection)?;
        self.profiler.start();
        let (prepared, start) = self.prepare(ctx, params)?;
        let terms = self.terms_buffer(ctx, selection)?;
        // One one-frame rollout per selected frame, from its frozen start
        // (frame 1 from the initial state; frame 0 is the initial state).
        let mut rollouts = Vec::with_capacity(selection.frames.len());
        for &k in &selection.frames {
            rollouts.push(if k <= 1 {
                self.chain.rollout(ctx, &start, u32::from(k > 0))?
            } else {
                let Some(held) = frozen.frames.get(k - 1) else {
                    return Err(FitError::FrameOutOfRange {
                        frame: k,
                        view: selection.views[0],
                        name: "frozen forward states".into(),
                        available: frozen.frames.len(),
                    });
                };
                self.chain.rollout_held(ctx, held, 1)?
            });
        }
        self.profiler.lap(ctx, TimedPart::MpmForward)?;
        let states: Vec<&GpuBuffer> = rollouts
            .iter()
            .map(|r| r.frames.last().expect("a rollout holds its start"))
            .collect();
        self.report_frames(ctx, selection, &terms, &prepared, &states)
    }
}

/// Per-driver values of a rollout ([`FitProblem::loss_of_drivers_with_poisson`]).
#[derive(Clone, Copy, Debug)]
pub struct RolloutValues<'a> {
    /// `log10 E`, one per driver (normalised units).
    pub log10_youngs: &'a [f64],
    /// `v0`, three per driver (world units/s).
    pub velocity: &'a [f64],
    /// `C0`, nine per driver (`None`: 0).
    pub velocity_gradient: Option<&'a [f64]>,
    /// ν, one per driver (`None`: as [`FitProblem::loss_of_drivers`]).
    pub poisson: Option<&'a [f64]>,
}
