//! Everything that changes while a fit runs, in one value: a checkpoint
//! is that state, and a resumed fit continues as an uninterrupted one (it
//! re-evaluates the checkpointed parameters, which an uninterrupted run
//! evaluated too).

use serde::{Deserialize, Serialize};

use super::exact_step_record::ExactStep;

use super::discretisation::DiscretisationCheck;
use super::evaluation::Parameters;
use super::plan::{StageKind, StagePlan};
use super::record::IterationRecord;
use super::scan_state::ScanState;
use super::uncertainty::FitUncertainty;
use crate::solve::lbfgs::CurvaturePair;
use crate::solve::{Adam, LbfgsState};

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
    /// Poisson's ratio's `z` ([`Parameters::poisson`]); empty when ν is not
    /// fitted (and in a checkpoint of an earlier physfit).
    #[serde(default)]
    pub poisson: Vec<f64>,
    /// Adam's state of the running stage.
    pub adam: Adam,
    /// The error bars of the fitted values, once every stage has run
    /// ([`super::uncertainty_estimate`]).
    #[serde(default)]
    pub uncertainty: Option<FitUncertainty>,
    /// The exact-gradient step tried after the error bars
    /// ([`super::exact_step`]); absent before it, and when there was no
    /// step to try.
    #[serde(default)]
    pub exact_step: Option<ExactStep>,
    /// E refitted at finer substeps, once every stage has run and
    /// `fit.check_discretisation` asks for it
    /// ([`super::discretisation_check`]).
    #[serde(default)]
    pub discretisation: Option<DiscretisationCheck>,
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
    /// Per finished stage, in plan order: the cap it ran under, its
    /// accepted steps and its evaluations (line-search trials and
    /// rejected steps included). Empty in a checkpoint of an earlier
    /// physfit, which did not keep them.
    #[serde(default)]
    pub tallies: Vec<StageTally>,
    /// Every finished stage that stopped at its cap, as it was after its
    /// last iteration: a resume whose scene raised that cap continues it
    /// from there ([`FitState::continue_raised_cap`]).
    #[serde(default)]
    pub capped: Vec<CappedStage>,
    /// Per L-BFGS stage kind, the curvature pairs its last run ended with
    /// (in its scaled coordinates): the next round's stage of that kind
    /// starts from them ([`super::stages`]). Empty in a checkpoint of an
    /// earlier physfit.
    #[serde(default)]
    pub curvature: Vec<StageCurvature>,
}

/// The curvature an L-BFGS stage of `kind` ended with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageCurvature {
    /// The stage's kind.
    pub kind: StageKind,
    /// Its last curvature pairs, oldest first.
    pub pairs: Vec<CurvaturePair>,
}

/// What a finished stage did, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageTally {
    /// The cap (`iterations`) it ran under: evaluations for L-BFGS, steps
    /// for Adam, candidates for the scan.
    pub cap: u32,
    /// Accepted steps (a scan: candidates scanned).
    pub steps: u32,
    /// Evaluations of the loss, line-search trials, rejected steps and a
    /// scan's velocity fits included; 0 for a stage that never ran.
    pub evaluations: u32,
}

/// A stage that stopped at its cap (module doc of [`FitState`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CappedStage {
    /// The stage's index in the plan.
    pub stage: usize,
    /// The fit's state after the stage's last iteration, before it was
    /// finished (its own `capped` list left empty).
    pub state: Box<FitState>,
}

/// What a checkpoint keeps of a running L-BFGS stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbfgsCheckpoint {
    /// The solver's state (scaled coordinates).
    pub solver: LbfgsState,
}

impl FitState {
    /// The curvature pairs the last L-BFGS stage of `kind` ended with, if
    /// any.
    pub fn curvature_of(&self, kind: StageKind) -> &[CurvaturePair] {
        self.curvature
            .iter()
            .find(|c| c.kind == kind)
            .map_or(&[], |c| &c.pairs)
    }

    /// Keeps `pairs` as the curvature of the last L-BFGS stage of `kind`.
    pub fn keep_curvature(&mut self, kind: StageKind, pairs: Vec<CurvaturePair>) {
        self.curvature.retain(|c| c.kind != kind);
        self.curvature.push(StageCurvature { kind, pairs });
    }

    /// The start of a fit at `params`.
    pub fn start(params: Parameters, plan: &[StagePlan]) -> Self {
        let mut state = FitState {
            stage: 0,
            iteration: 0,
            log10_youngs: params.log10_youngs,
            velocity: params.velocity,
            poisson: params.poisson,
            adam: Adam::new(0),
            uncertainty: None,
            exact_step: None,
            discretisation: None,
            records: Vec::new(),
            scan: None,
            converged: Vec::new(),
            stage_losses: Vec::new(),
            lbfgs: None,
            tallies: Vec::new(),
            capped: Vec::new(),
            curvature: Vec::new(),
        };
        state.adam = Adam::new(state.stage_param_count(plan));
        state
    }

    /// The parameters.
    pub fn parameters(&self) -> Parameters {
        Parameters {
            log10_youngs: self.log10_youngs.clone(),
            velocity: self.velocity.clone(),
            poisson: self.poisson.clone(),
        }
    }

    /// True when every stage has run.
    pub fn done(&self, plan: &[StagePlan]) -> bool {
        self.stage >= plan.len()
    }

    /// On a resume: the earliest finished stage that stopped at its cap
    /// under a cap `plan` now raises, made the running stage again as it
    /// was after its last iteration (the stages after it are dropped, to
    /// run again from its new end). Returns its index, or `None` when no
    /// stage continues. A cap counts evaluations for L-BFGS, so a stage
    /// that stopped in a line search continues that line search from its
    /// last accepted step, as an uninterrupted run with the higher cap
    /// would have.
    pub fn continue_raised_cap(&mut self, plan: &[StagePlan]) -> Option<usize> {
        let position = self.capped.iter().position(|c| {
            let raised = |tally: &StageTally| {
                plan.get(c.stage)
                    .is_some_and(|p| p.settings.iterations > tally.cap)
            };
            c.stage < self.stage
                && !self.converged.get(c.stage).copied().unwrap_or(true)
                && self.tallies.get(c.stage).is_some_and(raised)
        })?;
        let mut earlier = std::mem::take(&mut self.capped);
        earlier.truncate(position + 1);
        let continued = earlier.pop().expect("the position is in the list");
        *self = *continued.state;
        self.capped = earlier;
        Some(continued.stage)
    }

    /// How many parameters the running stage fits (0 when done): the
    /// velocity's, or `log10 E`'s and ν's.
    pub fn stage_param_count(&self, plan: &[StagePlan]) -> usize {
        plan.get(self.stage).map_or(0, |p| match p.kind {
            StageKind::Velocity => self.velocity.len(),
            StageKind::Scan | StageKind::Stiffness => self.log10_youngs.len() + self.poisson.len(),
        })
    }
}
