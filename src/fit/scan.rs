//! The coarse stage that makes a fit independent of its start
//! (docs/design.md § Loss, parameters, fit): one uniform `log10 E` scanned over
//! the whole of `material.log10_youngs_range`, each value with its own
//! best velocity, before the configured fields refine from the best.
//!
//! Why: the velocity stage fits v0 with E held, and a wrong E gives a
//! wrong velocity (too soft an object explains its early frames with too
//! slow a push), which the stiffness stage then cannot undo. Scanning E
//! with the velocity refitted at every value removes that dependence on
//! `material.youngs_modulus`: the scan's result depends only on the range.
//!
//! Per candidate `c` (evenly spaced in log10 over the range, both ends
//! included): every `log10 E` parameter is set to `c`; the velocity is
//! fitted by L-BFGS ([`crate::solve::lbfgs`], a few evaluations on the velocity
//! stage's frames, full flow, warm-started from the previous candidate's;
//! the first, started cold, gets the velocity stage's cap, at least twice
//! theirs)
//! unless it is held from an earlier fit; then the loss of the stiffness
//! stage's frames (all of them by default) is measured at `(c, v)`. After
//! the grid, a parabola through the best candidate and its neighbours
//! gives one more candidate between them. When ν is fitted, a second
//! scan follows over Poisson's ratio ([`super::plan::poisson_candidates`]:
//! by default 5 values inside `poisson_range`, and a parabola's), each a
//! uniform ν at E's best value and its velocity, held: one loss per
//! candidate. The best of all becomes the start of the stages that
//! follow. A candidate whose simulation blows up scores an infinite loss.
//!
//! The grid and its refinement are [`GridScan`]'s; a candidate is a point
//! of [`CandidateObjective`]. Each candidate is one iteration of the stage
//! (one `loss.jsonl` record, one checkpoint), with its result kept in
//! [`ScanState`], so a resumed fit continues at the next candidate.

use super::error::FitError;
use super::evaluation::{LossReport, Parameters};
use super::objective::{blown_up, Remember, StageObjective, Unknowns};
use super::observer::{Control, EvaluationDone, EvaluationHook, EvaluationPurpose};
use super::plan::{ScanPlan, StageKind, StagePlan};
use super::problem::FitProblem;
use super::record::{mean_quality, IterationRecord};
use super::scan_state::{ScanPoint, ScanState};
use super::state::FitState;
use super::summary::Solver;
use super::summary_build::solver_for;
use crate::gpu::GpuContext;
use crate::mpm::GradientFlow;
use crate::solve::lbfgs::CurvaturePair;
use crate::solve::{
    execute, Control as SolverControl, Ending, Evaluated, GridScan, GridScanState, Lbfgs,
    LbfgsSettings, LbfgsStart, Objective,
};

/// The scan's objective: a uniform `log10 E` (a one-element `x`) to the
/// loss on the stiffness stage's frames at its best velocity, or in the
/// scan of ν a uniform ν to the loss at E's best point ([`Along`]; module
/// doc); no gradient. Keeps every candidate's point and the last one's
/// report.
pub struct CandidateObjective<'a> {
    ctx: &'a GpuContext,
    problem: &'a mut FitProblem,
    stage: &'a StagePlan,
    plan: &'a ScanPlan,
    /// The velocity a candidate starts from when there is no earlier one
    /// to warm-start from (and the one held when it is not fitted).
    start_velocity: Vec<f64>,
    /// The candidates so far, in order.
    points: Vec<ScanPoint>,
    /// The last candidate's report on the stage's frames (none when it
    /// blew up).
    report: Option<LossReport>,
    /// Told of each evaluation as it ends.
    hook: EvaluationHook<'a>,
    /// Which scan the candidates belong to.
    along: Along,
}

/// What a candidate's one unknown is.
#[derive(Clone, Debug)]
enum Along {
    /// A uniform log10 E, each value with its own velocity.
    Youngs,
    /// A uniform ν at E's best point (its log10 E and velocity held).
    Poisson(ScanPoint),
}

impl CandidateObjective<'_> {
    /// The velocity of candidate `log10`, the evaluations its fit took and
    /// the curvature pairs it ended with: fitted by L-BFGS from `start`, or
    /// `start` itself when the scan holds it (no evaluation) or its fit
    /// starts from an unusable point (no pairs either way).
    fn velocity(
        &mut self,
        log10: f64,
        start: &[f64],
        evaluations: u32,
    ) -> Result<FittedVelocity, FitError> {
        if !self.plan.fit_velocity {
            return Ok((start.to_vec(), 0, Vec::new()));
        }
        let mut solver = Lbfgs {
            settings: LbfgsSettings {
                max_evaluations: evaluations,
                first_step: self.plan.first_velocity_step,
                // Only the fitted velocity is kept, never its gradient: the
                // last accepted point's is not paid for.
                eager_gradient: false,
                ..LbfgsSettings::default()
            },
        };
        let base = Parameters {
            log10_youngs: vec![log10; self.problem.youngs_map().params],
            velocity: start.to_vec(),
            poisson: Vec::new(),
        };
        let mut objective = StageObjective::new(
            self.ctx,
            self.problem,
            &self.plan.velocity_selection,
            GradientFlow::Full,
            base,
            Unknowns::Velocity,
            Remember::Last,
        )
        .reporting(self.hook, EvaluationPurpose::ScanVelocity);
        let Some(mut run) = solver.start(&mut objective, LbfgsStart::At(start))? else {
            // An unusable start is one evaluation.
            return Ok((start.to_vec(), 1, Vec::new()));
        };
        execute(&mut solver, &mut objective, &mut run, |_, _| {
            SolverControl::Continue
        })?;
        log::debug!(
            "scan candidate log10 E {log10:.4}: velocity in {} evaluations, {} forwards, {} backwards, {} gradients never used",
            run.evaluations,
            run.evaluations + run.reevaluations,
            run.gradients,
            run.unused_gradients
        );
        Ok((run.x, run.evaluations, run.pairs))
    }
}

/// A candidate's velocity, the evaluations its fit took and the curvature
/// pairs it ended with ([`CandidateObjective::velocity`]).
type FittedVelocity = (Vec<f64>, u32, Vec<CurvaturePair>);

/// The curvature round 1's velocity stage starts from after the scan
/// chose `best`: that stage refits `best`'s velocity on the same frames at
/// the same uniform E, so it continues from the curvature `best`'s fit
/// ended with, as a later round continues from the round before, instead
/// of spending its first evaluations finding the step's scale. `scale` is
/// the stage's coordinate scale, the scan's first velocity step (one
/// value: tests/cpu/scene.rs). `None` without pairs (a held velocity).
fn velocity_stage_curvature(best: &ScanPoint, scale: f64) -> Option<Vec<CurvaturePair>> {
    (!best.velocity_curvature.is_empty())
        .then(|| in_stage_coordinates(&best.velocity_curvature, scale))
}

/// `pairs` of the scan's velocity coordinates (velocity units) in those of
/// the velocity stage's L-BFGS, `x = z · scale` per coordinate
/// ([`super::stages_lbfgs::lbfgs_coordinates`]): a step shrinks by the
/// scale, a gradient change grows by it, and `sᵀy` is unchanged.
fn in_stage_coordinates(pairs: &[CurvaturePair], scale: f64) -> Vec<CurvaturePair> {
    pairs
        .iter()
        .map(|p| CurvaturePair {
            s: p.s.iter().map(|s| s / scale).collect(),
            y: p.y.iter().map(|y| y * scale).collect(),
            rho: p.rho,
        })
        .collect()
}

impl CandidateObjective<'_> {
    /// Candidate `log10` of E's scan: its velocity (fitted unless held)
    /// and its point's parameters, ν at its start.
    fn youngs_candidate(&mut self, log10: f64) -> Result<(ScanPoint, Parameters), FitError> {
        // A candidate starts where the previous one's fit ended, with the
        // curvature known there (its own fit often ends without a pair:
        // its last accepted point's gradient is never computed).
        let (warm, known_curvature) = match self.points.last().filter(|p| p.loss.is_finite()) {
            Some(p) if self.plan.fit_velocity => (p.velocity.clone(), p.velocity_curvature.clone()),
            _ => (self.start_velocity.clone(), Vec::new()),
        };
        // The first value starts its velocity cold.
        let cold = self.points.iter().all(|p| !p.loss.is_finite());
        let evaluations = match cold {
            true => cold_velocity_evaluations(
                self.plan.velocity_evaluations,
                self.plan.velocity_stage_cap,
                warm.len(),
            ),
            false => self.plan.velocity_evaluations,
        };
        let (velocity, velocity_evaluations, own_curvature) =
            self.velocity(log10, &warm, evaluations)?;
        let velocity_curvature = match own_curvature.is_empty() {
            true => known_curvature,
            false => own_curvature,
        };
        let params = Parameters {
            log10_youngs: vec![log10; self.problem.youngs_map().params],
            velocity: velocity.clone(),
            poisson: Vec::new(),
        };
        let point = ScanPoint {
            log10_youngs: log10,
            poisson: None,
            velocity,
            loss: f64::INFINITY,
            evaluations: velocity_evaluations + 1,
            velocity_curvature,
        };
        Ok((point, params))
    }

    /// Candidate `nu` of ν's scan, at E's best point `at` (its log10 E and
    /// velocity held): one evaluation.
    fn poisson_candidate(&self, nu: f64, at: &ScanPoint) -> (ScanPoint, Parameters) {
        let params = Parameters {
            log10_youngs: vec![at.log10_youngs; self.problem.youngs_map().params],
            velocity: at.velocity.clone(),
            poisson: vec![
                self.problem.poisson_range().z_of(nu);
                self.problem.poisson_map().map_or(0, |m| m.params)
            ],
        };
        let point = ScanPoint {
            log10_youngs: at.log10_youngs,
            poisson: Some(nu),
            velocity: at.velocity.clone(),
            loss: f64::INFINITY,
            evaluations: 1,
            velocity_curvature: at.velocity_curvature.clone(),
        };
        (point, params)
    }
}

impl Objective for CandidateObjective<'_> {
    type Error = FitError;

    fn evaluate(&mut self, x: &[f64]) -> Result<Evaluated, FitError> {
        let (mut point, params) = match self.along.clone() {
            Along::Youngs => self.youngs_candidate(x[0])?,
            Along::Poisson(at) => self.poisson_candidate(x[0], &at),
        };
        let measured = self.problem.loss(self.ctx, &params, &self.stage.selection);
        self.report = blown_up(measured)?.filter(|r| r.loss.is_finite());
        point.loss = self.report.as_ref().map_or(f64::INFINITY, |r| r.loss);
        (self.hook)(&EvaluationDone {
            loss: point.loss.is_finite().then_some(point.loss),
            with_gradient: false,
            counted: true,
            purpose: EvaluationPurpose::Stage,
        });
        self.points.push(point);
        Ok(self.report.as_ref().map(|r| (r.loss, Vec::new())))
    }
}

/// The evaluations of the scan's first velocity fit, the one started cold
/// (from the fit's starting velocity, usually rest), for a velocity of
/// `parameters` unknowns: when its stage is L-BFGS's ([`solver_for`]: few
/// parameters), that stage's cap `stage_cap` (L-BFGS evaluations there
/// too), and at least twice a warm candidate's `warm`. Every later
/// candidate starts from the one before, so this fit is the scan's
/// velocity: one that has not converged leaves every candidate's loss
/// measuring the velocity's error rather than E's (on a dropped, spinning
/// object eight evaluations from rest left a 75% velocity error and the
/// scan chose the bottom of the E range: docs/benchmarks.md, "The scan's
/// first velocity"). A fit that converges sooner stops sooner. A velocity
/// fitted by Adam keeps twice `warm`: its stage's cap counts Adam steps,
/// and L-BFGS over that many unknowns would not converge within it anyway.
pub fn cold_velocity_evaluations(warm: u32, stage_cap: u32, parameters: usize) -> u32 {
    match solver_for(parameters) {
        Solver::Lbfgs => (2 * warm).max(stage_cap),
        _ => 2 * warm,
    }
}

/// The record of a scanned candidate: its report's terms, or an infinite
/// loss (one rejection) when it blew up.
fn candidate_record(
    stage: &StagePlan,
    iteration: u32,
    point: &ScanPoint,
    report: Option<&LossReport>,
) -> IterationRecord {
    let (psnr, ssim) = report.map_or((0.0, 0.0), mean_quality);
    IterationRecord {
        round: stage.round,
        stage: StageKind::Scan,
        iteration,
        loss: point.loss,
        image: report.map_or(f64::INFINITY, |r| r.image),
        l1: report.map_or(f64::INFINITY, |r| r.l1),
        dssim: report.map_or(f64::INFINITY, |r| r.dssim),
        tv: report.map_or(0.0, |r| r.tv),
        velocity_tv: report.map_or(0.0, |r| r.velocity_tv),
        psnr,
        ssim,
        grad_norm: 0.0,
        learning_rate: 0.0,
        rejected: u32::from(report.is_none()),
    }
}

/// Runs the scan from `state` (module doc): one candidate per call of
/// `step` (which records it and may stop the fit), `hook` told of every
/// evaluation (velocity fits included) as it ends. Returns the best
/// point's loss report on the stage's frames, or `None` when stopped.
pub fn run_scan(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    state: &mut FitState,
    hook: EvaluationHook<'_>,
    step: &mut dyn FnMut(&FitState) -> Control,
) -> Result<Option<LossReport>, FitError> {
    let plan = stage.scan.as_ref().expect("a scan stage has its plan");
    let scanned = state.scan.get_or_insert_with(ScanState::default).clone();
    let mut objective = CandidateObjective {
        ctx,
        problem,
        stage,
        plan,
        start_velocity: state.velocity.clone(),
        points: scanned.youngs_points().cloned().collect(),
        report: None,
        hook,
        along: Along::Youngs,
    };
    let mut best_report: Option<LossReport> = None;
    // E's scan, then ν's at E's best point when ν is fitted; a resumed
    // scan skips the candidates its checkpoint holds.
    for phase in 0..2 {
        let (candidates, done): (Vec<f64>, Vec<(f64, f64)>) = match phase {
            0 => (
                plan.candidates.clone(),
                scanned
                    .youngs_points()
                    .map(|p| (p.log10_youngs, p.loss))
                    .collect(),
            ),
            _ => {
                if plan.poisson_candidates.is_empty() {
                    break;
                }
                let scan = state.scan.as_ref().expect("scanned");
                let Some(at) = scan.best_youngs().cloned() else {
                    break;
                };
                objective.along = Along::Poisson(at);
                objective.points = scan.poisson_points().cloned().collect();
                (
                    plan.poisson_candidates.clone(),
                    scan.poisson_points()
                        .map(|p| (p.poisson.unwrap_or(f64::NAN), p.loss))
                        .collect(),
                )
            }
        };
        let mut grid = GridScanState { points: done };
        let mut solver = GridScan { candidates };
        let ending = execute(&mut solver, &mut objective, &mut grid, |objective, _| {
            let point = objective
                .points
                .last()
                .expect("a candidate was scanned")
                .clone();
            let report = objective.report.as_ref();
            state
                .records
                .push(candidate_record(stage, state.iteration, &point, report));
            if let Some(report) = report {
                if best_report.as_ref().is_none_or(|b| report.loss < b.loss) {
                    best_report = Some(report.clone());
                }
            }
            state
                .scan
                .get_or_insert_with(ScanState::default)
                .points
                .push(point);
            state.iteration += 1;
            step(state)
        })?;
        if ending == Ending::Stopped {
            return Ok(None);
        }
    }
    drop(objective);
    let scan = state.scan.as_ref().expect("scanned");
    let Some(best) = scan.best().cloned() else {
        return Err(FitError::StartBlewUp {
            stage: stage.label(),
        });
    };
    state.log10_youngs = vec![best.log10_youngs; state.log10_youngs.len()];
    state.velocity = best.velocity.clone();
    if let Some(pairs) = velocity_stage_curvature(&best, plan.first_velocity_step) {
        state.keep_curvature(StageKind::Velocity, pairs);
    }
    if let Some(nu) = best.poisson {
        state.poisson = vec![problem.poisson_range().z_of(nu); state.poisson.len()];
    }
    // The best candidate's report: measured now when it was scanned before a
    // resume (its report was not kept).
    let report = match best_report {
        Some(r) if r.loss == best.loss => r,
        _ => problem.loss(ctx, &state.parameters(), &stage.selection)?,
    };
    Ok(Some(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs carried into the stage's scaled coordinates describe the same
    /// curvature: `sᵀy` (and so `rho`) is unchanged, and the quadratic model's
    /// step for a gradient maps back to the same velocity step.
    #[test]
    fn scan_pairs_carry_the_same_curvature_into_the_stage_coordinates() {
        let pair = CurvaturePair {
            s: vec![0.02, -0.01, 0.005],
            y: vec![0.3, -0.2, 0.1],
            rho: 1.0 / (0.02 * 0.3 + 0.01 * 0.2 + 0.005 * 0.1),
        };
        let scale = 0.5;
        let carried = in_stage_coordinates(std::slice::from_ref(&pair), scale);
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        assert!((dot(&carried[0].s, &carried[0].y) - dot(&pair.s, &pair.y)).abs() < 1e-15);
        assert_eq!(carried[0].rho, pair.rho);
        // x = z · scale: the stage's step z maps back to the scan's step.
        for (z, x) in carried[0].s.iter().zip(&pair.s) {
            assert!((z * scale - x).abs() < 1e-15);
        }
        // ∂L/∂z = ∂L/∂x · scale: a gradient change grows by the scale.
        for (gz, gx) in carried[0].y.iter().zip(&pair.y) {
            assert!((gz / scale - gx).abs() < 1e-15);
        }
    }

    /// The scan's best point hands its pairs, carried into the stage's
    /// coordinates, to round 1's velocity stage; a point without pairs (a
    /// held velocity) hands none, and the stage starts cold.
    #[test]
    fn the_best_candidates_curvature_starts_the_velocity_stage() {
        let pair = CurvaturePair {
            s: vec![0.2, 0.1],
            y: vec![1.0, 3.0],
            rho: 1.0 / 0.5,
        };
        let mut best = ScanPoint {
            log10_youngs: 4.5,
            poisson: None,
            velocity: vec![0.0, 0.6],
            loss: 0.1,
            evaluations: 5,
            velocity_curvature: vec![pair.clone()],
        };
        let scale = 0.25;
        assert_eq!(
            velocity_stage_curvature(&best, scale),
            Some(in_stage_coordinates(&[pair], scale))
        );
        best.velocity_curvature.clear();
        assert_eq!(velocity_stage_curvature(&best, scale), None);
    }
}
