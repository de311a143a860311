//! What the discretisation check found (src/fit/discretisation_check.rs,
//! docs/design.md § Error bars, "From the discretisation"): E refitted at
//! each level of a doubled grid with at least doubled substeps and drivers
//! rebuilt for that grid, kept in the fit's state and written to fit.json.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scene::DiscretisationRefinement;

/// The shift (decades) below which every fitted E counts as converged in
/// its discretisation: between two consecutive levels, every E parameter
/// moved less than this.
pub const DISCRETISATION_TOLERANCE: f64 = 0.05;

/// The shift of a fitted Poisson's ratio below which it counts as
/// converged in its discretisation, beside E's [`DISCRETISATION_TOLERANCE`]:
/// between two consecutive levels, every fitted ν moved less than this.
/// On a drop E and ν trade along a curved valley of the loss
/// (docs/benchmarks.md, "A fit of the drop at twice the grid"), so a
/// level whose E stands still can still move ν: at twice the grid the
/// drop's ν moved by 0.02 to 0.05 while its E moved by 0.03.
pub const POISSON_DISCRETISATION_TOLERANCE: f64 = 0.02;

fn poisson_tolerance() -> f64 {
    POISSON_DISCRETISATION_TOLERANCE
}

/// The refinement's least factor on the substeps per frame, level to
/// level (more when the finer grid's stability bound asks for more).
pub const SUBSTEP_REFINEMENT: u32 = 2;

/// The refinement's factor on the grid nodes per box side, level to level.
pub const GRID_REFINEMENT: u32 = 2;

/// The refinement's factor on the drivers, level to level, when the grid
/// stays the scene's (`fit.discretisation_refine = "fixed_grid"`).
pub const DRIVER_REFINEMENT: u32 = 2;

/// What a level's E is compared by (src/fit/discretisation_check.rs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum YoungsStatistic {
    /// Each E parameter: a `global` or `regions` field, refitted by
    /// L-BFGS. The levels' and answer's `log10_youngs` hold one value per
    /// parameter (fit.json's `youngs_parameters` order).
    #[default]
    Parameters,
    /// The median of `log10 E` over the free (not anchored) drivers: a
    /// field of more values (per driver), refitted by Adam, whose values
    /// number as the drivers do. The levels' and answer's `log10_youngs`
    /// hold that one median; the answer is always the fit's own field.
    FreeDriverMedian,
}

impl YoungsStatistic {
    /// The statistic of `log10_youngs`, one value per E parameter;
    /// `anchored[i]` says whether parameter `i` is an anchored driver
    /// (only read for the median, and only when it has one entry per
    /// parameter; otherwise every parameter counts).
    pub fn of(self, log10_youngs: &[f64], anchored: &[bool]) -> Vec<f64> {
        match self {
            YoungsStatistic::Parameters => log10_youngs.to_vec(),
            YoungsStatistic::FreeDriverMedian => {
                let mut values: Vec<f64> = match anchored.len() == log10_youngs.len() {
                    true => log10_youngs
                        .iter()
                        .zip(anchored)
                        .filter(|&(_, &a)| !a)
                        .map(|(&v, _)| v)
                        .collect(),
                    false => log10_youngs.to_vec(),
                };
                values.sort_by(f64::total_cmp);
                let n = values.len();
                match n {
                    0 => Vec::new(),
                    _ if n % 2 == 1 => vec![values[n / 2]],
                    _ => vec![0.5 * (values[n / 2 - 1] + values[n / 2])],
                }
            }
        }
    }
}

/// The discretisation a fit or a level runs at: grid, drivers, substeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// Grid nodes per box side (`simulation.grid_res`).
    pub grid_res: u32,
    /// Driving particles (the `[drivers]` rule on this grid).
    pub drivers: usize,
    /// Substeps per frame.
    pub substeps: u32,
}

impl std::fmt::Display for Resolution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "grid {}, {} drivers, {} substeps per frame",
            self.grid_res, self.drivers, self.substeps
        )
    }
}

/// One level of the check: E refitted at `grid_res`, `drivers` and
/// `substeps` per frame from the previous level's values (the fit's own
/// for the first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiscretisationLevel {
    /// Grid nodes per box side of this level: [`GRID_REFINEMENT`] times
    /// the previous level's.
    pub grid_res: u32,
    /// Driving particles of this level: the scene's `[drivers]` rule on
    /// this level's grid, same seed (src/fit/discretisation_grid.rs).
    pub drivers: usize,
    /// Substeps per frame of this level: at least [`SUBSTEP_REFINEMENT`]
    /// times the previous level's, and at least this grid's stability
    /// minimum.
    pub substeps: u32,
    /// Per E parameter (in fit.json's `youngs_parameters` order), its
    /// `log10 E` refitted at this level.
    pub log10_youngs: Vec<f64>,
    /// Per E parameter, this level's minus the previous level's `log10 E`
    /// (the fit's own for the first level; decades).
    pub shift: Vec<f64>,
    /// The largest |shift|.
    pub largest_shift: f64,
    /// Per fitted Poisson's ratio (fit.json's `poisson_parameters`
    /// order), ν refitted at this level; empty when ν is held.
    #[serde(default)]
    pub poisson: Vec<f64>,
    /// Per fitted ν, this level's minus the previous level's.
    #[serde(default)]
    pub poisson_shift: Vec<f64>,
    /// The largest |`poisson_shift`| (0 when ν is held).
    #[serde(default)]
    pub largest_poisson_shift: f64,
    /// The velocity parameters refitted at this level (fit.json's
    /// `velocity_parameters` order), in turn with E; empty when the levels hold
    /// the velocity (a per-driver velocity field, or no velocity stage).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub velocity: Vec<f64>,
    /// Newton steps in E (and ν) from a measured Hessian of the exact
    /// gradient taken after the refit (src/fit/exact_step.rs): a check of
    /// where L-BFGS's own model of the curvature ended it.
    #[serde(default)]
    pub newton_steps: u32,
    /// E refits run, the velocity refitted between them
    /// (src/fit/discretisation_round.rs): they go on, as the fit's own
    /// rounds do, until one moves E by less than a tenth of the tolerance
    /// (at most `fit.rounds`, at least two when the velocity is refitted).
    /// 0 in a record of a physfit that refitted once and did not count it.
    #[serde(default)]
    pub rounds: u32,
    /// The loss at the previous level's values at this level, then at
    /// the refitted ones (the last stiffness stage's frames).
    pub loss: [f64; 2],
    /// Evaluations the refit took.
    pub evaluations: u32,
    /// Its wall seconds.
    pub seconds: f64,
    /// Some E of this level ended at an end of
    /// `material.log10_youngs_range` ([`at_range_end`]): the bound held
    /// it, so its shift measures the range, and the level is not a
    /// converged one whatever its shift.
    #[serde(default)]
    pub at_range_end: bool,
    /// The refit was stopped when `fit.discretisation_seconds` ran out,
    /// before it converged: its E is where the refit had got, its shift
    /// how far it had moved by then, and the level is not a converged
    /// one whatever its shift.
    #[serde(default)]
    pub stopped_for_budget: bool,
}

/// Why the levels stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefinementEnd {
    /// The last level's largest shift is below the tolerance.
    Converged,
    /// `fit.discretisation_levels` levels ran, the last one's shift still
    /// at or above the tolerance.
    LevelCap,
    /// The next level's problem does not fit the memory left beside the
    /// fit's own (src/budget): the levels stop at the last that fitted.
    Memory,
    /// The next level's drivers would change the E parameters themselves
    /// (drivers outside every named region appear or vanish with the finer
    /// drivers): its E could not be compared with the fit's, so the levels
    /// stop at the last comparable one.
    Regions,
    /// The levels ran out (`fit.discretisation_levels`) with the last
    /// level's E at an end of `material.log10_youngs_range`: its optimum
    /// lies outside the range, so its shift measures the range, not the
    /// discretisation, and a zero shift between two levels held at the same
    /// end says nothing of convergence. (A level held at an end does not
    /// stop the check: a finer one may bring E back inside.)
    RangeEnd,
    /// `fit.discretisation_seconds` ran out: the next level was predicted
    /// not to finish in what was left (from the last levels' times), or
    /// the last level was stopped unconverged when it was spent
    /// ([`DiscretisationLevel::stopped_for_budget`]).
    Budget,
}

/// Whether a value of `log10_youngs` lies at an end of `range` (within
/// [`RANGE_END_SLACK`] decades): the bound held it, not the frames.
pub fn at_range_end(log10_youngs: &[f64], range: [f64; 2]) -> bool {
    log10_youngs
        .iter()
        .any(|&v| v - range[0] < RANGE_END_SLACK || range[1] - v < RANGE_END_SLACK)
}

/// How close to an end of the E range a level's E counts as held there
/// (decades): far below any shift the check reports.
pub const RANGE_END_SLACK: f64 = 1e-4;

/// What the check found (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiscretisationCheck {
    /// Grid nodes per box side the stages fitted at.
    pub grid_res: u32,
    /// Driving particles the stages fitted with.
    pub drivers: usize,
    /// Substeps per frame the stages fitted at.
    pub substeps: u32,
    /// Per E parameter, the fit's own `log10 E` (at `substeps`).
    pub fitted_log10_youngs: Vec<f64>,
    /// The levels run, coarsest first (each at [`GRID_REFINEMENT`] times
    /// the previous one's grid, at least [`SUBSTEP_REFINEMENT`] times its
    /// substeps).
    pub levels: Vec<DiscretisationLevel>,
    /// `fit.discretisation_levels`: the cap on levels.
    pub max_levels: u32,
    /// What each level refined (`fit.discretisation_refine`): the grid
    /// with the substeps and drivers, or the substeps and drivers on the
    /// fit's own grid (absent in a check of an earlier physfit: the grid).
    #[serde(default = "DiscretisationRefinement::before_the_choice")]
    pub refinement: DiscretisationRefinement,
    /// [`DISCRETISATION_TOLERANCE`].
    pub tolerance: f64,
    /// Per fitted Poisson's ratio, the fit's own ν; empty when ν is held.
    #[serde(default)]
    pub fitted_poisson: Vec<f64>,
    /// [`POISSON_DISCRETISATION_TOLERANCE`].
    #[serde(default = "poisson_tolerance")]
    pub poisson_tolerance: f64,
    /// The fit's own velocity parameters when the levels refit the
    /// velocity; empty when they hold it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fitted_velocity: Vec<f64>,
    /// What `fitted_log10_youngs`, each level's and the answer's
    /// `log10_youngs` hold: each E parameter, or the median over the free
    /// drivers of a per-driver field (absent in a check of an earlier
    /// physfit: each parameter).
    #[serde(default)]
    pub youngs_statistic: YoungsStatistic,
    /// Why the levels stopped; absent while the check is still refining
    /// (a checkpoint taken between levels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<RefinementEnd>,
    /// The last level's largest shifts of E and of a fitted ν are below
    /// their tolerances.
    pub converged: bool,
    /// Grid of the E reported as the material's: the finest level's when
    /// converged, the fit's own otherwise.
    pub answer_grid_res: u32,
    /// Substeps per frame of the E reported as the material's: the finest
    /// level's when converged, the fit's own otherwise.
    pub answer_substeps: u32,
    /// Per E parameter, the `log10 E` reported as the material's (the
    /// finest level's when converged, the fit's own otherwise): what
    /// fitted.ply and stiffness.png carry (docs/design.md § Error bars).
    pub answer_log10_youngs: Vec<f64>,
    /// Per fitted Poisson's ratio, ν reported as the material's, beside
    /// `answer_log10_youngs` (the finest level's when converged, the fit's
    /// own otherwise); empty when ν is held.
    #[serde(default)]
    pub answer_poisson: Vec<f64>,
}

/// What one level's refit found ([`DiscretisationCheck::push_level`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LevelFit {
    /// Per E parameter, `log10 E`.
    pub log10_youngs: Vec<f64>,
    /// Per fitted ν, its value (empty when ν is held).
    pub poisson: Vec<f64>,
    /// The refitted velocity parameters (empty when the levels hold the
    /// velocity).
    pub velocity: Vec<f64>,
    /// The loss at the previous level's values, then at the refitted ones.
    pub loss: [f64; 2],
    /// Evaluations the refit and its Newton steps took.
    pub evaluations: u32,
    /// Newton steps kept after the refits.
    pub newton_steps: u32,
    /// E refits run.
    pub rounds: u32,
    /// Wall seconds.
    pub seconds: f64,
}

impl DiscretisationCheck {
    /// A check of the fit's `fitted` E and `fitted_poisson` ν (empty when
    /// ν is held) at `fit`'s discretisation that has run no level yet.
    pub fn start(
        fit: Resolution,
        fitted: Vec<f64>,
        fitted_poisson: Vec<f64>,
        max_levels: u32,
    ) -> Self {
        Self {
            grid_res: fit.grid_res,
            drivers: fit.drivers,
            substeps: fit.substeps,
            answer_grid_res: fit.grid_res,
            answer_substeps: fit.substeps,
            answer_log10_youngs: fitted.clone(),
            fitted_log10_youngs: fitted,
            answer_poisson: fitted_poisson.clone(),
            fitted_poisson,
            levels: Vec::new(),
            max_levels,
            refinement: DiscretisationRefinement::Grid,
            tolerance: DISCRETISATION_TOLERANCE,
            poisson_tolerance: POISSON_DISCRETISATION_TOLERANCE,
            fitted_velocity: Vec::new(),
            youngs_statistic: YoungsStatistic::Parameters,
            end: None,
            converged: false,
        }
    }

    /// The same check refining by `refinement`.
    pub fn refining(self, refinement: DiscretisationRefinement) -> Self {
        Self { refinement, ..self }
    }

    /// The same check comparing E by `statistic` (`fitted` and every
    /// level's `log10_youngs` are then that statistic's values).
    pub fn comparing(self, youngs_statistic: YoungsStatistic) -> Self {
        Self {
            youngs_statistic,
            ..self
        }
    }

    /// Whether the finest level's values are the material's answer: the
    /// check converged and compares each E parameter (a per-driver
    /// field's answer is the fit's own field, whose median the levels
    /// measured).
    pub fn answers_with_finest(&self) -> bool {
        self.converged && self.youngs_statistic == YoungsStatistic::Parameters
    }

    /// The same check, its levels refitting the velocity from the fit's
    /// own `fitted_velocity` parameters.
    pub fn refitting_velocity(self, fitted_velocity: Vec<f64>) -> Self {
        Self {
            fitted_velocity,
            ..self
        }
    }

    /// The fit's own discretisation.
    pub fn fit_resolution(&self) -> Resolution {
        Resolution {
            grid_res: self.grid_res,
            drivers: self.drivers,
            substeps: self.substeps,
        }
    }

    /// The finest level's discretisation and `log10 E` (the fit's own
    /// before any level).
    pub fn finest(&self) -> (Resolution, &[f64]) {
        match self.levels.last() {
            Some(l) => (l.resolution(), &l.log10_youngs),
            None => (self.fit_resolution(), &self.fitted_log10_youngs),
        }
    }

    /// The finest level's fitted ν (the fit's own before any level).
    pub fn finest_poisson(&self) -> &[f64] {
        match self.levels.last() {
            Some(l) => &l.poisson,
            None => &self.fitted_poisson,
        }
    }

    /// Adds a level refitted at `at` to `fit`'s values (its shifts are
    /// measured from the finest level so far).
    pub fn push_level(&mut self, at: Resolution, fit: LevelFit) {
        let shift = differences(&fit.log10_youngs, self.finest().1);
        let poisson_shift = differences(&fit.poisson, self.finest_poisson());
        let largest_shift = largest(&shift);
        let largest_poisson_shift = largest(&poisson_shift);
        self.levels.push(DiscretisationLevel {
            grid_res: at.grid_res,
            drivers: at.drivers,
            substeps: at.substeps,
            log10_youngs: fit.log10_youngs,
            shift,
            largest_shift,
            poisson: fit.poisson,
            poisson_shift,
            largest_poisson_shift,
            velocity: fit.velocity,
            newton_steps: fit.newton_steps,
            rounds: fit.rounds,
            loss: fit.loss,
            evaluations: fit.evaluations,
            seconds: fit.seconds,
            at_range_end: false,
            stopped_for_budget: false,
        });
        self.converged =
            largest_shift < self.tolerance && largest_poisson_shift < self.poisson_tolerance;
    }

    /// Whether another level is to run (the last one's shift is at or
    /// above the tolerance and the cap is not reached), and otherwise why
    /// not.
    pub fn next(&self) -> Result<(), RefinementEnd> {
        if self.converged {
            Err(RefinementEnd::Converged)
        } else if self.levels.len() as u32 >= self.max_levels {
            match self.levels.last().is_some_and(|l| l.at_range_end) {
                true => Err(RefinementEnd::RangeEnd),
                false => Err(RefinementEnd::LevelCap),
            }
        } else {
            Ok(())
        }
    }

    /// Marks the last level as held at an end of the E range
    /// ([`DiscretisationLevel::at_range_end`]): not converged, whatever its
    /// shift.
    pub fn mark_range_end(&mut self) {
        if let Some(level) = self.levels.last_mut() {
            level.at_range_end = true;
            self.converged = false;
        }
    }

    /// Marks the last level as stopped by the time budget
    /// ([`DiscretisationLevel::stopped_for_budget`]): not converged,
    /// whatever its shift.
    pub fn mark_stopped_for_budget(&mut self) {
        if let Some(level) = self.levels.last_mut() {
            level.stopped_for_budget = true;
            self.converged = false;
        }
    }

    /// Wall seconds the levels have taken so far (those of a resumed
    /// check's earlier run included).
    pub fn seconds(&self) -> f64 {
        self.levels.iter().map(|l| l.seconds).sum()
    }

    /// The predicted wall seconds of the next level: the last level's
    /// times the growth from the level before it (at least 1: a finer
    /// level never costs less), or the last level's alone after one
    /// level; `None` before any level (nothing measured yet: the first
    /// level runs, and the budget stops it inside when spent).
    pub fn predicted_next_seconds(&self) -> Option<f64> {
        let n = self.levels.len();
        let last = self.levels.last()?.seconds;
        let growth = match n {
            1 => 1.0,
            _ => (last / self.levels[n - 2].seconds.max(f64::MIN_POSITIVE)).max(1.0),
        };
        Some(last * growth)
    }

    /// Ends the check for `why`: the answer is the finest level's E when
    /// [`Self::answers_with_finest`], the fit's own otherwise.
    pub fn finish(&mut self, why: RefinementEnd) {
        self.end = Some(why);
        let finest = self.answers_with_finest();
        let (at, values) = match finest {
            true => self.finest(),
            false => (self.fit_resolution(), self.fitted_log10_youngs.as_slice()),
        };
        let (at, values) = (at, values.to_vec());
        (self.answer_grid_res, self.answer_substeps) = (at.grid_res, at.substeps);
        self.answer_log10_youngs = values;
        self.answer_poisson = match finest {
            true => self.finest_poisson().to_vec(),
            false => self.fitted_poisson.clone(),
        };
    }

    /// Per fitted ν, the finest level's minus the fit's own: how far the
    /// discretisation moved it over every level (empty when ν is held,
    /// or a check of an earlier physfit kept no ν).
    pub fn total_poisson_shift(&self) -> Vec<f64> {
        match self.finest_poisson().len() == self.fitted_poisson.len() {
            true => differences(self.finest_poisson(), &self.fitted_poisson),
            false => Vec::new(),
        }
    }

    /// Per E parameter, the fit's own `log10 E` minus its discretisation's
    /// limit, estimated from the shift over every level at first order
    /// ([`first_order_limit_factor`]): the discretisation's error bar of
    /// the fit's own E (`youngs_parameters`, `drivers.safetensors`). `None`
    /// before a level has run.
    pub fn own_error(&self) -> Option<Vec<f64>> {
        let factor = first_order_limit_factor(self.levels.len())?;
        Some(self.total_shift().iter().map(|s| -s * factor).collect())
    }

    /// Per fitted ν, the fit's own ν minus its limit, estimated as
    /// [`Self::own_error`] is; `None` before a level has run, empty when
    /// ν is held (or a check of an earlier physfit kept none).
    pub fn own_poisson_error(&self) -> Option<Vec<f64>> {
        let factor = first_order_limit_factor(self.levels.len())?;
        Some(self.total_poisson_shift().iter().map(|s| -s * factor).collect())
    }

    /// Per velocity parameter, the fit's own value minus its
    /// discretisation's limit, estimated from the finest level's refitted
    /// velocity as [`Self::own_error`] is (world units/s); `None` before
    /// a level has run or when the levels hold the velocity.
    pub fn own_velocity_error(&self) -> Option<Vec<f64>> {
        let factor = first_order_limit_factor(self.levels.len())?;
        let finest = &self.levels.last()?.velocity;
        let fitted = &self.fitted_velocity;
        (!fitted.is_empty() && finest.len() == fitted.len()).then(|| {
            differences(finest, fitted)
                .iter()
                .map(|s| -s * factor)
                .collect()
        })
    }

    /// Per E parameter (or the one median, [`YoungsStatistic`]), the
    /// discretisation's error that belongs with the E reported as the
    /// material's (`answer_log10_youngs`), at first order
    /// ([`first_order_limit_factor`]): when the finest level's E is the
    /// answer ([`Self::answers_with_finest`]), and it lies about its last shift
    /// from the limit; otherwise the fit's own E is the answer, and its
    /// error is [`Self::own_error`]. `None` before a level has run or while
    /// the check is still refining.
    pub fn answer_error(&self) -> Option<Vec<f64>> {
        self.end?;
        let last = self.levels.last()?;
        match self.answers_with_finest() {
            true => Some(last.shift.iter().map(|s| -s).collect()),
            false => self.own_error(),
        }
    }

    /// Whether a level ran, and so measured a shift (a check whose first
    /// level did not fit the memory, or changed the regions, measured none).
    pub fn measured_a_shift(&self) -> bool {
        !self.levels.is_empty()
    }

    /// The largest shift between the last two levels (0 before any).
    pub fn last_shift(&self) -> f64 {
        self.levels.last().map_or(0.0, |l| l.largest_shift)
    }

    /// Per E parameter, the finest level's minus the fit's own `log10 E`
    /// (decades): how far the discretisation moved it over every level,
    /// the discretisation's error bar of the fit's own E.
    pub fn total_shift(&self) -> Vec<f64> {
        differences(self.finest().1, &self.fitted_log10_youngs)
    }
}

/// How many times its last shift a level's value lies from the
/// discretisation's limit, after `levels` levels (`None` for none): each
/// level halves the step it refines (the time step, the drivers' spacing
/// and, refining the grid, the cell), so a value that converges at first
/// order, `E(h) = E* + c·h`, moves by `c·h·(1 − 2^−k)` over `k` levels
/// from the fit's own `h`, which lies `c·h` from the limit: the shift over
/// every level times `1 / (1 − 2^−k)` (2 after one level, 4/3 after two),
/// and the finest level `c·h/2^k` from it, its last shift. First order is
/// the time integration's (symplectic Euler) and the slowest a converging
/// MPM discretisation has; a faster one makes the bar wider than needed,
/// never narrower.
pub fn first_order_limit_factor(levels: usize) -> Option<f64> {
    let levels = i32::try_from(levels).ok().filter(|&k| k > 0)?;
    Some(1.0 / (1.0 - f64::from(LEVEL_RATIO).powi(-levels)))
}

/// The factor by which each level refines the step it refines: the
/// substeps ([`SUBSTEP_REFINEMENT`]), the drivers ([`DRIVER_REFINEMENT`],
/// on the fit's grid) or the grid ([`GRID_REFINEMENT`]).
pub const LEVEL_RATIO: u32 = 2;
const _: () = assert!(
    LEVEL_RATIO == SUBSTEP_REFINEMENT
        && LEVEL_RATIO == DRIVER_REFINEMENT
        && LEVEL_RATIO == GRID_REFINEMENT
);

/// `a − b`, element by element.
fn differences(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

/// The largest absolute value of `values` (0 for none).
fn largest(values: &[f64]) -> f64 {
    values.iter().fold(0.0f64, |m, s| m.max(s.abs()))
}

impl DiscretisationLevel {
    /// The level's discretisation.
    pub fn resolution(&self) -> Resolution {
        Resolution {
            grid_res: self.grid_res,
            drivers: self.drivers,
            substeps: self.substeps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The levels go on while the last shift is at or above the
    /// tolerance, stop at the first below it (the finest level's E is then
    /// the answer) or at the cap (the fit's own E stands); each shift is
    /// measured from the level before, the total from the fit's own E.
    fn at(grid_res: u32, drivers: usize, substeps: u32) -> Resolution {
        Resolution {
            grid_res,
            drivers,
            substeps,
        }
    }

    /// A level's refit of E alone (ν held).
    fn fit(log10_youngs: Vec<f64>, loss: [f64; 2], evaluations: u32, seconds: f64) -> LevelFit {
        LevelFit {
            log10_youngs,
            poisson: Vec::new(),
            velocity: Vec::new(),
            loss,
            evaluations,
            newton_steps: 0,
            rounds: 1,
            seconds,
        }
    }

    #[test]
    fn levels_continue_until_the_shift_is_under_the_tolerance_or_the_cap() {
        let mut check = DiscretisationCheck::start(at(16, 400, 9), vec![3.78, 4.55], Vec::new(), 3);
        assert_eq!(check.next(), Ok(()));
        check.push_level(at(32, 1500, 18), fit(vec![3.5, 4.496], [2.0, 1.0], 8, 1.0));
        assert_eq!(check.levels[0].resolution(), at(32, 1500, 18));
        assert!((check.levels[0].shift[0] + 0.28).abs() < 1e-12);
        assert!((check.last_shift() - 0.28).abs() < 1e-12);
        assert_eq!(check.next(), Ok(()), "0.28 decades: another level");
        check.push_level(at(64, 6000, 36), fit(vec![3.48, 4.5], [1.0, 0.9], 5, 2.0));
        assert!((check.levels[1].shift[0] + 0.02).abs() < 1e-12);
        assert!((check.levels[1].shift[1] - 0.004).abs() < 1e-12);
        assert_eq!(check.next(), Err(RefinementEnd::Converged));
        assert_eq!(check.answer_error(), None, "still refining: no answer yet");
        check.finish(RefinementEnd::Converged);
        let answer = check.answer_error().expect("a finished check");
        assert!(
            (answer[0] - 0.02).abs() < 1e-12 && (answer[1] + 0.004).abs() < 1e-12,
            "converged: the finest level's E is the answer, its error the last shift"
        );
        // The fit's own E, two levels from the finest: 4/3 of the total
        // shift from the limit at first order.
        let own = check.own_error().expect("two levels ran");
        assert!((own[0] - 0.4).abs() < 1e-12 && (own[1] - 0.05 * 4.0 / 3.0).abs() < 1e-12);
        assert_eq!((check.answer_grid_res, check.answer_substeps), (64, 36));
        assert_eq!(check.answer_log10_youngs, vec![3.48, 4.5]);
        let total = check.total_shift();
        assert!((total[0] + 0.3).abs() < 1e-12 && (total[1] + 0.05).abs() < 1e-12);

        let mut capped = DiscretisationCheck::start(at(16, 100, 4), vec![4.0], Vec::new(), 2);
        capped.push_level(at(32, 400, 8), fit(vec![3.8], [1.0, 0.5], 6, 1.0));
        capped.push_level(at(64, 1600, 16), fit(vec![3.7], [1.0, 0.5], 6, 1.0));
        assert!(!capped.converged);
        assert_eq!(capped.next(), Err(RefinementEnd::LevelCap));
        capped.finish(RefinementEnd::LevelCap);
        assert_eq!(
            (
                capped.answer_grid_res,
                capped.answer_substeps,
                capped.answer_log10_youngs.clone()
            ),
            (16, 4, vec![4.0])
        );
        assert!((capped.last_shift() - 0.1).abs() < 1e-12);
        assert!((capped.total_shift()[0] + 0.3).abs() < 1e-12);
        assert!(
            (capped.answer_error().expect("a finished check")[0] - 0.4).abs() < 1e-12,
            "not converged: the fit's own E is the answer, its error the shift over every level \
             extrapolated at first order (0.3 × 4/3)"
        );
        let mut one = DiscretisationCheck::start(at(16, 100, 4), vec![4.0], vec![0.3], 1);
        one.push_level(
            at(16, 200, 8),
            LevelFit {
                poisson: vec![0.28],
                ..fit(vec![3.9], [1.0, 0.5], 6, 1.0)
            },
        );
        one.finish(one.next().unwrap_err());
        let own = one.answer_error().expect("one level ran");
        assert!(
            (own[0] - 0.2).abs() < 1e-12,
            "one level: the fit's own E lies twice its shift from the limit, {own:?}"
        );
        let nu = one.own_poisson_error().expect("one level ran");
        assert!((nu[0] - 0.04).abs() < 1e-12, "{nu:?}");
        assert_eq!(one.own_velocity_error(), None, "the velocity was held");
        let mut moving = DiscretisationCheck::start(at(16, 100, 4), vec![4.0], Vec::new(), 1)
            .refitting_velocity(vec![0.5, -0.1]);
        moving.push_level(
            at(16, 200, 8),
            LevelFit {
                velocity: vec![0.52, -0.1],
                ..fit(vec![3.9], [1.0, 0.5], 6, 1.0)
            },
        );
        let v = moving.own_velocity_error().expect("the levels refit the velocity");
        assert!((v[0] + 0.04).abs() < 1e-12 && v[1].abs() < 1e-12, "{v:?}");
        let mut none = DiscretisationCheck::start(at(16, 100, 4), vec![4.0], Vec::new(), 2);
        none.finish(RefinementEnd::Memory);
        assert_eq!(none.answer_error(), None, "no level ran: no shift measured");
        assert_eq!(none.own_error(), None);
        assert_eq!(first_order_limit_factor(0), None);
        assert_eq!(first_order_limit_factor(1), Some(2.0));
    }

    /// The budget's prediction is the last level's time grown as it grew
    /// from the level before; a level stopped by the budget is not
    /// converged whatever its shift, and the fit's own E stands.
    #[test]
    fn a_level_stopped_for_the_budget_is_not_convergence() {
        let mut check = DiscretisationCheck::start(at(12, 256, 4), vec![4.0], Vec::new(), 3);
        assert_eq!(check.predicted_next_seconds(), None);
        check.push_level(at(24, 512, 8), fit(vec![3.8], [0.7, 0.6], 6, 10.0));
        assert_eq!(check.predicted_next_seconds(), Some(10.0));
        check.push_level(at(48, 2048, 16), fit(vec![3.78], [0.7, 0.6], 3, 30.0));
        assert!(check.converged, "0.02 decades: under the tolerance");
        assert_eq!(check.predicted_next_seconds(), Some(90.0));
        assert_eq!(check.seconds(), 40.0);
        check.mark_stopped_for_budget();
        assert!(!check.converged && check.levels[1].stopped_for_budget);
        check.finish(RefinementEnd::Budget);
        assert_eq!(
            (check.answer_grid_res, check.answer_log10_youngs.clone()),
            (12, vec![4.0])
        );
    }

    /// A per-driver field is compared by its median over the free
    /// drivers; converged or not, its answer stays the fit's own field,
    /// and its error is the median's, extrapolated.
    #[test]
    fn a_per_driver_field_is_checked_by_its_free_drivers_median() {
        let median = YoungsStatistic::FreeDriverMedian;
        let anchored = [false, true, false, false];
        assert_eq!(median.of(&[4.0, 9.0, 3.0, 5.0], &anchored), vec![4.0]);
        assert_eq!(median.of(&[4.0, 9.0, 3.0, 5.0], &[]), vec![4.5], "no flags: every value");
        assert_eq!(median.of(&[], &[]), Vec::<f64>::new());
        assert_eq!(
            YoungsStatistic::Parameters.of(&[4.0, 9.0], &[true, false]),
            vec![4.0, 9.0]
        );
        let mut check = DiscretisationCheck::start(at(16, 400, 9), vec![4.0], Vec::new(), 3)
            .comparing(median);
        check.push_level(at(16, 800, 18), fit(vec![3.98], [1.0, 0.9], 12, 1.0));
        assert!(check.converged && !check.answers_with_finest());
        check.finish(check.next().unwrap_err());
        assert_eq!(check.end, Some(RefinementEnd::Converged));
        assert_eq!(
            (check.answer_substeps, check.answer_log10_youngs.clone()),
            (9, vec![4.0]),
            "the fit's own field is the answer"
        );
        let error = check.answer_error().expect("a level ran");
        assert!((error[0] - 0.04).abs() < 1e-12, "{error:?}");
    }

    /// Two levels held at the same end of the E range shift by nothing,
    /// and that is not convergence: the check ends at the range's end and
    /// the fit's own E stands.
    #[test]
    fn a_level_held_at_the_range_end_is_not_convergence() {
        let range = [3.0, 4.5];
        assert!(at_range_end(&[4.5, 4.0], range));
        assert!(at_range_end(&[3.0], range));
        assert!(!at_range_end(&[4.49, 3.01], range));
        let mut check = DiscretisationCheck::start(at(12, 256, 4), vec![4.0], Vec::new(), 2);
        check.push_level(at(24, 512, 8), fit(vec![4.5], [0.7, 0.6], 2, 1.0));
        check.mark_range_end();
        assert_eq!(check.next(), Ok(()), "a finer level may come back inside");
        check.push_level(at(48, 512, 16), fit(vec![4.5], [1.4, 1.4], 1, 1.0));
        assert!(check.converged, "the shift alone is under the tolerance");
        check.mark_range_end();
        assert!(!check.converged);
        let why = check.next().unwrap_err();
        assert_eq!(why, RefinementEnd::RangeEnd);
        check.finish(why);
        assert_eq!(
            (check.answer_grid_res, check.answer_log10_youngs.clone()),
            (12, vec![4.0])
        );
    }

    /// A fitted ν counts in convergence beside E: a level whose E stands
    /// still while ν moves by its tolerance or more is not converged; the
    /// converged answer carries the finest level's ν, an unconverged one
    /// the fit's own.
    #[test]
    fn a_fitted_poisson_ratio_that_still_moves_is_not_convergence() {
        let level = |e: f64, nu: f64| LevelFit {
            poisson: vec![nu],
            newton_steps: 2,
            rounds: 3,
            ..fit(vec![e], [1.0, 0.5], 8, 1.0)
        };
        let mut check = DiscretisationCheck::start(at(20, 1000, 80), vec![5.32], vec![0.29], 3);
        check.push_level(at(40, 2494, 160), level(5.42, 0.27));
        assert!(!check.converged);
        check.push_level(at(80, 2494, 320), level(5.43, 0.24));
        assert!((check.levels[1].largest_shift - 0.01).abs() < 1e-12);
        assert!((check.levels[1].largest_poisson_shift - 0.03).abs() < 1e-12);
        assert_eq!(check.levels[1].newton_steps, 2);
        assert_eq!(check.levels[1].rounds, 3);
        assert!(!check.converged, "E stands still, ν moves by 0.03");
        assert_eq!(check.next(), Ok(()));
        check.push_level(at(160, 2494, 640), level(5.44, 0.23));
        assert!(check.converged);
        check.finish(RefinementEnd::Converged);
        assert_eq!(check.answer_poisson, vec![0.23]);
        assert!((check.total_poisson_shift()[0] + 0.06).abs() < 1e-12);
        assert_eq!(check.answer_log10_youngs, vec![5.44]);

        let mut capped = DiscretisationCheck::start(at(20, 1000, 80), vec![5.32], vec![0.29], 1);
        capped.push_level(at(40, 2494, 160), level(5.33, 0.25));
        assert!(!capped.converged);
        capped.finish(capped.next().unwrap_err());
        assert_eq!(capped.end, Some(RefinementEnd::LevelCap));
        assert_eq!(capped.answer_poisson, vec![0.29]);
    }
}
