//! What the discretisation check found (src/fit/discretisation_check.rs,
//! docs/design.md § Error bars): kept in the fit's state and written to
//! fit.json.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The shift (decades) below which every fitted E counts as converged in
/// its discretisation.
pub const DISCRETISATION_TOLERANCE: f64 = 0.05;

/// The refinement's factor on the substeps per frame.
pub const SUBSTEP_REFINEMENT: u32 = 2;

/// What the check found (module doc); kept in the fit's state and written
/// to fit.json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiscretisationCheck {
    /// Substeps per frame the stages fitted at.
    pub substeps: u32,
    /// Substeps per frame of the refit.
    pub refined_substeps: u32,
    /// Per E parameter (in fit.json's `youngs_parameters` order), its
    /// `log10 E` refitted at `refined_substeps`.
    pub refined_log10_youngs: Vec<f64>,
    /// Per E parameter, refined minus fitted `log10 E` (decades).
    pub shift: Vec<f64>,
    /// The largest |shift|.
    pub largest_shift: f64,
    /// [`DISCRETISATION_TOLERANCE`].
    pub tolerance: f64,
    /// Every |shift| is below the tolerance.
    pub converged: bool,
    /// The loss at the fitted values at `refined_substeps`, then at the
    /// refitted ones (the last stiffness stage's frames).
    pub loss: [f64; 2],
    /// Evaluations the refit took.
    pub evaluations: u32,
    /// Its wall seconds.
    pub seconds: f64,
}
