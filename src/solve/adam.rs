//! Adam with warm-up, exponential decay and gradient-norm clipping: the
//! solver of the fit's stages with many parameters (per-driver fields;
//! docs/design.md § Loss, parameters, fit).
//!
//! The parameters are few (at most 3 per driver) and live on the host, so
//! the optimiser is plain f64 host code. A step is split in two so that a
//! blown-up simulation can refuse it: [`Adam::propose`] returns the moved
//! parameters and the moments they would leave, without touching `self`;
//! [`Adam::accept`] makes the proposal the state. A rejected step (an
//! unusable point, [`super::objective`]) is proposed again from the same
//! state at half the rate, at most [`AdamSolver::max_rejections`] times.
//!
//! One [`Solver`] iteration at `x` with gradient `g` (from evaluating `x`):
//! clip `g`, propose `x'` by Adam at the schedule's rate (projected into
//! the bounds), evaluate `x'`. The run ends at the schedule's last
//! iteration, or converged once the warm-up is over and the loss has
//! flattened ([`flattened`]).

use serde::{Deserialize, Serialize};

use super::objective::Objective;
use super::solver::{Iteration, Solver};

/// Adam's exponential decay rate of the first moment (Kingma & Ba 2015, §2).
pub const BETA1: f64 = 0.9;
/// Adam's exponential decay rate of the second moment.
pub const BETA2: f64 = 0.999;
/// Adam's ε, added to `√v̂` so that a parameter without gradient moves 0.
pub const EPSILON: f64 = 1e-8;

/// The learning-rate schedule of one stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Peak rate.
    pub learning_rate: f64,
    /// Iterations of linear warm-up: iteration `i < warmup` uses
    /// `learning_rate · (i + 1) / warmup`.
    pub warmup: u32,
    /// Factor of the peak reached at the last iteration, in (0, 1].
    pub decay: f64,
    /// Iterations of the stage.
    pub iterations: u32,
}

impl Schedule {
    /// The rate of iteration `i` (0-based): linear warm-up to the peak, then
    /// exponential decay from the peak at iteration `warmup` to
    /// `learning_rate · decay` at iteration `iterations − 1`.
    pub fn rate(&self, i: u32) -> f64 {
        if i < self.warmup {
            return self.learning_rate * f64::from(i + 1) / f64::from(self.warmup);
        }
        let last = self.iterations.saturating_sub(1);
        if last <= self.warmup {
            return self.learning_rate;
        }
        let t = f64::from(i.min(last) - self.warmup) / f64::from(last - self.warmup);
        self.learning_rate * self.decay.powf(t)
    }
}

/// Scales `grad` down to norm `max_norm` when it is longer (`max_norm =
/// inf` disables clipping); returns the norm before clipping.
pub fn clip_norm(grad: &mut [f64], max_norm: f64) -> f64 {
    let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
    if norm > max_norm && norm.is_finite() {
        let s = max_norm / norm;
        grad.iter_mut().for_each(|g| *g *= s);
    }
    norm
}

/// Adam's state for one parameter vector: first and second moments and the
/// step count (for the bias corrections). Serialisable for checkpoints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adam {
    /// First moment `m`.
    pub m: Vec<f64>,
    /// Second moment `v`.
    pub v: Vec<f64>,
    /// Steps taken.
    pub t: u32,
}

/// A step [`Adam::propose`]d but not yet accepted.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// The moved parameters, projected into the bounds.
    pub params: Vec<f64>,
    /// The optimiser state after the step.
    pub state: Adam,
}

impl Adam {
    /// A fresh optimiser for `n` parameters.
    pub fn new(n: usize) -> Self {
        Self {
            m: vec![0.0; n],
            v: vec![0.0; n],
            t: 0,
        }
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.m.len()
    }

    /// True for an empty parameter vector.
    pub fn is_empty(&self) -> bool {
        self.m.is_empty()
    }

    /// One Adam step of `params` along `grad` at `rate`, then the projection
    /// of parameter i onto `[bounds[i].0, bounds[i].1]` (the log10 E range:
    /// the clamp is part of the optimiser, not of the forward; docs/design.md
    /// § Loss, parameters, fit); parameters past the end of `bounds` are not
    /// projected (ν's unconstrained z after E's). `self` is unchanged until
    /// [`Adam::accept`].
    pub fn propose(
        &self,
        params: &[f64],
        grad: &[f64],
        rate: f64,
        bounds: &[(f64, f64)],
    ) -> Proposal {
        assert_eq!(params.len(), self.len(), "one parameter per moment");
        assert_eq!(grad.len(), self.len(), "one gradient per parameter");
        let t = self.t + 1;
        let c1 = 1.0 - BETA1.powi(t as i32);
        let c2 = 1.0 - BETA2.powi(t as i32);
        let mut state = Adam {
            m: Vec::with_capacity(self.len()),
            v: Vec::with_capacity(self.len()),
            t,
        };
        let mut moved = Vec::with_capacity(self.len());
        for i in 0..self.len() {
            let m = BETA1 * self.m[i] + (1.0 - BETA1) * grad[i];
            let v = BETA2 * self.v[i] + (1.0 - BETA2) * grad[i] * grad[i];
            let mut p = params[i] - rate * (m / c1) / ((v / c2).sqrt() + EPSILON);
            if let Some(&(lo, hi)) = bounds.get(i) {
                p = p.clamp(lo, hi);
            }
            state.m.push(m);
            state.v.push(v);
            moved.push(p);
        }
        Proposal {
            params: moved,
            state,
        }
    }

    /// Makes an accepted proposal's moments the state.
    pub fn accept(&mut self, proposal: Proposal) -> Vec<f64> {
        *self = proposal.state;
        proposal.params
    }

    /// `√v̂` per parameter: the root of the bias-corrected second moment,
    /// the size of the gradients the parameter has seen (its confidence in
    /// `fitted.ply`; 0 before any step).
    pub fn gradient_scale(&self) -> Vec<f64> {
        if self.t == 0 {
            return vec![0.0; self.len()];
        }
        let c2 = 1.0 - BETA2.powi(self.t as i32);
        self.v.iter().map(|v| (v / c2).sqrt()).collect()
    }
}

/// Iterations over which a run's progress is judged.
pub const CONVERGENCE_WINDOW: usize = 5;

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

/// The Adam solver: a schedule and the rules around a step (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct AdamSolver {
    /// The rate per iteration; its `iterations` cap the run.
    pub schedule: Schedule,
    /// The gradient's norm is clipped to this before a step (`inf`: no
    /// clipping).
    pub grad_clip: f64,
    /// The box of each parameter, in order; those past its end (all, when
    /// empty) are not projected.
    pub bounds: Vec<(f64, f64)>,
    /// Converged when the loss fell by at most this fraction over
    /// [`CONVERGENCE_WINDOW`] iterations (0: never).
    pub tolerance: f64,
    /// Halvings of the rate a step may need before the run fails.
    pub max_rejections: u32,
    /// What the warning of a rejected step names ("round 1 velocity").
    pub label: String,
}

/// An Adam run between two iterations: where it is, its loss and gradient
/// there, the moments, the iterations taken, the losses at the points it
/// stepped from, and how the last step was taken.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamRun {
    /// The current point.
    pub x: Vec<f64>,
    /// Its loss.
    pub loss: f64,
    /// Its gradient.
    pub grad: Vec<f64>,
    /// The moments.
    pub moments: Adam,
    /// Iterations taken (the schedule's index of the next).
    pub iteration: u32,
    /// The loss at each point a step was taken from, oldest first.
    pub losses: Vec<f64>,
    /// The last step: the gradient's norm before clipping, the rate it was
    /// taken at (after any halvings) and the halvings.
    pub last_step: Option<AdamStep>,
}

/// How one Adam step was taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamStep {
    /// The gradient's norm before clipping.
    pub grad_norm: f64,
    /// The rate, after any halvings.
    pub rate: f64,
    /// Steps rejected (halvings) before this one.
    pub rejected: u32,
}

/// A step that stayed unusable after [`AdamSolver::max_rejections`]
/// halvings of the rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepsRejected {
    /// The iteration whose step could not be taken.
    pub iteration: u32,
    /// The halvings tried.
    pub halvings: u32,
}

/// What an Adam run fails with: its objective's error, or a step no rate
/// made usable.
#[derive(Debug)]
pub enum AdamError<E> {
    /// The objective failed.
    Objective(E),
    /// No halving of the rate gave a usable point.
    Rejected(StepsRejected),
}

impl AdamSolver {
    /// The run at `x0` with `moments` (fresh, or a checkpoint's), after
    /// `iteration` iterations whose losses were `losses`: `x0` is
    /// evaluated, `Ok(None)` when it is unusable.
    pub fn start<O: Objective + ?Sized>(
        &self,
        objective: &mut O,
        x0: Vec<f64>,
        moments: Adam,
        iteration: u32,
        losses: Vec<f64>,
    ) -> Result<Option<AdamRun>, O::Error> {
        Ok(objective.evaluate(&x0)?.map(|(loss, grad)| AdamRun {
            x: x0,
            loss,
            grad,
            moments,
            iteration,
            losses,
            last_step: None,
        }))
    }

    /// True when the run has converged: the warm-up is over and the loss
    /// has flattened (the warm-up's small rates move the loss little
    /// whatever remains to gain).
    fn converged(&self, run: &AdamRun) -> bool {
        if run.last_step.is_none()
            || run.iteration < self.schedule.warmup + CONVERGENCE_WINDOW as u32
        {
            return false;
        }
        let mut history = run.losses.clone();
        history.push(run.loss);
        flattened(&history, self.tolerance)
    }
}

/// An [`Objective`] whose errors an Adam run wraps into [`AdamError`].
pub struct AdamObjective<'a, O: ?Sized>(pub &'a mut O);

impl<O: Objective + ?Sized> Objective for AdamObjective<'_, O> {
    type Error = AdamError<O::Error>;

    fn evaluate(&mut self, x: &[f64]) -> Result<super::objective::Evaluated, Self::Error> {
        self.0.evaluate(x).map_err(AdamError::Objective)
    }
}

impl<O: Objective + ?Sized> Solver<AdamObjective<'_, O>> for AdamSolver {
    type State = AdamRun;

    fn next_iteration(
        &mut self,
        objective: &mut AdamObjective<'_, O>,
        run: &mut AdamRun,
    ) -> Result<Iteration, AdamError<O::Error>> {
        if self.converged(run) {
            return Ok(Iteration::Ended { converged: true });
        }
        if run.iteration >= self.schedule.iterations {
            return Ok(Iteration::Ended { converged: false });
        }
        let mut grad = run.grad.clone();
        let grad_norm = clip_norm(&mut grad, self.grad_clip);
        let mut rate = self.schedule.rate(run.iteration);
        let mut rejected = 0;
        let (proposal, (loss, next_grad)) = loop {
            let proposal = run.moments.propose(&run.x, &grad, rate, &self.bounds);
            if let Some(next) = objective.evaluate(&proposal.params)? {
                break (proposal, next);
            }
            rejected += 1;
            if rejected > self.max_rejections {
                return Err(AdamError::Rejected(StepsRejected {
                    iteration: run.iteration,
                    halvings: self.max_rejections,
                }));
            }
            log::warn!(
                "{} iteration {}: the step blew the simulation up; retrying at half the rate ({:.3e})",
                self.label,
                run.iteration,
                rate / 2.0
            );
            rate /= 2.0;
        };
        run.losses.push(run.loss);
        run.x = run.moments.accept(proposal);
        run.loss = loss;
        run.grad = next_grad;
        run.iteration += 1;
        run.last_step = Some(AdamStep {
            grad_norm,
            rate,
            rejected,
        });
        Ok(Iteration::Taken)
    }
}
