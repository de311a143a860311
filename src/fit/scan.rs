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
//! fitted by L-BFGS ([`super::lbfgs`], a few evaluations on the velocity
//! stage's frames, full flow, warm-started from the previous candidate's;
//! the first, started cold, gets twice the evaluations)
//! unless it is held from an earlier fit; then the loss of the stiffness
//! stage's frames (all of them by default) is measured at `(c, v)`. After
//! the grid, a parabola through the best candidate and its neighbours
//! gives one more candidate between them. The best of all becomes the
//! start of the stages that follow. A candidate whose simulation blows up
//! scores an infinite loss.
//!
//! Each candidate is one iteration of the stage (one `loss.jsonl` record,
//! one checkpoint), with its result kept in [`ScanState`], so a resumed
//! fit continues at the next candidate.

use serde::{Deserialize, Serialize};

use super::error::FitError;
use super::evaluation::{LossReport, Parameters, Selection};
use super::fitter::{mean_quality, FitState, IterationRecord, StageKind, StagePlan};
use super::lbfgs::{minimise, LbfgsSettings};
use super::problem::FitProblem;
use crate::gpu::GpuContext;
use crate::mpm::{GradientFlow, MpmError};

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
    /// The first L-BFGS step, world units/s (its scale: the velocity that
    /// moves the object by 2% of the simulation box per frame).
    pub first_velocity_step: f64,
}

impl ScanPlan {
    /// `points` candidates evenly spaced in log10 over `range`.
    pub fn grid(range: [f64; 2], points: u32) -> Vec<f64> {
        let n = points.max(2);
        (0..n)
            .map(|i| range[0] + (range[1] - range[0]) * f64::from(i) / f64::from(n - 1))
            .collect()
    }
}

/// One scanned value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScanPoint {
    /// The uniform `log10 E` (normalised units).
    pub log10_youngs: f64,
    /// Its velocity parameters.
    pub velocity: Vec<f64>,
    /// The loss on the stiffness stage's frames (∞ when it blew up).
    pub loss: f64,
}

/// The scan so far (in the fit's state, so a checkpoint holds it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScanState {
    /// Every candidate scanned, in order (the refinement last).
    pub points: Vec<ScanPoint>,
}

impl ScanState {
    /// The best point so far.
    pub fn best(&self) -> Option<&ScanPoint> {
        self.points
            .iter()
            .filter(|p| p.loss.is_finite())
            .min_by(|a, b| a.loss.total_cmp(&b.loss))
    }
}

fn is_blow_up(error: &FitError) -> bool {
    matches!(
        error,
        FitError::Mpm(MpmError::NonFinite { .. } | MpmError::LeftBox { .. })
    )
}

/// The vertex of the parabola through three points of a scan, clamped to
/// their span; `None` when they are not convex.
pub fn parabola_vertex(p: [(f64, f64); 3]) -> Option<f64> {
    let [(x0, y0), (x1, y1), (x2, y2)] = p;
    let d = (x0 - x1) * (x0 - x2) * (x1 - x2);
    if d == 0.0 {
        return None;
    }
    let a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / d;
    let b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / d;
    if a.is_nan() || a <= 0.0 || !a.is_finite() || !b.is_finite() {
        return None;
    }
    let lo = x0.min(x1).min(x2);
    let hi = x0.max(x1).max(x2);
    Some((-b / (2.0 * a)).clamp(lo, hi))
}

/// The next candidate of the scan: the grid's next value, then the
/// parabola's refinement, then `None` (done).
fn next_candidate(plan: &ScanPlan, scan: &ScanState) -> Option<f64> {
    let done = scan.points.len();
    if done < plan.candidates.len() {
        return Some(plan.candidates[done]);
    }
    if done > plan.candidates.len() {
        return None;
    }
    let grid = &scan.points[..plan.candidates.len()];
    let (b, _) = grid
        .iter()
        .enumerate()
        .filter(|(_, p)| p.loss.is_finite())
        .min_by(|a, b| a.1.loss.total_cmp(&b.1.loss))?;
    if b == 0
        || b + 1 >= grid.len()
        || !grid[b - 1].loss.is_finite()
        || !grid[b + 1].loss.is_finite()
    {
        return None;
    }
    let at = |i: usize| (grid[i].log10_youngs, grid[i].loss);
    parabola_vertex([at(b - 1), at(b), at(b + 1)])
        .filter(|&c| (c - grid[b].log10_youngs).abs() > 1e-3)
}

/// One candidate: its velocity (fitted or held) and its loss.
fn scan_candidate(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    plan: &ScanPlan,
    log10: f64,
    start_velocity: &[f64],
    evaluations: u32,
) -> Result<(ScanPoint, Option<LossReport>), FitError> {
    let log10_youngs = vec![log10; problem.youngs_map().params];
    let velocity = if plan.fit_velocity {
        let settings = LbfgsSettings {
            max_evaluations: evaluations,
            first_step: plan.first_velocity_step,
            ..LbfgsSettings::default()
        };
        let found = minimise(start_velocity, &settings, |v| {
            let params = Parameters {
                log10_youngs: log10_youngs.clone(),
                velocity: v.to_vec(),
            };
            let eval = match problem.evaluate(
                ctx,
                &params,
                &plan.velocity_selection,
                GradientFlow::Full,
            ) {
                Ok(e) => e,
                Err(e) if is_blow_up(&e) => return Ok(None),
                Err(e) => return Err(e),
            };
            let grads = eval.read(ctx)?;
            let g: Vec<f64> = grads.velocity.iter().map(|&g| f64::from(g)).collect();
            if !eval.report.loss.is_finite() || g.iter().any(|g| !g.is_finite()) {
                return Ok(None);
            }
            Ok(Some((eval.report.loss, g)))
        })?;
        match found {
            Some(r) => r.x,
            None => start_velocity.to_vec(),
        }
    } else {
        start_velocity.to_vec()
    };
    let params = Parameters {
        log10_youngs,
        velocity: velocity.clone(),
    };
    let report = match problem.loss(ctx, &params, &stage.selection) {
        Ok(r) if r.loss.is_finite() => Some(r),
        Ok(_) => None,
        Err(e) if is_blow_up(&e) => None,
        Err(e) => return Err(e),
    };
    let loss = report.as_ref().map_or(f64::INFINITY, |r| r.loss);
    Ok((
        ScanPoint {
            log10_youngs: log10,
            velocity,
            loss,
        },
        report,
    ))
}

/// Runs the scan from `state` (module doc): one candidate per call of
/// `step` (which records it and may stop the fit, returning `false`).
/// Returns the best point's loss report on the stage's frames, or `None`
/// when stopped.
pub fn run_scan(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    stage: &StagePlan,
    state: &mut FitState,
    step: &mut dyn FnMut(&FitState) -> bool,
) -> Result<Option<LossReport>, FitError> {
    let plan = stage.scan.as_ref().expect("a scan stage has its plan");
    let mut best_report: Option<(f64, LossReport)> = None;
    let start_velocity = state.velocity.clone();
    loop {
        let scan = state.scan.get_or_insert_with(ScanState::default);
        let Some(c) = next_candidate(plan, scan) else {
            break;
        };
        let warm = scan
            .points
            .last()
            .filter(|p| p.loss.is_finite())
            .map_or_else(|| start_velocity.clone(), |p| p.velocity.clone());
        let warm = if plan.fit_velocity {
            warm
        } else {
            start_velocity.clone()
        };
        // The first value starts its velocity cold: twice the evaluations.
        let cold = scan.points.iter().all(|p| !p.loss.is_finite());
        let evaluations = plan.velocity_evaluations * if cold { 2 } else { 1 };
        let (point, report) = scan_candidate(ctx, problem, stage, plan, c, &warm, evaluations)?;
        let (psnr, ssim) = report.as_ref().map_or((0.0, 0.0), mean_quality);
        let r = report.as_ref();
        state.records.push(IterationRecord {
            round: stage.round,
            stage: StageKind::Scan,
            iteration: state.iteration,
            loss: point.loss,
            image: r.map_or(f64::INFINITY, |r| r.image),
            l1: r.map_or(f64::INFINITY, |r| r.l1),
            dssim: r.map_or(f64::INFINITY, |r| r.dssim),
            tv: r.map_or(0.0, |r| r.tv),
            velocity_tv: r.map_or(0.0, |r| r.velocity_tv),
            psnr,
            ssim,
            grad_norm: 0.0,
            learning_rate: 0.0,
            rejected: u32::from(report.is_none()),
        });
        if let Some(report) = report {
            if best_report.as_ref().is_none_or(|(l, _)| report.loss < *l) {
                best_report = Some((report.loss, report));
            }
        }
        state
            .scan
            .get_or_insert_with(ScanState::default)
            .points
            .push(point);
        state.iteration += 1;
        if !step(state) {
            return Ok(None);
        }
    }
    let scan = state.scan.as_ref().expect("scanned");
    let Some(best) = scan.best().cloned() else {
        return Err(FitError::StartBlewUp {
            stage: stage.label(),
        });
    };
    state.log10_youngs = vec![best.log10_youngs; state.log10_youngs.len()];
    state.velocity = best.velocity.clone();
    // The best candidate's report: measured now when it was scanned before a
    // resume (its report was not kept).
    let report = match best_report {
        Some((l, r)) if l == best.loss => r,
        _ => problem.loss(ctx, &state.parameters(), &stage.selection)?,
    };
    Ok(Some(report))
}
