//! What the interactions mean for one run of the simulator: the initial
//! velocity per driver, the gravity and the added colliders, the impulses
//! in normalised units ([`ImpulseForce`]), and the checks made before
//! running: the velocity bound, and no added collider holding the object
//! at the start (docs/scene.md "Interactions file").

use super::error::InteractionError;
use super::interaction::{Interactions, Start};
use crate::mpm::{ImpulseForce, MpmConfig};
use crate::scene::collider::{start_inside, to_normalised};
use crate::scene::{Scene, SimBox};

fn norm(v: [f64; 3]) -> f64 {
    v.iter().map(|c| c * c).sum::<f64>().sqrt()
}

impl Interactions {
    /// The initial velocity of every driver, world units / s: the start
    /// ([`Start::Fitted`]: `fitted`, [`Start::Rest`]: zero) plus every
    /// velocity interaction that applies at the driver's rest position
    /// `rest_world`; `anchored` drivers ([`Interactions::held`]) stay at
    /// rest.
    pub fn initial_velocities(
        &self,
        rest_world: &[[f64; 3]],
        anchored: &[bool],
        fitted: &[[f64; 3]],
    ) -> Vec<[f64; 3]> {
        let start = self.start();
        (0..rest_world.len())
            .map(|d| {
                if anchored[d] {
                    return [0.0; 3];
                }
                let mut v = match start {
                    Start::Fitted => fitted[d],
                    Start::Rest => [0.0; 3],
                };
                for region in self.velocities() {
                    if region.applies_at(rest_world[d]) {
                        for (c, r) in v.iter_mut().zip(region.velocity) {
                            *c += r;
                        }
                    }
                }
                v
            })
            .collect()
    }

    /// Which drivers this run holds: the fit's `anchored` ones, or none
    /// once the object is let go ([`Interactions::released`]).
    pub fn held(&self, anchored: &[bool]) -> Vec<bool> {
        if self.released() {
            vec![false; anchored.len()]
        } else {
            anchored.to_vec()
        }
    }

    /// `config` with the gravity of the interactions, if any, and their
    /// colliders after its own (normalised: world / side).
    pub fn apply(&self, config: &MpmConfig, sim_box: &SimBox) -> MpmConfig {
        let mut config = config.clone();
        if let Some(g) = self.gravity() {
            config.gravity = sim_box.vector_to_normalised(g);
        }
        config
            .colliders
            .extend(self.colliders().map(|(_, c)| to_normalised(c, sim_box)));
        config
    }

    /// Refuses an added collider that holds simulated splats of `scene` at
    /// the start, as the scene's own are refused (docs/scene.md §
    /// Colliders), naming the file or flag and its field.
    pub fn check_colliders_clear(&self, scene: &Scene) -> Result<(), InteractionError> {
        let (entries, colliders): (Vec<_>, Vec<_>) = self.colliders().map(|(e, c)| (e, *c)).unzip();
        match start_inside(&colliders, &scene.gaussians().means, &scene.simulated) {
            Some(s) => Err(InteractionError::Invalid {
                source_name: entries[s.index].origin.clone(),
                field: entries[s.index].field.clone(),
                problem: format!("{} simulated splats start {}", s.splats, s.place),
                fix: s.fix.to_string(),
            }),
            None => Ok(()),
        }
    }

    /// The impulses in the simulator's units (positions normalised into
    /// the box, lengths and accelerations divided by its side).
    pub fn impulse_forces(&self, sim_box: &SimBox) -> Vec<ImpulseForce> {
        self.impulses()
            .map(|i| ImpulseForce {
                centre: sim_box
                    .to_normalised(i.centre.map(|c| c as f32))
                    .map(f64::from),
                radius: i.radius / sim_box.side,
                acceleration: sim_box.vector_to_normalised(i.acceleration),
                start: i.start,
                end: i.end,
            })
            .collect()
    }

    /// The velocity bound: the largest initial speed
    /// plus the impulses' velocity changes, summed as if one particle held
    /// them all, must not move a particle more than half a cell in one
    /// substep: `speed · dt ≤ dx / 2` (world units: `dx = side /
    /// grid_res`). Gravity is left out: the box bounds what it can do, and
    /// a run that leaves the box stops naming the frame and substep.
    pub fn check_velocity_bound(
        &self,
        initial: &[[f64; 3]],
        config: &MpmConfig,
        sim_box: &SimBox,
    ) -> Result<(), InteractionError> {
        let initial = initial.iter().map(|&v| norm(v)).fold(0.0, f64::max);
        let impulses: f64 = self.impulses().map(|i| norm(i.velocity_change())).sum();
        let speed = initial + impulses;
        let dt = config.dt();
        let bound = 0.5 * sim_box.side / config.grid_res as f64 / dt;
        if speed <= bound {
            return Ok(());
        }
        let per_frame = speed * config.grid_res as f64 * 2.0 / (sim_box.side * config.fps);
        Err(InteractionError::TooFast {
            speed,
            initial,
            impulses,
            bound,
            dt,
            substeps_needed: per_frame.ceil() as u64,
        })
    }
}
