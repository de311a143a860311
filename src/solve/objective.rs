//! The problem as a solver sees it: `x ↦` its loss and gradient, or
//! "unusable". A problem decides what makes a point unusable (the fit: the
//! simulation blew up; the alignment: a non-positive gain), and
//! [`usable`] adds the rule every problem shares: a non-finite loss or
//! gradient is unusable too. Solvers never see a NaN.

/// What one evaluation returns: the loss and its gradient, or `None` for
/// an unusable point. A solver that needs no gradient (the grid scan) is
/// given an empty one.
pub type Evaluated = Option<(f64, Vec<f64>)>;

/// A problem to minimise: `x ↦` [`Evaluated`]; errors other than an
/// unusable point pass through the solver to its caller.
pub trait Objective {
    /// What an evaluation fails with.
    type Error;

    /// The loss and gradient at `x`, or `Ok(None)` when `x` is unusable.
    fn evaluate(&mut self, x: &[f64]) -> Result<Evaluated, Self::Error>;
}

impl<E, F> Objective for F
where
    F: FnMut(&[f64]) -> Result<Evaluated, E>,
{
    type Error = E;

    fn evaluate(&mut self, x: &[f64]) -> Result<Evaluated, E> {
        self(x)
    }
}

/// `(loss, grad)` when both are finite, else `None` (module doc).
pub fn usable(loss: f64, grad: Vec<f64>) -> Evaluated {
    if loss.is_finite() && grad.iter().all(|g| g.is_finite()) {
        Some((loss, grad))
    } else {
        None
    }
}
