//! The two-stage fit as a loop of Adam steps around
//! [`FitProblem::evaluate`] (DESIGN.md § Loss, parameters, fit).
//!
//! A fit is a [`StagePlan`] list run in order: per round, stage 1
//! ([`StageKind::Velocity`]: v0 with E frozen, frames 1..=n, full flow),
//! then stage 2 ([`StageKind::Stiffness`]: log10 E with v0 frozen, all
//! frames, truncated flow). Everything that changes while it runs is in one
//! [`FitState`] (parameters, Adam's moments, where the fit is, the loss
//! history), so a checkpoint is that state and a resumed fit continues as an
//! uninterrupted one: it re-evaluates the checkpointed parameters, which an
//! uninterrupted run evaluated too.
//!
//! One iteration at parameters `p` with gradient `g` (from evaluating `p`):
//! clip `g`, propose `p'` by Adam at the schedule's rate (projected into
//! `material.log10_youngs_range` for E), evaluate `p'`. A rollout that
//! blows up (non-finite, or out of the box) or a non-finite loss or gradient
//! rejects the step: the proposal is made again from the same state at half
//! the rate, at most [`MAX_REJECTIONS`] times. Parameters never become NaN.
//! The record of iteration i is the loss at `p` (before its step).

use serde::{Deserialize, Serialize};

use super::adam::{clip_norm, Adam, Schedule};
use super::error::FitError;
use super::problem::{FitProblem, LossReport, Parameters, Selection};
use crate::gpu::GpuContext;
use crate::mpm::{GradientFlow, MpmError};
use crate::scene::{FitStage, Scene};

/// Halvings of the rate a step may need before the fit gives up.
pub const MAX_REJECTIONS: u32 = 8;

/// Which parameters a stage fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageKind {
    /// Stage 1: the initial velocity, E frozen, full flow.
    Velocity,
    /// Stage 2: log10 E, v0 frozen, truncated flow.
    Stiffness,
}

impl StageKind {
    /// "velocity" or "stiffness".
    pub fn name(self) -> &'static str {
        match self {
            StageKind::Velocity => "velocity",
            StageKind::Stiffness => "stiffness",
        }
    }

    /// The gradient flow of the stage (DESIGN.md § Loss, parameters, fit).
    pub fn flow(self) -> GradientFlow {
        match self {
            StageKind::Velocity => GradientFlow::Full,
            StageKind::Stiffness => GradientFlow::Truncated,
        }
    }
}

/// Which stages `physfit fit --stage` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageChoice {
    /// Stage 1 only.
    Velocity,
    /// Stage 2 only (the velocity comes from an earlier fit).
    Stiffness,
    /// Both, `fit.rounds` times.
    Both,
}

/// One stage of a fit, as planned.
#[derive(Clone, Debug, PartialEq)]
pub struct StagePlan {
    /// Round, 1-based.
    pub round: u32,
    /// The stage.
    pub kind: StageKind,
    /// Its settings (`[fit.velocity]` or `[fit.stiffness]`).
    pub settings: FitStage,
    /// The frames and views it fits against.
    pub selection: Selection,
}

impl StagePlan {
    /// "round 1 velocity", for messages.
    pub fn label(&self) -> String {
        format!("round {} {}", self.round, self.kind.name())
    }

    fn schedule(&self) -> Schedule {
        Schedule {
            learning_rate: self.settings.learning_rate,
            warmup: self.settings.warmup,
            decay: self.settings.decay,
            iterations: self.settings.iterations,
        }
    }
}

/// The stages of a fit of `scene` with reference frames `frames` (frame
/// count, frame 0 the rest state) in `views`: `rounds` rounds of `choice`.
/// Rounds after the first run each stage at `learning_rate · decay` (the
/// rate its first round ended at).
pub fn plan_stages(
    scene: &Scene,
    views: &[usize],
    frames: usize,
    rounds: u32,
    choice: StageChoice,
) -> Vec<StagePlan> {
    let kinds: &[StageKind] = match choice {
        StageChoice::Velocity => &[StageKind::Velocity],
        StageChoice::Stiffness => &[StageKind::Stiffness],
        StageChoice::Both => &[StageKind::Velocity, StageKind::Stiffness],
    };
    let mut plan = Vec::new();
    for round in 1..=rounds.max(1) {
        for &kind in kinds {
            let mut settings = match kind {
                StageKind::Velocity => scene.fit.velocity.clone(),
                StageKind::Stiffness => scene.fit.stiffness.clone(),
            };
            // Later rounds refine: they start at the rate the first ended
            // at, since a full-rate restart from a converged point throws
            // it off again (docs/benchmarks.md, "Measured figures behind
            // test and fit constants").
            if round > 1 {
                settings.learning_rate *= settings.decay;
            }
            let last = settings
                .frames
                .map_or(frames.saturating_sub(1), |n| n as usize);
            plan.push(StagePlan {
                round,
                kind,
                settings,
                selection: Selection {
                    frames: (1..=last).collect(),
                    views: views.to_vec(),
                },
            });
        }
    }
    plan
}

/// One iteration's line of `loss.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    /// Round, 1-based.
    pub round: u32,
    /// Stage.
    pub stage: StageKind,
    /// Iteration within the stage, 0-based.
    pub iteration: u32,
    /// The loss at the iteration's parameters (before its step).
    pub loss: f64,
    /// Its weighted image part.
    pub image: f64,
    /// Σ mean |I − Î| (unweighted).
    pub l1: f64,
    /// Σ (1 − SSIM) (unweighted).
    pub dssim: f64,
    /// TV of log10 E (unweighted).
    pub tv: f64,
    /// TV of v0 (unweighted).
    pub velocity_tv: f64,
    /// Mean PSNR over the stage's frames and views, dB.
    pub psnr: f64,
    /// Mean SSIM over them.
    pub ssim: f64,
    /// Norm of the stage's gradient before clipping.
    pub grad_norm: f64,
    /// The rate the step was taken at (after any halvings).
    pub learning_rate: f64,
    /// Steps rejected (halvings) before one was taken.
    pub rejected: u32,
}

/// Mean PSNR and SSIM over a report's frames and views.
pub fn mean_quality(report: &LossReport) -> (f64, f64) {
    let n = report.images.len().max(1) as f64;
    let psnr = report.images.iter().map(|t| t.terms.psnr()).sum::<f64>() / n;
    let ssim = report.images.iter().map(|t| t.terms.ssim()).sum::<f64>() / n;
    (psnr, ssim)
}

/// Everything that changes while a fit runs (a checkpoint's content).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitState {
    /// Index of the running stage in the plan (the plan's length when done).
    pub stage: usize,
    /// Steps completed in that stage.
    pub iteration: u32,
    /// `log10 E` parameters (normalised units).
    pub log10_youngs: Vec<f64>,
    /// Velocity parameters (world units/s; rad/s for rigid angular parts).
    pub velocity: Vec<f64>,
    /// Adam's state of the running stage.
    pub adam: Adam,
    /// `√v̂` of the last finished stiffness stage, per `log10 E` parameter
    /// (the confidence written to `fitted.ply`).
    pub confidence: Option<Vec<f64>>,
    /// Every iteration so far.
    pub records: Vec<IterationRecord>,
}

impl FitState {
    /// The start of a fit at `params`.
    pub fn start(params: Parameters, plan: &[StagePlan]) -> Self {
        let mut state = FitState {
            stage: 0,
            iteration: 0,
            log10_youngs: params.log10_youngs,
            velocity: params.velocity,
            adam: Adam::new(0),
            confidence: None,
            records: Vec::new(),
        };
        state.adam = Adam::new(state.stage_params(plan).map_or(0, <[f64]>::len));
        state
    }

    /// The parameters.
    pub fn parameters(&self) -> Parameters {
        Parameters {
            log10_youngs: self.log10_youngs.clone(),
            velocity: self.velocity.clone(),
        }
    }

    /// True when every stage has run.
    pub fn done(&self, plan: &[StagePlan]) -> bool {
        self.stage >= plan.len()
    }

    fn stage_params(&self, plan: &[StagePlan]) -> Option<&[f64]> {
        plan.get(self.stage).map(|p| match p.kind {
            StageKind::Velocity => self.velocity.as_slice(),
            StageKind::Stiffness => self.log10_youngs.as_slice(),
        })
    }
}

/// What a [`FitObserver`] tells the loop after an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Continue,
    /// Stop after this iteration (Ctrl-C): the state is consistent.
    Stop,
}

/// Progress, checkpoints and interruption, outside the library loop.
pub trait FitObserver {
    /// A stage starts (or resumes at `state.iteration`).
    fn stage_started(&mut self, plan: &StagePlan, state: &FitState);
    /// An iteration was taken; its record is `state.records.last()`.
    fn iteration_done(&mut self, plan: &StagePlan, state: &FitState) -> Control;
    /// A stage ended with the loss of its final parameters; `state` is
    /// already at the start of the next stage (a checkpoint written here
    /// resumes there).
    fn stage_finished(&mut self, plan: &StagePlan, state: &FitState, final_loss: &LossReport);
}

/// How [`run_fit`] ended.
#[derive(Clone, Debug, PartialEq)]
pub enum FitEnd {
    /// Every stage ran; the loss of the final parameters on the last stage.
    Finished(Option<LossReport>),
    /// The observer stopped it.
    Stopped,
}

fn is_blow_up(error: &FitError) -> bool {
    matches!(
        error,
        FitError::Mpm(MpmError::NonFinite { .. } | MpmError::LeftBox { .. })
    )
}

/// A loss and the stage's gradient at some parameters.
struct Point {
    report: LossReport,
    grad: Vec<f64>,
}

/// Evaluates `params` for `plan`: `Ok(None)` when the simulation blows up
/// or anything comes out non-finite.
fn evaluate(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    plan: &StagePlan,
    params: &Parameters,
) -> Result<Option<Point>, FitError> {
    let eval = match problem.evaluate(ctx, params, &plan.selection, plan.kind.flow()) {
        Ok(eval) => eval,
        Err(e) if is_blow_up(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let grads = eval.read(ctx)?;
    let grad: Vec<f64> = match plan.kind {
        StageKind::Velocity => grads.velocity,
        StageKind::Stiffness => grads.youngs,
    }
    .into_iter()
    .map(f64::from)
    .collect();
    if !eval.report.loss.is_finite() || grad.iter().any(|g| !g.is_finite()) {
        return Ok(None);
    }
    Ok(Some(Point {
        report: eval.report,
        grad,
    }))
}

/// Runs the fit from `state` through the end of `plan` (module doc),
/// telling `observer` as it goes. `bounds` is `material.log10_youngs_range`.
pub fn run_fit(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    plan: &[StagePlan],
    state: &mut FitState,
    bounds: [f64; 2],
    observer: &mut dyn FitObserver,
) -> Result<FitEnd, FitError> {
    let mut last_report = None;
    while let Some(stage) = plan.get(state.stage) {
        problem.set_stage(&stage.settings)?;
        observer.stage_started(stage, state);
        let mut params = state.parameters();
        let mut point =
            evaluate(ctx, problem, stage, &params)?.ok_or_else(|| FitError::StartBlewUp {
                stage: stage.label(),
            })?;
        let schedule = stage.schedule();
        let bounds = match stage.kind {
            StageKind::Velocity => None,
            StageKind::Stiffness => Some((bounds[0], bounds[1])),
        };
        while state.iteration < stage.settings.iterations {
            let mut grad = point.grad.clone();
            let grad_norm = clip_norm(&mut grad, stage.settings.grad_clip);
            let current = match stage.kind {
                StageKind::Velocity => &params.velocity,
                StageKind::Stiffness => &params.log10_youngs,
            };
            let mut rate = schedule.rate(state.iteration);
            let mut rejected = 0;
            let (proposal, next) = loop {
                let proposal = state.adam.propose(current, &grad, rate, bounds);
                let mut moved = params.clone();
                match stage.kind {
                    StageKind::Velocity => moved.velocity.clone_from(&proposal.params),
                    StageKind::Stiffness => moved.log10_youngs.clone_from(&proposal.params),
                }
                if let Some(next) = evaluate(ctx, problem, stage, &moved)? {
                    break (proposal, next);
                }
                rejected += 1;
                if rejected > MAX_REJECTIONS {
                    return Err(FitError::StepRejected {
                        stage: stage.label(),
                        iteration: state.iteration,
                        halvings: MAX_REJECTIONS,
                    });
                }
                log::warn!(
                    "{} iteration {}: the step blew the simulation up; retrying at half the rate ({:.3e})",
                    stage.label(),
                    state.iteration,
                    rate / 2.0
                );
                rate /= 2.0;
            };
            let (psnr, ssim) = mean_quality(&point.report);
            let r = &point.report;
            state.records.push(IterationRecord {
                round: stage.round,
                stage: stage.kind,
                iteration: state.iteration,
                loss: r.loss,
                image: r.image,
                l1: r.l1,
                dssim: r.dssim,
                tv: r.tv,
                velocity_tv: r.velocity_tv,
                psnr,
                ssim,
                grad_norm,
                learning_rate: rate,
                rejected,
            });
            let accepted = state.adam.accept(proposal);
            match stage.kind {
                StageKind::Velocity => params.velocity = accepted,
                StageKind::Stiffness => params.log10_youngs = accepted,
            }
            state.log10_youngs.clone_from(&params.log10_youngs);
            state.velocity.clone_from(&params.velocity);
            state.iteration += 1;
            point = next;
            if observer.iteration_done(stage, state) == Control::Stop {
                return Ok(FitEnd::Stopped);
            }
        }
        if stage.kind == StageKind::Stiffness {
            state.confidence = Some(state.adam.gradient_scale());
        }
        state.stage += 1;
        state.iteration = 0;
        state.adam = Adam::new(state.stage_params(plan).map_or(0, <[f64]>::len));
        observer.stage_finished(stage, state, &point.report);
        last_report = Some(point.report);
    }
    Ok(FitEnd::Finished(last_report))
}
