//! What a stage of the fit counts as it runs (docs/design.md § Loss,
//! parameters, fit): how it ended, its accepted steps and the
//! evaluations it has taken, counted the same way by the stage loop
//! ([`super::stages`]), each solver's stage ([`super::stages_lbfgs`],
//! [`super::stages_adam`]) and a caller's progress.

use super::evaluation::LossReport;
use super::objective::by_lbfgs;
use super::plan::{StageKind, StagePlan};
use super::record::stage_records;
use super::state::FitState;

/// How one stage ended: its final report, whether it converged, and its
/// accepted steps and evaluations; `None` when the observer stopped it.
pub(super) type StageEnd = Option<(LossReport, bool, Counted)>;

/// A stage's accepted steps and evaluations ([`StageTally`] less its cap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Counted {
    pub(super) steps: u32,
    pub(super) evaluations: u32,
}

/// The evaluations of the loss the running `stage` has taken by `state`
/// (after an iteration): a scan's candidates' (velocity fits included);
/// Adam's start and each step's, once more per rejection (one record per
/// step); L-BFGS's up to its last accepted step (line-search trials
/// included; the start alone before it).
pub fn evaluations_so_far(stage: &StagePlan, state: &FitState) -> u32 {
    if stage.kind == StageKind::Scan {
        return state
            .scan
            .as_ref()
            .map_or(0, |s| s.points.iter().map(|p| p.evaluations).sum());
    }
    if by_lbfgs(stage.kind, &state.parameters()) {
        return state.lbfgs.as_ref().map_or(1, |c| c.solver.evaluations);
    }
    1 + stage_records(&state.records, stage)
        .map(|r| 1 + r.rejected)
        .sum::<u32>()
}
