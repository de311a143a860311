//! Minimisers apart from the problems they minimise (docs/design.md § Loss,
//! parameters, fit; the split of argmin's `core`: a problem, a solver that
//! takes one iteration of it at a time, an executor that runs the
//! iterations and asks an observer between them).
//!
//! - [`objective`]: the problem as a solver sees it, `x ↦` loss and
//!   gradient, or "unusable" (the simulation blew up, a value came out
//!   non-finite), which every solver treats the same way: as a step too
//!   long;
//! - [`solver`]: one iteration of a solver ([`Solver`]) and the executor
//!   loop around it ([`execute`]): the solver's own stopping rules, then
//!   the observer's, which is where a caller checkpoints the state;
//! - the solvers: [`adam`] (a per-parameter rate with warm-up and decay,
//!   for many parameters), [`lbfgs`] (bounded, for few parameters, with a
//!   state that resumes exactly) and [`grid_scan`] (a one-dimensional
//!   grid refined by a parabola);
//! - after a solver: the curvature at its optimum from differences of the
//!   exact gradients ([`curvature`]) and the covariance it gives
//!   ([`covariance`]), for the fit's error bars.
//!
//! The fit's stages and its coarse scan ([`crate::fit`]) and the view
//! alignment ([`crate::align`]) all minimise through here.
//!
//! Why not argmin itself: its L-BFGS has no bounds (the fit projects
//! `log10 E` into `material.log10_youngs_range`, the alignment keeps its
//! chart's gains positive), its line searches do not accept an unusable
//! trial as a step too long, and its checkpoints serialise the whole
//! executor rather than a state whose resumed run is bit for bit the
//! uninterrupted one, which the fit's checkpoints need.

pub mod adam;
pub mod covariance;
pub mod curvature;
pub mod grid_scan;
pub mod lbfgs;
pub mod newton;
pub mod objective;
pub mod solver;
pub mod symmetric_eigen;

pub use adam::{Adam, AdamSolver, Schedule};
#[cfg(feature = "reference")]
pub use adam::AdamRun;
pub use grid_scan::{GridScan, GridScanState};
pub use lbfgs::{Lbfgs, LbfgsSettings, LbfgsStart, LbfgsState};
pub use objective::{usable, Evaluated, Measured, Objective};
pub use solver::{execute, Control, Ending};
#[cfg(feature = "reference")]
pub use solver::{Iteration, Solver};
