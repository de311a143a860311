//! What a fit's coarse scan ([`super::scan`]) has found so far: in the
//! fit's state, so that a checkpoint holds it and a resumed scan continues
//! at its next candidate.

use serde::{Deserialize, Serialize};

use crate::solve::lbfgs::CurvaturePair;

/// One scanned value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScanPoint {
    /// The uniform `log10 E` (normalised units).
    pub log10_youngs: f64,
    /// The uniform Poisson's ratio of a point of the scan of ν, which
    /// follows E's when ν is fitted; `None` for a point of E's scan (ν at
    /// its start, `material.poisson_ratio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poisson: Option<f64>,
    /// Its velocity parameters.
    pub velocity: Vec<f64>,
    /// The loss on the stiffness stage's frames (∞ when it blew up).
    pub loss: f64,
    /// Evaluations it took: its velocity fit's and its loss's (0 in a
    /// checkpoint of an earlier physfit, which did not count them).
    #[serde(default)]
    pub evaluations: u32,
    /// The curvature pairs its velocity fit ended with, in velocity units
    /// (the scan's L-BFGS coordinates), or the previous candidate's, where
    /// its fit started, when it ended without one; a point of ν's scan has
    /// its E point's. Empty when the velocity was held, or in a checkpoint
    /// of an earlier physfit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub velocity_curvature: Vec<CurvaturePair>,
}

/// The scan so far (in the fit's state, so a checkpoint holds it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScanState {
    /// Every candidate scanned, in order (the refinement last).
    pub points: Vec<ScanPoint>,
}

impl ScanState {
    /// The best point so far, of either scan.
    pub fn best(&self) -> Option<&ScanPoint> {
        best_of(self.points.iter())
    }

    /// The best point of E's scan: where the scan of ν is made.
    pub fn best_youngs(&self) -> Option<&ScanPoint> {
        best_of(self.youngs_points())
    }

    /// The points of E's scan, in order.
    pub fn youngs_points(&self) -> impl Iterator<Item = &ScanPoint> {
        self.points.iter().filter(|p| p.poisson.is_none())
    }

    /// The points of ν's scan, in order.
    pub fn poisson_points(&self) -> impl Iterator<Item = &ScanPoint> {
        self.points.iter().filter(|p| p.poisson.is_some())
    }
}

fn best_of<'a>(points: impl Iterator<Item = &'a ScanPoint>) -> Option<&'a ScanPoint> {
    points
        .filter(|p| p.loss.is_finite())
        .min_by(|a, b| a.loss.total_cmp(&b.loss))
}
