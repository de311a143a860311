//! What later stages derive from a [`Scene`]: gravity and the splat
//! centres in normalised box units, the simulator's [`MpmConfig`], and the
//! explicit time-step check (docs/design.md § MPM, Stability).

use super::collider::to_normalised;
use super::validated_scene::Scene;
use crate::mpm_rules::stability::{explicit_dt_bound, min_substeps_per_frame};
use crate::mpm_rules::MpmConfig;

/// The explicit time-step check for a scene (docs/design.md § MPM, Stability).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stability {
    /// Substep length `1/(fps·substeps)`, seconds.
    pub dt: f64,
    /// Largest stable substep for the top of the E range.
    pub dt_bound: f64,
    /// Fewest substeps per frame that satisfy the bound.
    pub min_substeps: u32,
    /// The E the bound is evaluated at (10^high).
    pub youngs_max: f64,
    /// The ν the bound is evaluated at: `material.poisson_ratio`, or the
    /// top of `[fit.stiffness] poisson_range` when the fit fits ν.
    pub poisson_max: f64,
}

impl Scene {
    /// Gravity in normalised units (box lengths / s²).
    pub fn gravity_normalised(&self) -> [f64; 3] {
        self.simulation
            .sim_box
            .vector_to_normalised(self.simulation.gravity_world)
    }

    /// The simulator's settings (normalised units).
    pub fn mpm_config(&self) -> MpmConfig {
        MpmConfig {
            grid_res: self.simulation.grid_res,
            fps: self.fps,
            substeps_per_frame: self.simulation.substeps,
            gravity: self.gravity_normalised(),
            damping: self.simulation.damping,
            density: self.material.density,
            poisson: self.material.poisson_ratio,
            walls: self.simulation.walls,
            colliders: self
                .simulation
                .colliders
                .iter()
                .map(|c| to_normalised(c, &self.simulation.sim_box))
                .collect(),
            anchoring: self.simulation.anchoring,
            transfer: self.simulation.transfer,
        }
    }

    /// The largest Poisson's ratio the simulation may see: the top of a
    /// fitted ν's range when `[fit.stiffness] poisson` fits it, else
    /// `material.poisson_ratio`.
    pub fn poisson_max(&self) -> f64 {
        match self.fit.stiffness.poisson.fitted() {
            true => self
                .material
                .poisson_ratio
                .max(self.fit.stiffness.poisson_range.high),
            false => self.material.poisson_ratio,
        }
    }

    /// The explicit time-step check at the top of the E range and at
    /// [`Scene::poisson_max`].
    pub fn stability(&self) -> Stability {
        let youngs_max = 10f64.powf(self.material.log10_youngs_range[1]);
        let dx = 1.0 / self.simulation.grid_res as f64;
        let m = &self.material;
        let poisson_max = self.poisson_max();
        Stability {
            dt: 1.0 / (self.fps * self.simulation.substeps as f64),
            dt_bound: explicit_dt_bound(youngs_max, poisson_max, m.density, dx),
            min_substeps: min_substeps_per_frame(self.fps, youngs_max, poisson_max, m.density, dx),
            youngs_max,
            poisson_max,
        }
    }
}
