//! A small limited-memory BFGS minimiser with a backtracking (Armijo) line
//! search that also grows its first step, for low-dimensional problems
//! (the fit's global or rigid velocity: 3 or 6 unknowns, where Adam's
//! reach is capped by rate × iterations whatever the gradient says; a
//! view's camera and colour in `align`), with bounds that trial points are
//! projected into.
//!
//! The problem is an [`Objective`] (module [`super::objective`]): an
//! unusable point (the simulation blew up, or a value came out
//! non-finite) makes the line search shrink its step as it does on an
//! insufficient decrease. One [`Solver`] iteration is one accepted step
//! (its line search and any restart included); [`LbfgsState`] after it
//! continues the run exactly. Every evaluation counts against `max_evaluations`, line-search
//! trials included, since each is a full rollout and render.
//!
//! Gradients only where they are used: a trial is measured loss first
//! ([`Objective::measure`]), its gradient skipped by a problem whose
//! gradient costs a backward pass of its own, except the unit step of a
//! search after the first (L-BFGS's curvature makes it the step usually
//! accepted, and a search that accepts stops there). An accepted point
//! measured without its gradient is evaluated again with it, once: a
//! repeated forward, not a point of the cap, since the search's decisions
//! are those of the same points as with every gradient computed. With
//! [`LbfgsSettings::eager_gradient`] off that second evaluation waits for
//! the next step, so a run that ends at the point never pays for it. Which
//! trials get their gradient changes what a run costs, never where it
//! goes (the losses decide every step).
//!
//! It has converged when two accepted steps in a row each lower the loss by
//! less than `relative_tolerance` of it, when the curvature pairs' model
//! expects less than that of its next step (the unit step's first-order
//! gain `−gᵀd = gᵀH⁻¹g`, twice the quadratic model's decrease, below
//! `relative_tolerance` of the loss: the point is its minimum as far as
//! the model can tell, and trying the step would cost an evaluation to
//! confirm it), or when no step along the gradient lowers it at all. The
//! model's test needs the gradient of the loss the run measures, and a
//! pair the run measured itself: a direction along the gradient alone (no
//! pairs) is no model, and pairs handed in by a warm start describe the
//! loss of another run (an earlier round, a coarser level), so until the
//! run has measured a pair of its own the step is always tried. A line
//! search that finds no lower point drops the
//! curvature pairs and tries again from the gradient, at the length of the
//! last accepted step (the scale the run has found; the first step's
//! length only before any step), and does not try at all when even that
//! trial's first-order gain is below `relative_tolerance` of the loss;
//! with no pairs to drop, the run ends there (converged, unless the
//! evaluations ran out).
//!
//! A refused trial is followed by a shorter one at the minimum of the
//! parabola through the point and the refused trial (a loss sharply curved
//! along the direction, as a velocity is once E fits, is then reached in
//! a few trials rather than many halvings). The search gives a direction
//! up once even the first-order gain of its next trial is below
//! `relative_tolerance` of the loss.
//!
//! Nocedal & Wright, *Numerical Optimization* (2006), alg. 7.4 (the
//! two-loop recursion), alg. 3.1 (backtracking with the sufficient
//! decrease condition, c₁ = 1e-4) and § 3.5 (interpolating the step).

use serde::{Deserialize, Serialize};

use super::objective::Objective;
use super::solver::{execute, Control, Ending, Iteration, Solver};

pub use super::objective::Evaluated;

/// How an L-BFGS run is bounded.
#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsSettings {
    /// Evaluations at most, the start's included.
    pub max_evaluations: u32,
    /// Length of the first trial step (parameter units): the solver knows
    /// no curvature yet, so this sets the scale of the first move.
    pub first_step: f64,
    /// Pairs of (step, gradient change) kept.
    pub memory: usize,
    /// Stop when two steps in a row lower the loss by less than this
    /// fraction of it, or the curvature model expects less of the next
    /// (module doc).
    pub relative_tolerance: f64,
    /// Bounds per coordinate: trial points are projected into them (the
    /// fit's `log10 E` range); empty for none, infinite ends for a free
    /// coordinate.
    pub bounds: Vec<(f64, f64)>,
    /// Evaluate an accepted point's gradient as soon as it is accepted
    /// (a caller that records or checkpoints every accepted step needs
    /// it), rather than when the next step needs it (module doc).
    pub eager_gradient: bool,
}

impl Default for LbfgsSettings {
    /// 8 evaluations, a unit first step, 5 pairs, 1e-4, no bounds, eager
    /// gradients.
    fn default() -> Self {
        Self {
            max_evaluations: 8,
            first_step: 1.0,
            memory: 5,
            relative_tolerance: 1e-4,
            bounds: Vec::new(),
            eager_gradient: true,
        }
    }
}

/// Where an L-BFGS run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsResult {
    /// The best point found.
    pub x: Vec<f64>,
    /// Its loss.
    pub loss: f64,
    /// Evaluations used.
    pub evaluations: u32,
    /// True when it stopped at a minimum as the module doc defines it (not
    /// because it ran out of evaluations).
    pub converged: bool,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Minimises `f` from `x0` (module doc). `Ok(None)` when the start itself
/// is unusable; errors of `f` pass through.
#[cfg(feature = "reference")]
pub fn minimise<E>(
    x0: &[f64],
    settings: &LbfgsSettings,
    f: impl FnMut(&[f64]) -> Result<Evaluated, E>,
) -> Result<Option<LbfgsResult>, E> {
    minimise_observed(LbfgsStart::At(x0), settings, f, |_| true)
}

/// One curvature pair: a step `s`, the gradient change `y` along it and
/// `1 / sᵀy`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvaturePair {
    /// The step.
    pub s: Vec<f64>,
    /// The gradient's change over it.
    pub y: Vec<f64>,
    /// `1 / sᵀy`.
    pub rho: f64,
}

/// An accepted point whose gradient is not evaluated yet (module doc): the
/// step to it and the gradient before it, which make its curvature pair
/// once its gradient is known.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingGradient {
    /// The accepted step.
    pub step: Vec<f64>,
    /// The gradient at the point the step started from.
    pub previous: Vec<f64>,
}

/// Everything an L-BFGS run carries from one accepted step to the next,
/// so that a checkpointed run continues exactly where it stopped: the
/// point, its loss and gradient, the curvature pairs, the evaluations
/// used, whether the next line search is a first one (allowed to grow its
/// step), and the count of small gains in a row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbfgsState {
    /// The current point.
    pub x: Vec<f64>,
    /// Its loss.
    pub loss: f64,
    /// Its gradient (empty while [`LbfgsState::pending`]).
    pub grad: Vec<f64>,
    /// The point's gradient is still to be evaluated (module doc); absent
    /// from checkpoints written before gradients could wait (none).
    #[serde(default)]
    pub pending: Option<PendingGradient>,
    /// The most recent curvature pairs, oldest first.
    pub pairs: Vec<CurvaturePair>,
    /// Evaluations used so far, the start's included.
    pub evaluations: u32,
    /// The next line search may grow its first step.
    pub first: bool,
    /// Accepted steps in a row that gained less than the tolerance.
    pub small_steps: u32,
    /// Evaluations whose gradient the run did not keep: line-search
    /// trials refused, or passed over for a better one. Each paid for an
    /// adjoint that was thrown away (docs/benchmarks.md § Fit); absent
    /// from checkpoints written before it was counted (0).
    #[serde(default)]
    pub unused_gradients: u32,
    /// Evaluations that computed a gradient (a backward pass each), the
    /// start's and the accepted points' evaluated again included; absent
    /// from checkpoints written before it was counted (0).
    #[serde(default)]
    pub gradients: u32,
    /// Accepted points evaluated again for their gradient (a repeated
    /// forward each, outside the cap): forwards are `evaluations` plus
    /// these. Absent from checkpoints written before it was counted (0).
    #[serde(default)]
    pub reevaluations: u32,
    /// The length of the last accepted step: where a search along the
    /// gradient after the curvature misled one starts (module doc).
    /// Absent before the run's first step (and from checkpoints written
    /// before it was kept: the first step's length then).
    #[serde(default)]
    pub last_step: Option<f64>,
    /// Curvature pairs this run measured itself. The model's test of
    /// convergence waits for one: pairs handed in by a warm start describe
    /// another run's loss, and may claim a curvature this one does not
    /// have. Absent from checkpoints written before it was counted (0:
    /// the test waits for the run's next pair).
    #[serde(default)]
    pub measured_pairs: u32,
}

impl LbfgsState {
    /// The state of a run just started at `x`, of loss `loss` and gradient
    /// `grad`: one evaluation (with its gradient), no pairs, no step yet.
    pub fn started(x: Vec<f64>, loss: f64, grad: Vec<f64>) -> Self {
        Self {
            x,
            loss,
            grad,
            pending: None,
            pairs: Vec::new(),
            evaluations: 1,
            first: true,
            small_steps: 0,
            unused_gradients: 0,
            gradients: 1,
            reevaluations: 0,
            last_step: None,
            measured_pairs: 0,
        }
    }
}

/// Where a run starts.
#[derive(Clone, Debug, PartialEq)]
pub enum LbfgsStart<'a> {
    /// From a point (evaluated first).
    At(&'a [f64]),
    /// From a checkpointed run's state, as it was after an accepted step.
    Resume(LbfgsState),
}

/// The L-BFGS solver: its settings (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Lbfgs {
    /// How the run is bounded.
    pub settings: LbfgsSettings,
}

impl Lbfgs {
    /// The state at `start`: a point is evaluated (`Ok(None)` when it is
    /// unusable), a checkpointed state taken as it is.
    pub fn start<O: Objective + ?Sized>(
        &self,
        objective: &mut O,
        start: LbfgsStart<'_>,
    ) -> Result<Option<LbfgsState>, O::Error> {
        Ok(match start {
            LbfgsStart::At(x0) => objective
                .evaluate(x0)?
                .map(|(loss, grad)| LbfgsState::started(x0.to_vec(), loss, grad)),
            LbfgsStart::Resume(state) => Some(state),
        })
    }

    /// The search direction `−H·g` by the two-loop recursion (Nocedal &
    /// Wright alg. 7.4), the gradient itself at the first step's length
    /// when the curvature does not give a descent direction; with the
    /// slope along it. May drop the pairs (a restart).
    fn direction(&self, state: &mut LbfgsState, gnorm: f64) -> (Vec<f64>, f64) {
        let grad = &state.grad;
        let mut q = grad.clone();
        let mut alphas = Vec::with_capacity(state.pairs.len());
        for p in state.pairs.iter().rev() {
            let a = p.rho * dot(&p.s, &q);
            q.iter_mut().zip(&p.y).for_each(|(qi, yi)| *qi -= a * yi);
            alphas.push(a);
        }
        let along_gradient = state.last_step.unwrap_or(self.settings.first_step) / gnorm;
        let gamma = state
            .pairs
            .last()
            .map_or(along_gradient, |p| dot(&p.s, &p.y) / dot(&p.y, &p.y));
        q.iter_mut().for_each(|qi| *qi *= gamma);
        for (p, a) in state.pairs.iter().zip(alphas.iter().rev()) {
            let b = p.rho * dot(&p.y, &q);
            q.iter_mut()
                .zip(&p.s)
                .for_each(|(qi, si)| *qi += (a - b) * si);
        }
        let mut d: Vec<f64> = q.iter().map(|v| -v).collect();
        let mut slope = dot(grad, &d);
        if slope >= 0.0 {
            // Not a descent direction (noise in the gradient): restart.
            state.pairs.clear();
            d = grad.iter().map(|g| -g * along_gradient).collect();
            slope = dot(grad, &d);
        }
        (d, slope)
    }

    /// Backtracking along `d` from the state's point (Nocedal & Wright
    /// alg. 3.1); the first step may also grow while it keeps paying,
    /// since its length is only a guess. The best point that decreased
    /// the loss enough, if any.
    /// The accepted point comes with its gradient when its trial computed
    /// it (module doc).
    #[allow(clippy::type_complexity)]
    fn line_search<O: Objective + ?Sized>(
        &self,
        objective: &mut O,
        state: &mut LbfgsState,
        d: &[f64],
        slope: f64,
    ) -> Result<Option<(Vec<f64>, f64, Option<Vec<f64>>)>, O::Error> {
        let settings = &self.settings;
        let mut t = 1.0;
        let mut accepted: Option<(Vec<f64>, f64, Option<Vec<f64>>)> = None;
        let mut with_gradient = 0u32;
        while state.evaluations < settings.max_evaluations {
            // A search along the gradient after a step (a restart at the
            // last step's length) whose first trial cannot gain the
            // tolerance even to first order is not tried: the point is as
            // low as steps of the run's scale can take it.
            if state.first
                && state.last_step.is_some()
                && -slope * t < settings.relative_tolerance * state.loss.abs()
            {
                break;
            }
            let trial: Vec<f64> = state
                .x
                .iter()
                .zip(d)
                .enumerate()
                .map(|(i, (xi, di))| {
                    let v = xi + t * di;
                    settings
                        .bounds
                        .get(i)
                        .map_or(v, |&(lo, hi)| v.clamp(lo, hi))
                })
                .collect();
            if trial == state.x {
                // Projected onto the point itself: nothing left to move.
                break;
            }
            // The unit step of a search that stops at its first
            // acceptance is the one usually kept: its gradient is worth
            // computing with it, unless the run could not use it.
            let likely_kept = !state.first
                && t == 1.0
                && (settings.eager_gradient || state.evaluations + 1 < settings.max_evaluations);
            let value = if likely_kept {
                objective
                    .evaluate(&trial)?
                    .map(|(loss, grad)| (loss, Some(grad)))
            } else {
                objective.measure(&trial)?
            };
            state.evaluations += 1;
            if let Some((_, Some(_))) = &value {
                with_gradient += 1;
                state.gradients += 1;
            }
            log::debug!(
                "line search from loss {:.6e} (slope {slope:.3e}): t {t} gives {:?}",
                state.loss,
                value.as_ref().map(|(l, _)| *l)
            );
            match value {
                Some((l, g)) if l.is_finite() && l <= state.loss + 1e-4 * t * slope => {
                    let better = accepted.as_ref().is_none_or(|(_, best, _)| l < *best);
                    if better {
                        accepted = Some((trial, l, g));
                    }
                    if state.first && better && state.evaluations < settings.max_evaluations {
                        t *= 2.0;
                        continue;
                    }
                    break;
                }
                _ if accepted.is_some() => break,
                refused => {
                    t = shorter_step(t, state.loss, slope, refused.map(|(l, _)| l));
                    // Not even the first-order gain of the next trial (an
                    // upper bound where the loss is convex along `d`)
                    // reaches the tolerance: the direction is spent.
                    if -slope * t < settings.relative_tolerance * state.loss.abs() {
                        break;
                    }
                }
            }
        }
        let kept = accepted.as_ref().is_some_and(|(_, _, g)| g.is_some());
        state.unused_gradients += with_gradient - u32::from(kept);
        Ok(accepted)
    }

    /// Evaluates the pending gradient of the state's point, if any
    /// (module doc), and adds its curvature pair. `false` when that
    /// evaluation finds the point unusable (the run cannot go on from it).
    fn complete<O: Objective + ?Sized>(
        &self,
        objective: &mut O,
        state: &mut LbfgsState,
    ) -> Result<bool, O::Error> {
        let Some(pending) = state.pending.take() else {
            return Ok(true);
        };
        let Some((_, grad)) = objective.evaluate(&state.x)? else {
            state.pending = Some(pending);
            return Ok(false);
        };
        state.reevaluations += 1;
        state.gradients += 1;
        self.add_pair(state, pending.step, &grad, &pending.previous);
        state.grad = grad;
        Ok(true)
    }

    /// Keeps the curvature pair of `step`, over which the gradient went
    /// from `before` to `after`, when its curvature is positive.
    fn add_pair(&self, state: &mut LbfgsState, s: Vec<f64>, after: &[f64], before: &[f64]) {
        let y: Vec<f64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > 1e-12 * dot(&s, &s).sqrt() * dot(&y, &y).sqrt() {
            state.pairs.push(CurvaturePair {
                s,
                y,
                rho: 1.0 / sy,
            });
            state.measured_pairs += 1;
            if state.pairs.len() > self.settings.memory {
                state.pairs.remove(0);
            }
        }
    }
}

/// The next, shorter trial after the step `t` was refused (Nocedal &
/// Wright § 3.5): the minimum of the parabola through the point's loss
/// `f0`, its `slope` along the direction and the refused trial's `loss`,
/// kept within [t/4, t/2]: a loss that is no parabola along the direction
/// (8-bit frames, contact) would otherwise send the search to steps too
/// short to gain anything; half the step when the trial was unusable (a blow-up says
/// nothing of the loss's shape).
fn shorter_step(t: f64, f0: f64, slope: f64, loss: Option<f64>) -> f64 {
    match loss.filter(|l| l.is_finite()) {
        Some(l) => {
            let curvature = l - f0 - slope * t;
            let minimum = if curvature > 0.0 {
                -slope * t * t / (2.0 * curvature)
            } else {
                0.5 * t
            };
            minimum.clamp(0.25 * t, 0.5 * t)
        }
        None => 0.5 * t,
    }
}

impl<O: Objective + ?Sized> Solver<O> for Lbfgs {
    type State = LbfgsState;

    /// One accepted step (module doc). The run ends converged after two
    /// small gains in a row, at a zero gradient, when the curvature's model
    /// expects a small gain of its next step, or when not even a short
    /// step along the gradient lowers the loss; unconverged when the
    /// evaluations run out.
    fn next_iteration(
        &mut self,
        objective: &mut O,
        state: &mut LbfgsState,
    ) -> Result<Iteration, O::Error> {
        // Two small gains in a row: one alone may be a short step along a
        // poor first direction.
        if state.small_steps >= 2 {
            return Ok(Iteration::Ended { converged: true });
        }
        while state.evaluations < self.settings.max_evaluations {
            if !self.complete(objective, state)? {
                return Ok(Iteration::Ended { converged: false });
            }
            let gnorm = dot(&state.grad, &state.grad).sqrt();
            if gnorm == 0.0 {
                return Ok(Iteration::Ended { converged: true });
            }
            let (d, slope) = self.direction(state, gnorm);
            // The model's expected gain ends the run only once the model
            // holds a pair of this run's own loss (a warm start's pairs
            // are another loss's; module doc).
            if state.measured_pairs > 0
                && !state.pairs.is_empty()
                && -slope < self.settings.relative_tolerance * state.loss.abs()
            {
                return Ok(Iteration::Ended { converged: true });
            }
            let accepted = self.line_search(objective, state, &d, slope)?;
            state.first = false;
            let Some((x_new, l_new, g_new)) = accepted else {
                if state.pairs.is_empty() {
                    // Not even a short step along the gradient lowers the
                    // loss: a minimum, as far as the loss's noise lets one
                    // tell.
                    return Ok(Iteration::Ended {
                        converged: state.evaluations < self.settings.max_evaluations,
                    });
                }
                // The curvature misled the search: start again from the
                // gradient at a fresh scale.
                state.pairs.clear();
                state.first = true;
                continue;
            };
            let s: Vec<f64> = x_new.iter().zip(&state.x).map(|(a, b)| a - b).collect();
            state.last_step = Some(dot(&s, &s).sqrt());
            let gain = (state.loss - l_new) / state.loss.abs().max(f64::MIN_POSITIVE);
            let previous = std::mem::take(&mut state.grad);
            match g_new {
                Some(g) => {
                    self.add_pair(state, s, &g, &previous);
                    state.grad = g;
                }
                None => state.pending = Some(PendingGradient { step: s, previous }),
            }
            state.x = x_new;
            state.loss = l_new;
            state.small_steps = if gain < self.settings.relative_tolerance {
                state.small_steps + 1
            } else {
                0
            };
            if self.settings.eager_gradient && !self.complete(objective, state)? {
                return Ok(Iteration::Ended { converged: false });
            }
            return Ok(Iteration::Taken);
        }
        Ok(Iteration::Ended { converged: false })
    }
}

/// [`minimise`] telling `accepted_step` of the run's state after every
/// accepted step (checkpoint it to continue later with
/// [`LbfgsStart::Resume`]); `false` from it stops the run there (not
/// converged).
pub fn minimise_observed<E>(
    start: LbfgsStart<'_>,
    settings: &LbfgsSettings,
    mut f: impl FnMut(&[f64]) -> Result<Evaluated, E>,
    mut accepted_step: impl FnMut(&LbfgsState) -> bool,
) -> Result<Option<LbfgsResult>, E> {
    let mut solver = Lbfgs {
        settings: settings.clone(),
    };
    let Some(mut state) = solver.start(&mut f, start)? else {
        return Ok(None);
    };
    let ending = execute(&mut solver, &mut f, &mut state, |_, s| {
        if accepted_step(s) {
            Control::Continue
        } else {
            Control::Stop
        }
    })?;
    Ok(Some(LbfgsResult {
        x: state.x,
        loss: state.loss,
        evaluations: state.evaluations,
        converged: ending == Ending::Ended { converged: true },
    }))
}
