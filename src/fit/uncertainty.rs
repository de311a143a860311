//! A fit's error bars from its data (docs/design.md § Error bars): what
//! [`super::uncertainty_estimate`] found at the optimum, kept in the
//! fit's state, written to `fit.json` and, per driver, to
//! `drivers.safetensors` and `fitted.ply` (`youngs_log10_std`).
//!
//! Every standard error comes from the curvature of the image loss alone:
//! the smoothness terms (TV) are a regulariser, not a measurement, so they
//! neither shrink an error bar nor pin a driver. Where the frames do not
//! constrain a value, it has no standard error (`None`), and per driver
//! the spread of [`unconstrained_log10_std`] stands in for it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::params::ParamMap;
use crate::solve::covariance::uniform_std;

/// How a group of parameters got its error bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CurvatureMethod {
    /// The whole Hessian by finite differences of the exact gradients
    /// ([`HessianDifferences`]),
    /// jointly with the other group's when it has few parameters too:
    /// standard errors with the correlations accounted for.
    Hessian,
    /// The Hessian's diagonal, estimated from random-sign probes (a
    /// per-driver field): each value's error with its neighbours held, a
    /// sensitivity rather than a marginal error.
    Diagonal,
    /// The velocity's own Hessian on the last velocity stage's loss (its
    /// frames, E and ν held), by finite differences of the exact
    /// gradients: taken when the joint Hessian on the stiffness stage's
    /// frames left a velocity parameter without an error bar. On a drop
    /// the contact makes that loss rough in the spin, while the free fall
    /// the velocity stage fits pins every component; these errors are
    /// conditional on E and carry no correlation with it.
    VelocityStage,
    /// The stiffness unknowns' block of the joint Hessian (E and a fitted
    /// ν, the velocity held), taken when the joint Hessian is not positive
    /// definite at the fitted point and left an E without an error bar
    /// while that block is: the velocity, fitted on its own stage's frames,
    /// is then not at the stiffness frames' optimum, and the joint Hessian
    /// can curve down along it. These errors are conditional on the
    /// velocity and carry no correlation with it; no gradient beyond the
    /// joint Hessian's.
    StiffnessBlock,
}

/// Which finite differences of the exact gradients the joint Hessian was
/// taken by (docs/design.md § Error bars).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HessianDifferences {
    /// One-sided, `(g(x + h e_j) − g(x))/h`: `n` gradients beside the
    /// centre's, kept when they give every parameter a standard error.
    Forward,
    /// Central, `(g(x + h e_j) − g(x − h e_j))/2h`: `n` more, taken where
    /// the forward Hessian left a parameter without one (its `O(h)` error
    /// had made a direction look flat or curved downwards).
    Central,
}

/// The correlations between the parameters of the joint Hessian.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Correlations {
    /// The parameters, in the matrix's order (`log10 E[i]`, then
    /// `v0[i]`, then a fitted Poisson's ratio's `z of ν[i]`).
    pub names: Vec<String>,
    /// The correlation matrix, row-major (0 with an unconstrained one).
    pub matrix: Vec<Vec<f64>>,
    /// Per parameter, Newton's step `−(H⁻¹g)` from the fitted value
    /// (parameter units; `None` where unconstrained): how far the optimum
    /// of the loss's local quadratic still is. Where it is not small
    /// against the standard error, the fit stopped short of its loss's
    /// optimum (the stages fit E and v0 in turn, and stop at a loss
    /// tolerance), and the distance to the truth is not the error bar's
    /// alone.
    pub newton_step: Vec<Option<f64>>,
}

/// Newton's step in the stiffness stage's unknowns alone (every `log10 E`
/// parameter, and a fitted Poisson's ratio's `z`), the velocity held: `δ =
/// −H_ss⁻¹ g_s` from the joint Hessian's block and the exact gradient at
/// the fitted values. The stiffness stage ends where L-BFGS's model of
/// the curvature, from a few pairs of steps, expects no more gain; the
/// measured Hessian may put the loss's optimum this far on, and the fit
/// tries the step ([`super::exact_step`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StiffnessNewtonStep {
    /// Per `log10 E` parameter, the step (decades).
    pub log10_youngs: Vec<f64>,
    /// Per fitted Poisson's ratio parameter, the step in its `z` (empty
    /// when ν is held).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poisson_z: Vec<f64>,
    /// The decrease of the image loss the quadratic model predicts for it.
    pub predicted_decrease: f64,
}

/// A fit's error bars (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FitUncertainty {
    /// The frames the curvature was taken on (the last stiffness stage's,
    /// else the last stage's), as frame indices.
    pub frames: Vec<usize>,
    /// The residuals `N`: colour values (3 per pixel) of those frames and
    /// views where the fitted render and the reference differ in 8 bits;
    /// a pixel both show the same (background the object never reaches)
    /// carries neither signal nor noise.
    pub residuals: u64,
    /// The image loss at the optimum (the stage's weights, no TV).
    pub image_loss: f64,
    /// `s = 2 · image_loss / (N − n)`, with `n` the fitted parameters:
    /// the covariance is `s · H⁻¹`.
    pub scale: f64,
    /// Gradient evaluations the estimate took.
    pub evaluations: u32,
    /// How the `log10 E` parameters got theirs (absent: E was not
    /// fitted, and its list is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub youngs_method: Option<CurvatureMethod>,
    /// How the velocity parameters got theirs (absent: held, not fitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub velocity_method: Option<CurvatureMethod>,
    /// Per `log10 E` parameter: its standard error in decades; `None`
    /// where the frames do not constrain it.
    pub youngs_log10_std: Vec<Option<f64>>,
    /// Per velocity parameter: its standard error (world units/s; rad/s
    /// for a rigid field's angular part); `None` where not constrained.
    pub velocity_std: Vec<Option<f64>>,
    /// Per fitted Poisson's ratio parameter: the standard error of ν
    /// itself (dimensionless), from `z`'s through the sigmoid's slope at
    /// the fitted value ([`super::poisson`]); empty when ν was held at
    /// `material.poisson_ratio`, `None` where not constrained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poisson_std: Vec<Option<f64>>,
    /// With [`CurvatureMethod::Diagonal`] for E: per parameter, whether
    /// the frames pin it against the regulariser: the largest pull of the
    /// TV term at its weight moves it by less than one standard error.
    /// Where it does not, the fitted value is the regulariser's guess.
    /// With [`CurvatureMethod::Hessian`]: whether it has an error bar.
    pub youngs_constrained: Vec<bool>,
    /// The correlations of the joint Hessian (absent when both groups are
    /// per-driver fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlations: Option<Correlations>,
    /// Which differences the joint Hessian was taken by (absent without
    /// one, or in a `fit.json` of a physfit that took central ones only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differences: Option<HessianDifferences>,
    /// Newton's step in E (and a fitted ν) alone from the fitted values
    /// (absent where the block of the Hessian is not positive definite,
    /// an E is held at an end of its range, or E is a per-driver field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stiffness_newton_step: Option<StiffnessNewtonStep>,
}

/// What stands in for the error bar of a driver the frames do not
/// constrain: the spread of a value anywhere in `material.log10_youngs_range`
/// ([`uniform_std`]), since its E may be anywhere the fit allows.
pub fn unconstrained_log10_std(range: [f64; 2]) -> f64 {
    uniform_std(range)
}

impl FitUncertainty {
    /// The standard error of every driver's `log10 E` through `map` (one
    /// value per driver, anchored ones included), capped at
    /// [`unconstrained_log10_std`] of `range`, which also stands for a
    /// driver whose parameter is unconstrained or not the frames' (module
    /// doc). With the Hessian the parameters' correlations are used
    /// (`σ_d² = Σ_jk M_dj M_dk Σ_jk`).
    pub fn driver_youngs_log10_std(&self, map: &ParamMap, range: [f64; 2]) -> Vec<f64> {
        let cap = unconstrained_log10_std(range);
        let n = self.youngs_log10_std.len();
        let correlation = |j: usize, k: usize| -> f64 {
            if j == k {
                return 1.0;
            }
            match (self.youngs_method, &self.correlations) {
                (Some(CurvatureMethod::Hessian), Some(c)) => c.matrix[j][k],
                _ => 0.0,
            }
        };
        let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); map.drivers];
        for e in &map.entries {
            rows[e.driver as usize].push((e.param as usize, e.weight));
        }
        rows.iter()
            .map(|row| {
                let mut variance = 0.0;
                for &(j, wj) in row {
                    for &(k, wk) in row {
                        let (Some(Some(sj)), Some(Some(sk))) =
                            (self.youngs_log10_std.get(j), self.youngs_log10_std.get(k))
                        else {
                            return cap;
                        };
                        if j >= n
                            || k >= n
                            || !self.youngs_constrained.get(j).copied().unwrap_or(false)
                        {
                            return cap;
                        }
                        variance += wj * wk * sj * sk * correlation(j, k);
                    }
                }
                variance.max(0.0).sqrt().min(cap)
            })
            .collect()
    }
}
