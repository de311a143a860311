//! A fit as planned: its stages in order, each with what it fits, against
//! which frames and views, and its settings (docs/design.md § Loss,
//! parameters, fit). Per round, stage 1 ([`StageKind::Velocity`]: v0 with
//! E frozen, frames 1..=N−1 of `fit.velocity.frames = N`, full flow), then
//! stage 2 ([`StageKind::Stiffness`]: log10 E with v0 frozen, all frames,
//! the full flow for a field of few parameters, the truncated one for a
//! per-driver field, [`StageKind::flow`]), after one coarse [`StageKind::Scan`] of E when the
//! stiffness is fitted.

use serde::{Deserialize, Serialize};

use super::evaluation::Selection;
use crate::mpm::GradientFlow;
use crate::scene::{FitStage, Scene};
use crate::solve::{GridScan, Schedule};

/// Which parameters a stage fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageKind {
    /// The coarse start: one uniform log10 E scanned over the range, each
    /// value with its own velocity ([`super::scan`]).
    Scan,
    /// Stage 1: the initial velocity, E frozen, full flow.
    Velocity,
    /// Stage 2: log10 E, v0 frozen ([`StageKind::flow`]).
    Stiffness,
}

impl StageKind {
    /// "scan", "velocity" or "stiffness".
    pub fn name(self) -> &'static str {
        match self {
            StageKind::Scan => "scan",
            StageKind::Velocity => "velocity",
            StageKind::Stiffness => "stiffness",
        }
    }

    /// The gradient flow of the stage (docs/design.md § Loss, parameters,
    /// fit), `lbfgs` when its parameters are few enough for L-BFGS
    /// ([`LBFGS_MAX_PARAMETERS`]). A stiffness stage of few parameters
    /// follows the exact gradient: L-BFGS's line search measures the loss,
    /// and a direction from the truncated gradient, which is the gradient
    /// of no loss, stops being one of descent near the optimum (the
    /// refused unit steps that cost the fox-scale fit two fifths of its
    /// stiffness stages, docs/benchmarks.md). A per-driver field keeps
    /// PhysDreamer's truncated flow, which Adam follows without a search.
    pub fn flow(self, lbfgs: bool) -> GradientFlow {
        match self {
            StageKind::Scan | StageKind::Velocity => GradientFlow::Full,
            StageKind::Stiffness if lbfgs => GradientFlow::Full,
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

    /// Adam's schedule of the stage (its `[fit.*]` settings).
    pub fn schedule(&self) -> Schedule {
        Schedule {
            learning_rate: self.settings.learning_rate,
            warmup: self.settings.warmup,
            decay: self.settings.decay,
            iterations: self.settings.iterations,
        }
    }
}

/// Fields with at most this many parameters are fitted by L-BFGS
/// ([`crate::solve::lbfgs`]: a global, rigid or per-region field converges in a
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

/// The plan's last stiffness stage: the stage whose frames, settings and
/// flow the error bars, the exact-gradient step and the discretisation
/// check's refits measure.
pub fn last_stiffness(plan: &[StagePlan]) -> Option<&StagePlan> {
    plan.iter().rev().find(|p| p.kind == StageKind::Stiffness)
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
                candidates: GridScan::evenly(
                    scene.material.log10_youngs_range,
                    scene.fit.scan.points,
                ),
                velocity_selection: Selection {
                    frames: fitted(&scene.fit.velocity),
                    views: views.to_vec(),
                },
                fit_velocity: choice == StageChoice::Both,
                velocity_evaluations: scene.fit.scan.velocity_evaluations,
                velocity_stage_cap: scene.fit.velocity.iterations,
                first_velocity_step: velocity_step(scene),
                poisson_candidates: poisson_candidates(scene),
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

/// What a scan does, as planned.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanPlan {
    /// The grid of `log10 E` values (normalised units).
    pub candidates: Vec<f64>,
    /// The frames and views each candidate's velocity is fitted on.
    pub velocity_selection: Selection,
    /// False when the velocity is held (a stiffness-only fit).
    pub fit_velocity: bool,
    /// L-BFGS evaluations per candidate's velocity.
    pub velocity_evaluations: u32,
    /// The velocity stage's cap (`fit.velocity.iterations`), which the
    /// first candidate's velocity fit, started cold, may take
    /// ([`super::scan::cold_velocity_evaluations`]).
    pub velocity_stage_cap: u32,
    /// The first L-BFGS step, world units/s (its scale: the velocity that
    /// moves the object by 2% of the simulation box per frame).
    pub first_velocity_step: f64,
    /// The values of Poisson's ratio scanned after E, at the best E and its
    /// velocity ([`poisson_candidates`]); empty when ν is not fitted.
    pub poisson_candidates: Vec<f64>,
}

impl ScanPlan {
    /// The most candidates the scan takes: each grid's, and one more by
    /// each grid's parabola.
    pub fn most_candidates(&self) -> usize {
        let with_parabola = |grid: &[f64]| match grid.len() {
            0 => 0,
            n => n + 1,
        };
        with_parabola(&self.candidates) + with_parabola(&self.poisson_candidates)
    }
}

/// The values of ν the scan tries after E when `[fit.stiffness]` fits ν:
/// the midpoints of `fit.scan.poisson_points` equal parts of
/// `poisson_range` (with the default 5 over `[0, 0.4]`: 0.04, 0.12, …,
/// 0.36), never its ends, where the map to ν's parameter is flat
/// ([`super::poisson`]). Why a scan: on a drop the loss along ν is
/// shallow, and the stiffness stage on the truncated gradient (which
/// leaves out how ν moves the object after the landing) took no step in ν
/// from a far start (docs/benchmarks.md, "Drop fits with ν from any
/// start"); the exact gradient the stage follows now for such a field has
/// not been measured from far without it.
pub fn poisson_candidates(scene: &Scene) -> Vec<f64> {
    let stiffness = &scene.fit.stiffness;
    let n = scene.fit.scan.poisson_points;
    if !stiffness.poisson.fitted() || n == 0 {
        return Vec::new();
    }
    let range = stiffness.poisson_range;
    (0..n)
        .map(|i| range.low + (range.high - range.low) * (f64::from(i) + 0.5) / f64::from(n))
        .collect()
}
