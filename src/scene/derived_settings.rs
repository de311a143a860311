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
        }
    }

    /// The explicit time-step check at the top of the E range.
    pub fn stability(&self) -> Stability {
        let youngs_max = 10f64.powf(self.material.log10_youngs_range[1]);
        let dx = 1.0 / self.simulation.grid_res as f64;
        let m = &self.material;
        Stability {
            dt: 1.0 / (self.fps * self.simulation.substeps as f64),
            dt_bound: explicit_dt_bound(youngs_max, m.poisson_ratio, m.density, dx),
            min_substeps: min_substeps_per_frame(
                self.fps,
                youngs_max,
                m.poisson_ratio,
                m.density,
                dx,
            ),
            youngs_max,
        }
    }
}
