//! Adam with warm-up, exponential decay and gradient-norm clipping: the
//! optimiser of both fit stages (docs/design.md § Loss, parameters, fit; issue
//! 13, "Optimiser").
//!
//! The parameters are few (at most 3 per driver) and live on the host, so
//! the optimiser is plain f64 host code. A step is split in two so that a
//! blown-up simulation can refuse it: [`Adam::propose`] returns the moved
//! parameters and the moments they would leave, without touching `self`;
//! [`Adam::accept`] makes the proposal the state. A rejected step is
//! proposed again from the same state at a smaller rate.

use serde::{Deserialize, Serialize};

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
    /// onto `[bounds.0, bounds.1]` (the log10 E range: the clamp is part of
    /// the optimiser, not of the forward; docs/design.md § Loss, parameters,
    /// fit). `self` is unchanged until [`Adam::accept`].
    pub fn propose(
        &self,
        params: &[f64],
        grad: &[f64],
        rate: f64,
        bounds: Option<(f64, f64)>,
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
            if let Some((lo, hi)) = bounds {
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
