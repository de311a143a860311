//! What the exact-gradient step did ([`super::exact_step`]): kept in the
//! fit's state, so that a resumed fit does not take it twice, and written
//! to `fit.json`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the exact-gradient step did: Newton's step in E (and a fitted
/// ν) from the error bars' exact gradient and Hessian, the velocity held,
/// kept when it lowered the last stiffness stage's loss
/// (src/fit/exact_step.rs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExactStep {
    /// Per `log10 E` parameter, the step taken, all Newton steps together
    /// (decades; zeros when refused).
    pub log10_youngs: Vec<f64>,
    /// Per fitted Poisson's ratio parameter, the step taken in its `z`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poisson_z: Vec<f64>,
    /// The fraction of the first Newton step kept: 1, 0.5, or 0 when
    /// neither lowered the loss.
    pub fraction: f64,
    /// The last stiffness stage's loss before the first step, then after
    /// the last (the same when refused).
    pub loss: [f64; 2],
    /// The image loss's decrease the quadratic model predicted for the
    /// whole first step.
    pub predicted_decrease: f64,
    /// Newton steps kept: 0 when refused, more than 1 when further steps
    /// from fresh Hessians followed the first (0 in a file of an earlier
    /// physfit, which took one).
    #[serde(default)]
    pub steps: u32,
}
