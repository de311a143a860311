//! The two-stage fit as a loop of Adam steps around
//! [`FitProblem::evaluate`] (docs/design.md § Loss, parameters, fit).
//!
//! A fit is a [`StagePlan`] list run in order: per round, stage 1
//! ([`StageKind::Velocity`]: v0 with E frozen, frames 1..=N−1 of
//! `fit.velocity.frames = N`, full flow),
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
use super::evaluation::{LossReport, Parameters, Selection};
use super::lbfgs::{minimise_observed, LbfgsSettings, LbfgsStart, LbfgsState};
use super::problem::FitProblem;
use super::scan::{run_scan, ScanPlan, ScanState};
use crate::gpu::GpuContext;
use crate::mpm::{GradientFlow, MpmError};
use crate::scene::{FitStage, Scene};
pub use crate::stop::StopSignal;

/// Halvings of the rate a step may need before the fit gives up.
pub const MAX_REJECTIONS: u32 = 8;

/// Iterations over which a stage's progress is judged.
pub const CONVERGENCE_WINDOW: usize = 5;

/// Further rounds stop when a round's final stiffness loss is less than
/// this fraction below the previous round's.
pub const ROUND_TOLERANCE: f64 = 2e-2;

/// True when the losses `history` (oldest first) have flattened: they fell
/// by at most `tolerance` of the loss over [`CONVERGENCE_WINDOW`]
/// iterations. Never with a tolerance of 0.
pub fn flattened(history: &[f64], tolerance: f64) -> bool {
    if history.len() <= CONVERGENCE_WINDOW || tolerance <= 0.0 {
        return false;
    }
    let now = history[history.len() - 1];
    let then = history[history.len() - 1 - CONVERGENCE_WINDOW];
    (then - now) <= tolerance * then.abs()
}

/// Which parameters a stage fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageKind {
    /// The coarse start: one uniform log10 E scanned over the range, each
    /// value with its own velocity ([`super::scan`]).
    Scan,
    /// Stage 1: the initial velocity, E frozen, full flow.
    Velocity,
    /// Stage 2: log10 E, v0 frozen, truncated flow.
    Stiffness,
}

impl StageKind {
    /// "velocity" or "stiffness".
    pub fn name(self) -> &'static str {
        match self {
            StageKind::Scan => "scan",
            StageKind::Velocity => "velocity",
            StageKind::Stiffness => "stiffness",
        }
    }

    /// The gradient flow of the stage (docs/design.md § Loss, parameters, fit).
    pub fn flow(self) -> GradientFlow {
        match self {
            StageKind::Scan | StageKind::Velocity => GradientFlow::Full,
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
    /// A scan's grid and velocity fits ([`StageKind::Scan`] only).
    pub scan: Option<ScanPlan>,
    /// The first L-BFGS step of a low-dimensional stage (parameter units:
    /// world units/s for a velocity, decades for log10 E).
    pub first_step: f64,
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

/// Fields with at most this many parameters are fitted by L-BFGS
/// ([`super::lbfgs`]: a global, rigid or per-region field converges in a
/// handful of evaluations, with no learning rate whose reach caps the
/// result); larger ones (per-driver fields) by Adam.
pub const LBFGS_MAX_PARAMETERS: usize = 16;

/// The first L-BFGS step of a stiffness stage, decades of E.
pub const STIFFNESS_FIRST_STEP: f64 = 0.25;

/// The first L-BFGS step of a velocity: what moves the object by 2% of the
/// simulation box per frame (world units/s).
fn velocity_step(scene: &Scene) -> f64 {
    0.02 * scene.simulation.sim_box.side * scene.fps
}

/// The stages of a fit of `scene` with `frames` reference frames per view
/// (a frame count, the rest frame 0 included) in `views`: `rounds` rounds
/// of `choice`; each stage fits [`FitStage::fitted_frames`].
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
    let fitted = |stage: &FitStage| stage.fitted_frames(frames).collect::<Vec<_>>();
    if choice != StageChoice::Velocity && scene.fit.scan.points >= 2 {
        let settings = scene.fit.stiffness.clone();
        plan.push(StagePlan {
            round: 1,
            kind: StageKind::Scan,
            selection: Selection {
                frames: fitted(&settings),
                views: views.to_vec(),
            },
            scan: Some(ScanPlan {
                candidates: ScanPlan::grid(
                    scene.material.log10_youngs_range,
                    scene.fit.scan.points,
                ),
                velocity_selection: Selection {
                    frames: fitted(&scene.fit.velocity),
                    views: views.to_vec(),
                },
                fit_velocity: choice == StageChoice::Both,
                velocity_evaluations: scene.fit.scan.velocity_evaluations,
                first_velocity_step: velocity_step(scene),
            }),
            settings,
            first_step: STIFFNESS_FIRST_STEP,
        });
    }
    for round in 1..=rounds.max(1) {
        for &kind in kinds {
            let mut settings = match kind {
                StageKind::Scan | StageKind::Velocity => scene.fit.velocity.clone(),
                StageKind::Stiffness => scene.fit.stiffness.clone(),
            };
            // Later rounds refine: they start at the rate the first ended
            // at, since a full-rate restart from a converged point throws
            // it off again (docs/benchmarks.md, "Measured figures behind
            // test and fit constants").
            if round > 1 {
                settings.learning_rate *= settings.decay;
            }
            let frames = fitted(&settings);
            plan.push(StagePlan {
                round,
                kind,
                settings,
                selection: Selection {
                    frames,
                    views: views.to_vec(),
                },
                scan: None,
                first_step: match kind {
                    StageKind::Velocity => velocity_step(scene),
                    _ => STIFFNESS_FIRST_STEP,
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
    /// Adam's `√v̂` at the end of the last finished stiffness stage, per
    /// `log10 E` parameter: the root mean square of the recent gradients of
    /// the loss w.r.t. that parameter (`youngs_gradient_rms` in
    /// `fitted.ply`). Large where the video constrains E, near 0 where it
    /// says nothing about it; a scale, not a probability or an error bar.
    pub youngs_gradient_rms: Option<Vec<f64>>,
    /// Every iteration so far.
    pub records: Vec<IterationRecord>,
    /// The scan's candidates so far, when the plan starts with one.
    #[serde(default)]
    pub scan: Option<ScanState>,
    /// Per finished stage, in plan order: whether it converged before its
    /// iteration cap (a scan always does; stages skipped because the rounds
    /// converged count as converged).
    #[serde(default)]
    pub converged: Vec<bool>,
    /// The final loss of each finished stage, in plan order.
    #[serde(default)]
    pub stage_losses: Vec<f64>,
    /// The running L-BFGS stage's solver, after its last accepted step:
    /// a resumed fit continues the same run (curvature pairs, evaluations
    /// used, convergence count) instead of restarting it.
    #[serde(default)]
    pub lbfgs: Option<LbfgsCheckpoint>,
}

/// What a checkpoint keeps of a running L-BFGS stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbfgsCheckpoint {
    /// The solver's state (scaled coordinates).
    pub solver: LbfgsState,
    /// Per parameter, the sum of squared gradients at the accepted steps
    /// so far (for `youngs_gradient_rms`).
    pub squares: Vec<f64>,
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
            youngs_gradient_rms: None,
            records: Vec::new(),
            scan: None,
            converged: Vec::new(),
            stage_losses: Vec::new(),
            lbfgs: None,
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
            StageKind::Scan | StageKind::Stiffness => self.log10_youngs.as_slice(),
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
        StageKind::Scan | StageKind::Stiffness => grads.youngs,
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
    match run_stages(ctx, problem, plan, state, bounds, observer) {
        // A stop asked during an evaluation: `state` holds the last
        // complete iteration (every loop below updates it only once an
        // iteration is whole).
        Err(FitError::Stopped) => Ok(FitEnd::Stopped),
        other => other,
    }
}

fn run_stages(
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
        if stage.kind == StageKind::Scan {
            let mut step = |s: &FitState| observer.iteration_done(stage, s) == Control::Continue;
            let Some(report) = run_scan(ctx, problem, stage, state, &mut step)? else {
                return Ok(FitEnd::Stopped);
            };
            state.stage += 1;
            state.iteration = 0;
            state.adam = Adam::new(state.stage_params(plan).map_or(0, <[f64]>::len));
            state.converged.push(true);
            state.stage_losses.push(report.loss);
            observer.stage_finished(stage, state, &report);
            last_report = Some(report);
            continue;
        }
        let stage_len = match stage.kind {
            StageKind::Velocity => state.velocity.len(),
            _ => state.log10_youngs.len(),
        };
        if stage_len <= LBFGS_MAX_PARAMETERS {
            let Some((report, converged)) =
                run_lbfgs_stage(ctx, problem, stage, state, bounds, observer)?
            else {
                return Ok(FitEnd::Stopped);
            };
            finish_stage(plan, stage, state, converged, &report);
            observer.stage_finished(stage, state, &report);
            last_report = Some(report);
            continue;
        }
        let mut converged = false;
        let mut params = state.parameters();
        let mut point =
            evaluate(ctx, problem, stage, &params)?.ok_or_else(|| FitError::StartBlewUp {
                stage: stage.label(),
            })?;
        let schedule = stage.schedule();
        let bounds = match stage.kind {
            StageKind::Velocity => None,
            StageKind::Scan | StageKind::Stiffness => Some((bounds[0], bounds[1])),
        };
        while state.iteration < stage.settings.iterations {
            let mut grad = point.grad.clone();
            let grad_norm = clip_norm(&mut grad, stage.settings.grad_clip);
            let current = match stage.kind {
                StageKind::Velocity => &params.velocity,
                StageKind::Scan | StageKind::Stiffness => &params.log10_youngs,
            };
            let mut rate = schedule.rate(state.iteration);
            let mut rejected = 0;
            let (proposal, next) = loop {
                let proposal = state.adam.propose(current, &grad, rate, bounds);
                let mut moved = params.clone();
                match stage.kind {
                    StageKind::Velocity => moved.velocity.clone_from(&proposal.params),
                    StageKind::Scan | StageKind::Stiffness => {
                        moved.log10_youngs.clone_from(&proposal.params)
                    }
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
            state.records.push(IterationRecord {
                learning_rate: rate,
                rejected,
                ..record(stage, state.iteration, &point.report, grad_norm)
            });
            let accepted = state.adam.accept(proposal);
            match stage.kind {
                StageKind::Velocity => params.velocity = accepted,
                StageKind::Scan | StageKind::Stiffness => params.log10_youngs = accepted,
            }
            state.log10_youngs.clone_from(&params.log10_youngs);
            state.velocity.clone_from(&params.velocity);
            state.iteration += 1;
            point = next;
            let history: Vec<f64> = state
                .records
                .iter()
                .filter(|r| r.round == stage.round && r.stage == stage.kind)
                .map(|r| r.loss)
                .chain([point.report.loss])
                .collect();
            // Judged once the warm-up is over: its small rates move the
            // loss little whatever remains to gain.
            converged = state.iteration >= stage.settings.warmup + CONVERGENCE_WINDOW as u32
                && flattened(&history, stage.settings.tolerance);
            if observer.iteration_done(stage, state) == Control::Stop {
                return Ok(FitEnd::Stopped);
            }
            if converged {
                break;
            }
        }
        if stage.kind == StageKind::Stiffness {
            state.youngs_gradient_rms = Some(state.adam.gradient_scale());
        }
        finish_stage(plan, stage, state, converged, &point.report);
        observer.stage_finished(stage, state, &point.report);
        last_report = Some(point.report);
    }
    Ok(FitEnd::Finished(last_report))
}

/// Ends `stage` in `state`: the next stage's Adam, the stage's outcome and,
/// when a round gained too little over the previous one, the rounds left
/// skipped (they count as converged).
fn finish_stage(
    plan: &[StagePlan],
    stage: &StagePlan,
    state: &mut FitState,
    converged: bool,
    report: &LossReport,
) {
    state.stage += 1;
    state.iteration = 0;
    state.lbfgs = None;
    state.adam = Adam::new(state.stage_params(plan).map_or(0, <[f64]>::len));
    state.converged.push(converged);
    state.stage_losses.push(report.loss);
    if stage.kind == StageKind::Stiffness && stage.round > 1 {
        let previous = plan[..state.stage - 1]
            .iter()
            .zip(&state.stage_losses)
            .rev()
            .find(|(p, _)| p.kind == StageKind::Stiffness && p.round == stage.round - 1)
            .map(|(_, &l)| l);
        if previous.is_some_and(|p| p - report.loss <= ROUND_TOLERANCE * p.abs()) {
            while state.stage < plan.len() {
                state.stage += 1;
                state.converged.push(true);
                state.stage_losses.push(report.loss);
            }
        }
    }
}

/// The record of one point of a stage.
fn record(
    stage: &StagePlan,
    iteration: u32,
    report: &LossReport,
    grad_norm: f64,
) -> IterationRecord {
    let (psnr, ssim) = mean_quality(report);
    IterationRecord {
        round: stage.round,
        stage: stage.kind,
        iteration,
        loss: report.loss,
        image: report.image,
        l1: report.l1,
        dssim: report.dssim,
        tv: report.tv,
        velocity_tv: report.velocity_tv,
        psnr,
        ssim,
        grad_norm,
        learning_rate: 0.0,
        rejected: 0,
    }
}

/// An evaluated point of an L-BFGS stage: where, its report, its gradient.
type Seen = (Vec<f64>, LossReport, Vec<f64>);

/// A low-dimensional stage by L-BFGS ([`LBFGS_MAX_PARAMETERS`]): one record
/// and one observer call per accepted step, the stage's `iterations` a cap
/// on evaluations (line-search trials included). The parameters are
/// scaled by their group's first step (world units/s for a velocity,
/// decades for log10 E), so that the unit first step moves it by its
/// group's scale. A resumed stage restarts L-BFGS's memory at
/// the checkpointed point. Returns the final report and whether it
/// converged; `None` when the observer stopped it.
fn run_lbfgs_stage(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    state: &mut FitState,
    range: [f64; 2],
    observer: &mut dyn FitObserver,
) -> Result<Option<(LossReport, bool)>, FitError> {
    use std::cell::RefCell;
    let base = state.parameters();
    let nv = base.velocity.len();
    // Which groups the stage fits, in x's order: velocity, then log10 E.
    let (fit_v, fit_e) = match stage.kind {
        StageKind::Velocity => (true, false),
        StageKind::Scan | StageKind::Stiffness => (false, true),
    };
    let mut x0 = Vec::new();
    let mut scale = Vec::new();
    let mut bounds = Vec::new();
    if fit_v {
        x0.extend(&base.velocity);
        scale.extend(std::iter::repeat_n(stage.first_step, nv));
        bounds.extend(std::iter::repeat_n((f64::NEG_INFINITY, f64::INFINITY), nv));
    }
    if fit_e {
        x0.extend(&base.log10_youngs);
        scale.extend(std::iter::repeat_n(
            STIFFNESS_FIRST_STEP,
            base.log10_youngs.len(),
        ));
        bounds.extend(std::iter::repeat_n(
            (range[0], range[1]),
            base.log10_youngs.len(),
        ));
    }
    let split = |x: &[f64]| -> Parameters {
        let mut p = base.clone();
        let mut rest = x;
        if fit_v {
            p.velocity = rest[..nv].to_vec();
            rest = &rest[nv..];
        }
        if fit_e {
            p.log10_youngs = rest.to_vec();
        }
        p
    };
    let to_z = |x: &[f64]| -> Vec<f64> { x.iter().zip(&scale).map(|(x, s)| x / s).collect() };
    let to_x = |z: &[f64]| -> Vec<f64> { z.iter().zip(&scale).map(|(z, s)| z * s).collect() };
    let z_bounds = bounds
        .iter()
        .zip(&scale)
        .map(|(&(lo, hi), s)| (lo / s, hi / s))
        .collect();
    // Every evaluated point's report and gradient (in x), for the records.
    let seen: RefCell<Vec<Seen>> = RefCell::new(Vec::new());
    let settings = LbfgsSettings {
        max_evaluations: stage.settings.iterations.max(2),
        first_step: 1.0,
        relative_tolerance: stage.settings.tolerance / 2.0,
        bounds: z_bounds,
        ..LbfgsSettings::default()
    };
    // A checkpoint taken inside this stage continues its solver.
    let resumed = state
        .lbfgs
        .take()
        .filter(|c| state.iteration > 0 && c.squares.len() == x0.len());
    let mut squares = resumed
        .as_ref()
        .map_or_else(|| vec![0.0; x0.len()], |c| c.squares.clone());
    let mut stopped = false;
    let mut first_recorded = resumed.is_some();
    let z0 = to_z(&x0);
    let start = match resumed {
        Some(c) => LbfgsStart::Resume(c.solver),
        None => LbfgsStart::At(&z0),
    };
    let result = {
        let result = minimise_observed(
            start,
            &settings,
            |z| {
                let x = to_x(z);
                let Some(point) = evaluate(ctx, problem, stage, &split(&x))? else {
                    return Ok(None);
                };
                let gz: Vec<f64> = point.grad.iter().zip(&scale).map(|(g, s)| g * s).collect();
                let loss = point.report.loss;
                seen.borrow_mut()
                    .push((z.to_vec(), point.report, point.grad));
                Ok::<_, FitError>(Some((loss, gz)))
            },
            |run| {
                let z = run.x.as_slice();
                let seen = seen.borrow();
                let mut push = |z: &[f64], state: &mut FitState| {
                    let Some((_, report, grad)) = seen.iter().rev().find(|(p, _, _)| p == z) else {
                        return;
                    };
                    let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
                    for (s, g) in squares.iter_mut().zip(grad) {
                        *s += g * g;
                    }
                    state
                        .records
                        .push(record(stage, state.iteration, report, norm));
                    state.iteration += 1;
                };
                if !first_recorded {
                    push(&z0, state);
                    first_recorded = true;
                }
                push(z, state);
                let p = split(&to_x(z));
                state.velocity = p.velocity;
                state.log10_youngs = p.log10_youngs;
                state.lbfgs = Some(LbfgsCheckpoint {
                    solver: run.clone(),
                    squares: squares.clone(),
                });
                let go_on = observer.iteration_done(stage, state) == Control::Continue;
                stopped = !go_on;
                go_on
            },
        )?;
        let Some(result) = result else {
            return Err(FitError::StartBlewUp {
                stage: stage.label(),
            });
        };
        result
    };
    if stopped {
        return Ok(None);
    }
    if !first_recorded {
        // No step was taken: the start's record stands for the stage.
        if let Some((_, report, grad)) = seen.borrow().first() {
            let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
            state
                .records
                .push(record(stage, state.iteration, report, norm));
            state.iteration += 1;
        }
    }
    let p = split(&to_x(&result.x));
    state.velocity = p.velocity;
    state.log10_youngs = p.log10_youngs;
    let seen = seen.into_inner();
    let report = match seen.iter().rev().find(|(z, _, _)| *z == result.x) {
        Some((_, r, _)) => r.clone(),
        None => problem.loss(ctx, &state.parameters(), &stage.selection)?,
    };
    if fit_e {
        let n = state
            .records
            .iter()
            .filter(|r| r.round == stage.round && r.stage == stage.kind)
            .count()
            .max(1) as f64;
        let e_part = &squares[if fit_v { nv } else { 0 }..];
        state.youngs_gradient_rms = Some(e_part.iter().map(|s| (s / n).sqrt()).collect());
    }
    Ok(Some((report, result.converged)))
}
