//! The truth of a twin experiment on the fit's own drivers: simulated once
//! on the one forward path, so that the fit can say how far its result is
//! from the truth and which drivers the truth deforms (the ones whose E the
//! video can reveal, [`deforming_drivers`]).

use super::recovery::{deforming_drivers, Recovery};
use crate::drive::DriverSet;
use crate::gpu::GpuContext;
use crate::scene::Scene;
use crate::synth::{simulate_truth, SynthError, Truth, TruthValues};

/// The truth on the fit's drivers, with the drivers that deform in its
/// rollout.
#[derive(Clone, Debug)]
pub struct TruthCheck {
    /// Per-driver truth values.
    pub values: TruthValues,
    /// Per driver: deforms in the truth ([`deforming_drivers`]).
    pub deforming: Vec<bool>,
}

impl TruthCheck {
    /// Simulates `truth` on `drivers` of `scene` through frame `frames − 1`
    /// and marks the drivers that deform; `go_on` may stop it between
    /// frames ([`simulate_truth`], [`SynthError::Stopped`]).
    pub fn simulate(
        ctx: &GpuContext,
        scene: &Scene,
        drivers: &DriverSet,
        truth: &Truth,
        frames: usize,
        go_on: &mut dyn FnMut(usize) -> bool,
    ) -> Result<Self, SynthError> {
        let (renderer, values) = simulate_truth(ctx, scene, drivers, truth, frames, go_on)?;
        let states = renderer.read_states(ctx)?;
        Ok(Self {
            values,
            deforming: deforming_drivers(&states),
        })
    }

    /// The recovery of per-driver `log10_youngs`, `velocity` and
    /// `poisson` (ν, fitted or held; measured when the truth gives ν).
    pub fn recovery(
        &self,
        drivers: &DriverSet,
        log10_youngs: &[f64],
        velocity: &[f64],
        poisson: &[f64],
    ) -> Recovery {
        let recovery = Recovery::measure(
            log10_youngs,
            velocity,
            &self.values.log10_youngs,
            &self.values.velocity,
            &drivers.anchored,
            &self.deforming,
        );
        match self.values.poisson_ratio {
            Some(truth) => recovery.with_poisson(poisson, truth, &drivers.anchored),
            None => recovery,
        }
    }
}
