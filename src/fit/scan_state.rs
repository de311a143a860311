//! What a fit's coarse scan ([`super::scan`]) has found so far: in the
//! fit's state, so that a checkpoint holds it and a resumed scan continues
//! at its next candidate.

use serde::{Deserialize, Serialize};

/// One scanned value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScanPoint {
    /// The uniform `log10 E` (normalised units).
    pub log10_youngs: f64,
    /// Its velocity parameters.
    pub velocity: Vec<f64>,
    /// The loss on the stiffness stage's frames (∞ when it blew up).
    pub loss: f64,
    /// Evaluations it took: its velocity fit's and its loss's (0 in a
    /// checkpoint of an earlier physfit, which did not count them).
    #[serde(default)]
    pub evaluations: u32,
}

/// The scan so far (in the fit's state, so a checkpoint holds it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScanState {
    /// Every candidate scanned, in order (the refinement last).
    pub points: Vec<ScanPoint>,
}

impl ScanState {
    /// The best point so far.
    pub fn best(&self) -> Option<&ScanPoint> {
        self.points
            .iter()
            .filter(|p| p.loss.is_finite())
            .min_by(|a, b| a.loss.total_cmp(&b.loss))
    }
}
