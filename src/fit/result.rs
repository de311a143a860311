//! A fit's result in memory: what [`super::FitSession::run`] returns, so
//! that a caller (the command line, a binding, a batch runner) reads E and
//! v0 without going through files. The outputs ([`super::outputs`]) write
//! the same values (`fit.json`'s stages and parameters come from the
//! functions here), and nothing here writes (docs/design.md § Loss,
//! parameters, fit).
//!
//! E is given in both units `fit.json` uses: the simulator's normalised
//! units (the box mapped to [0,1]³, as scene.toml's material values) and
//! world units (E_normalised · box_side², [`youngs_world`]).

use super::params::ParamMap;
use super::plan::StagePlan;
use super::record::IterationRecord;
use super::recovery::Recovery;
use super::session_error::SessionError;
use super::state::FitState;
use super::summary::{StageSummary, YoungsParameter};
use super::truth_check::TruthCheck;
use crate::drive::DriverSet;
use crate::output::youngs_world;

/// The fitted values of one driver.
#[derive(Clone, Debug, PartialEq)]
pub struct DriverValues {
    /// `log10 E`, normalised units.
    pub log10_youngs: f64,
    /// E, normalised units.
    pub youngs_normalised: f64,
    /// E, world units.
    pub youngs_world: f64,
    /// Initial velocity v0 (world units / s).
    pub velocity: [f64; 3],
    /// Held at rest by `[regions] anchored` (its values are not fitted).
    pub anchored: bool,
}

/// A fit's result (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct FitResult {
    /// The simulation box's side (world units), which converts E.
    pub box_side: f64,
    /// Per driver, in driver order.
    pub drivers: Vec<DriverValues>,
    /// The fitted `log10 E` parameters, in parameter order: one for a
    /// global field, one per region for a regions field, one per driver
    /// for a per-driver field.
    pub youngs_parameters: Vec<YoungsParameter>,
    /// The fitted velocity parameters (3 per parameter, world units / s).
    pub velocity_parameters: Vec<f64>,
    /// Every stage of the plan, in the order they ran, with its
    /// convergence.
    pub stages: Vec<StageSummary>,
    /// Every iteration's losses, in the order they ran.
    pub records: Vec<IterationRecord>,
    /// On a twin experiment: the recovery of the truth.
    pub recovery: Option<Recovery>,
}

impl FitResult {
    /// The result of `state`, the fit of `plan` through the maps
    /// `youngs` and `velocity` onto `drivers`.
    pub(crate) fn of(
        plan: &[StagePlan],
        state: &FitState,
        stage_seconds: &[f64],
        (youngs, velocity): (&ParamMap, &ParamMap),
        drivers: &DriverSet,
        truth: Option<&TruthCheck>,
    ) -> Result<Self, SessionError> {
        let (log10, v0) = per_driver(youngs, velocity, state)?;
        let side = drivers.sim_box.side;
        let values = log10
            .iter()
            .zip(v0.chunks_exact(3))
            .zip(&drivers.anchored)
            .map(|((&l, v), &anchored)| {
                let e = 10f64.powf(l);
                DriverValues {
                    log10_youngs: l,
                    youngs_normalised: e,
                    youngs_world: youngs_world(e, side),
                    velocity: [v[0], v[1], v[2]],
                    anchored,
                }
            })
            .collect();
        Ok(Self {
            box_side: side,
            drivers: values,
            youngs_parameters: youngs_parameters(&state.log10_youngs, side),
            velocity_parameters: state.velocity.clone(),
            stages: stage_summaries(plan, state, stage_seconds),
            records: state.records.clone(),
            recovery: truth.map(|t| t.recovery(drivers, &log10, &v0)),
        })
    }

    /// The loss of the last iteration run (none before the first).
    pub fn last_loss(&self) -> Option<f64> {
        self.records.last().map(|r| r.loss)
    }
}

/// Per-driver `log10 E` and velocity (3 per driver) of `state`.
pub fn per_driver(
    youngs: &ParamMap,
    velocity: &ParamMap,
    state: &FitState,
) -> Result<(Vec<f64>, Vec<f64>), SessionError> {
    Ok((
        youngs.apply(&state.log10_youngs)?,
        velocity.apply(&state.velocity)?,
    ))
}

/// The `log10 E` parameters `log10` (normalised units) in both units, for
/// a box of side `side`.
pub(crate) fn youngs_parameters(log10: &[f64], side: f64) -> Vec<YoungsParameter> {
    log10
        .iter()
        .map(|&l| YoungsParameter {
            log10_normalised: l,
            world: youngs_world(10f64.powf(l), side),
        })
        .collect()
}

/// Each stage of `plan` as run in `state`, with its seconds from
/// `stage_seconds` (0 for a stage not run).
pub(crate) fn stage_summaries(
    plan: &[StagePlan],
    state: &FitState,
    stage_seconds: &[f64],
) -> Vec<StageSummary> {
    plan.iter()
        .enumerate()
        .map(|(i, p)| StageSummary {
            round: p.round,
            stage: p.kind.name().into(),
            iterations: p.settings.iterations,
            learning_rate: p.settings.learning_rate,
            frames: p.selection.frames.clone(),
            seconds: stage_seconds.get(i).copied().unwrap_or(0.0),
            iterations_run: state
                .records
                .iter()
                .filter(|r| r.round == p.round && r.stage == p.kind)
                .count() as u32,
            converged: state.converged.get(i).copied().unwrap_or(false),
        })
        .collect()
}
