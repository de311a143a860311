//! A fit's result in memory: what [`super::FitSession::run`] returns, so
//! that a caller (the command line, a binding, a batch runner) reads E and
//! v0 without going through files. The outputs ([`super::outputs`]) write
//! the same values (`fit.json`'s stages and parameters come from the
//! same functions, [`super::summary_build`]), and nothing here writes (docs/design.md § Loss,
//! parameters, fit).
//!
//! E is given in both units `fit.json` uses: the simulator's normalised
//! units (the box mapped to [0,1]³, as scene.toml's material values) and
//! world units (E_normalised · box_side², [`youngs_world`]).

use super::discretisation::DiscretisationCheck;
use super::params::ParamMap;
use super::plan::StagePlan;
use super::record::IterationRecord;
use super::recovery::Recovery;
use super::session_error::SessionError;
use super::state::FitState;
use super::summary::{PoissonParameter, StageSummary, YoungsParameter};
use super::summary_build;
use super::truth_check::TruthCheck;
use super::uncertainty::FitUncertainty;
use crate::drive::DriverSet;
use crate::output::youngs_world;
use crate::scene::Scene;

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
    /// Poisson's ratio: the fitted one (`[fit.stiffness] poisson`), or
    /// `material.poisson_ratio`.
    pub poisson_ratio: f64,
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
    /// The fitted E parameters, in parameter order, named (the region,
    /// `object` for a global field, `driver N`), in both units.
    pub youngs_parameters: Vec<YoungsParameter>,
    /// The fitted velocity parameters (3 per parameter, world units / s).
    pub velocity_parameters: Vec<f64>,
    /// The fitted Poisson's ratio parameters, named; empty when ν was held
    /// at `material.poisson_ratio`.
    pub poisson_parameters: Vec<PoissonParameter>,
    /// The error bars of the fitted values from the data (docs/design.md
    /// § Error bars; each E parameter's is in [`FitResult::youngs_parameters`]
    /// too); absent when the fit ended before they were estimated.
    pub uncertainty: Option<Box<FitUncertainty>>,
    /// E refitted at finer substeps and its shift (docs/design.md § Error
    /// bars); absent unless `fit.check_discretisation` asked for it.
    pub discretisation: Option<Box<DiscretisationCheck>>,
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
    /// `youngs` and `velocity` onto `drivers`, with `poisson` per driver.
    pub(crate) fn of(
        scene: &Scene,
        plan: &[StagePlan],
        state: &FitState,
        stage_seconds: &[f64],
        (youngs, velocity, poisson): (&ParamMap, &ParamMap, &[f64]),
        drivers: &DriverSet,
        truth: Option<&TruthCheck>,
    ) -> Result<Self, SessionError> {
        let (log10, v0) = per_driver(youngs, velocity, state)?;
        let side = drivers.sim_box.side;
        let values = log10
            .iter()
            .zip(v0.chunks_exact(3))
            .zip(drivers.anchored.iter().zip(poisson))
            .map(|((&l, v), (&anchored, &poisson_ratio))| {
                let e = 10f64.powf(l);
                DriverValues {
                    log10_youngs: l,
                    youngs_normalised: e,
                    youngs_world: youngs_world(e, side),
                    velocity: [v[0], v[1], v[2]],
                    poisson_ratio,
                    anchored,
                }
            })
            .collect();
        Ok(Self {
            box_side: side,
            drivers: values,
            youngs_parameters: summary_build::youngs_parameters(scene, drivers, state, side),
            velocity_parameters: state.velocity.clone(),
            poisson_parameters: summary_build::poisson_parameters(scene, drivers, state),
            uncertainty: state.uncertainty.clone().map(Box::new),
            discretisation: state.discretisation.clone().map(Box::new),
            stages: summary_build::stages(plan, state, stage_seconds),
            records: state.records.clone(),
            recovery: truth.map(|t| t.recovery(drivers, &log10, &v0, poisson)),
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
