//! `--ground[=H]`: a floor for the fitted object, a plane collider
//! perpendicular to the run's gravity, so that a drop lands and rests
//! without writing a `[[colliders]]` table (docs/commands.md § `physfit
//! render --params`; docs/design.md § Interactions).
//!
//! "Up" is against the run's gravity (a `gravity` interaction, else the
//! scene's `simulation.gravity`): `û = −g/|g|`. A height `H` is the plane
//! `x·û = H`, the coordinate along the up axis for an axis-aligned gravity
//! (`z` for `g = (0, 0, −9.81)`). Without `H`, the plane lies half a grid
//! cell under the object's lowest simulated splat: the object starts clear
//! of it and settles onto it. Its rule is friction with
//! [`GROUND_FRICTION`]; another rule is a `[[colliders]]` table.

use super::error::InteractionError;
use super::interaction::{Entry, Interaction, Interactions};
use crate::mpm_rules::config::WALL_MARGIN_CELLS;
use crate::mpm_rules::{Collider, ColliderShape, ContactRule};
use crate::scene::Scene;

/// The flag, which names the ground in errors.
pub const GROUND_FLAG: &str = "--ground";

/// The ground's Coulomb friction coefficient μ: a floor that holds what
/// lands on it (a slip floor lets a sideways motion slide on forever).
pub const GROUND_FRICTION: f64 = 0.5;

/// Where a ground was put ([`Interactions::add_ground`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ground {
    /// Up: against the run's gravity, unit length.
    pub up: [f64; 3],
    /// The plane's height along `up`, world units.
    pub height: f64,
    /// The lowest simulated splat's height along `up`, world units.
    pub lowest: f64,
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    (0..3).map(|i| a[i] * b[i]).sum()
}

impl Interactions {
    /// Adds the ground of `--ground[=height]` (module doc) for `scene`:
    /// refuses a run without gravity (nothing says which way is down), a
    /// height above the object's lowest simulated splat, and one below the
    /// box's wall margin (the walls would stop the object first).
    pub fn add_ground(
        &mut self,
        scene: &Scene,
        height: Option<f64>,
    ) -> Result<Ground, InteractionError> {
        let invalid = |problem: String, fix: String| InteractionError::Invalid {
            source_name: GROUND_FLAG.to_string(),
            field: GROUND_FLAG.to_string(),
            problem,
            fix,
        };
        let g = self.gravity().unwrap_or(scene.simulation.gravity_world);
        let length = dot(g, g).sqrt();
        if !(length > 0.0 && length.is_finite()) {
            return Err(invalid(
                "the run has no gravity, so nothing says which way is down".into(),
                "give --gravity GX,GY,GZ (e.g. 0,0,-9.81 for a z-up world) or set \
                 `simulation.gravity` in the scene"
                    .into(),
            ));
        }
        // `+ 0.0` turns −0 into 0, for the messages.
        let up = g.map(|c| -c / length + 0.0);
        let means = &scene.gaussians().means;
        let lowest = scene
            .simulated_indices()
            .iter()
            .map(|&i| dot(means[i as usize].map(f64::from), up))
            .fold(f64::INFINITY, f64::min);
        let sim = &scene.simulation;
        let dx = sim.sim_box.side / sim.grid_res as f64;
        let height = match height {
            None => lowest - 0.5 * dx,
            Some(h) if !h.is_finite() => {
                return Err(invalid(
                    format!("{h} is not a height"),
                    "give a finite height, world units along up".into(),
                ))
            }
            Some(h) if h > lowest => {
                return Err(invalid(
                    format!(
                        "the ground at height {h} (along up = {up:?}, against gravity) is above \
                         the object's lowest point, at {lowest:.4}: the object would start in it"
                    ),
                    format!(
                        "give a height ≤ {lowest:.4}, or `--ground` alone for a floor just under \
                         the object"
                    ),
                ))
            }
            Some(h) => h,
        };
        // The lowest point the walls let the object reach along up: the
        // lowest corner of the box less its wall margin.
        let margin = WALL_MARGIN_CELLS as f64 * dx;
        let floor = (0..8)
            .map(|corner: usize| {
                let p: [f64; 3] = std::array::from_fn(|a| {
                    if corner >> a & 1 == 0 {
                        sim.sim_box.min[a] + margin
                    } else {
                        sim.sim_box.min[a] + sim.sim_box.side - margin
                    }
                });
                dot(p, up)
            })
            .fold(f64::INFINITY, f64::min);
        if height < floor {
            return Err(invalid(
                format!(
                    "the ground at height {height:.4} (along up = {up:?}) lies below the box's \
                     wall margin, at {floor:.4}: the walls stop the object before it"
                ),
                format!(
                    "give a height between {floor:.4} and {lowest:.4}, or enlarge the box \
                     (`simulation.padding`)"
                ),
            ));
        }
        self.push(Entry {
            origin: GROUND_FLAG.to_string(),
            field: GROUND_FLAG.to_string(),
            interaction: Interaction::Collider(Collider {
                shape: ColliderShape::Plane {
                    point: up.map(|c| c * height),
                    normal: up,
                },
                contact: ContactRule::Friction(GROUND_FRICTION),
            }),
        })?;
        Ok(Ground { up, height, lowest })
    }
}
