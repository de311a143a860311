//! One iteration of a solver, and the executor loop that runs them.
//!
//! A solver keeps everything that changes between its iterations in its
//! [`Solver::State`], so that the observer between two iterations sees
//! the whole run (a checkpoint of the state continues it exactly), and
//! decides itself when it is done (its stopping rules: an evaluation
//! budget, a flattened loss, a grid run through). The executor adds the
//! one rule every run shares: the observer may stop it after any
//! iteration.

use super::objective::Objective;

/// What the observer of [`execute`] says after an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Continue,
    /// Stop after this iteration (Ctrl-C): the state is consistent.
    Stop,
}

/// What one call of [`Solver::next_iteration`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iteration {
    /// The state moved on by one iteration (an accepted step, a scanned
    /// point): the observer is told.
    Taken,
    /// The run is over; `converged` when by the solver's convergence
    /// rule, not because its budget ran out.
    Ended {
        /// The loss stopped falling (not: the budget ran out).
        converged: bool,
    },
}

/// How [`execute`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The solver ended the run.
    Ended {
        /// By its convergence rule.
        converged: bool,
    },
    /// The observer stopped it.
    Stopped,
}

/// A minimiser that advances its state one iteration at a time.
pub trait Solver<O: Objective + ?Sized> {
    /// Everything that changes between iterations.
    type State;

    /// One iteration from `state` (which it updates), evaluating
    /// `objective` as often as the iteration needs, or the end of the run.
    fn next_iteration(
        &mut self,
        objective: &mut O,
        state: &mut Self::State,
    ) -> Result<Iteration, O::Error>;
}

/// Runs `solver` from `state` until it ends the run or `observe` (told of
/// every iteration taken, with the objective, to read what it kept of
/// its evaluations) stops it.
pub fn execute<O, S>(
    solver: &mut S,
    objective: &mut O,
    state: &mut S::State,
    mut observe: impl FnMut(&O, &S::State) -> Control,
) -> Result<Ending, O::Error>
where
    O: Objective + ?Sized,
    S: Solver<O>,
{
    loop {
        match solver.next_iteration(objective, state)? {
            Iteration::Taken => {
                if observe(objective, state) == Control::Stop {
                    return Ok(Ending::Stopped);
                }
            }
            Iteration::Ended { converged } => return Ok(Ending::Ended { converged }),
        }
    }
}
