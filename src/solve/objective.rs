//! The problem as a solver sees it: `x ↦` its loss and gradient, or
//! "unusable". A problem decides what makes a point unusable (the fit: the
//! simulation blew up; the alignment: a non-positive gain), and
//! [`usable`] adds the rule every problem shares: a non-finite loss or
//! gradient is unusable too. Solvers never see a NaN.

/// What one evaluation returns: the loss and its gradient, or `None` for
/// an unusable point. A solver that needs no gradient (the grid scan) is
/// given an empty one.
pub type Evaluated = Option<(f64, Vec<f64>)>;

/// What a loss-first evaluation returns ([`Objective::measure`]): the
/// loss, with the gradient when the problem computed it anyway; or `None`
/// for an unusable point.
pub type Measured = Option<(f64, Option<Vec<f64>>)>;

/// A problem to minimise: `x ↦` [`Evaluated`]; errors other than an
/// unusable point pass through the solver to its caller.
pub trait Objective {
    /// What an evaluation fails with.
    type Error;

    /// The loss and gradient at `x`, or `Ok(None)` when `x` is unusable.
    fn evaluate(&mut self, x: &[f64]) -> Result<Evaluated, Self::Error>;

    /// The loss at `x` for a solver that may not need its gradient (a
    /// line-search trial that may be refused). A problem whose gradient
    /// costs a backward pass of its own (the fit: the rasterizer's and the
    /// MPM's adjoints are about half of an evaluation, docs/benchmarks.md §
    /// Cost per evaluation) overrides it to skip that pass and returns no
    /// gradient; by default it is [`Objective::evaluate`], gradient kept,
    /// so a problem whose gradient comes free pays nothing more.
    fn measure(&mut self, x: &[f64]) -> Result<Measured, Self::Error> {
        Ok(self.evaluate(x)?.map(|(loss, grad)| (loss, Some(grad))))
    }
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
