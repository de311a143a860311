//! What a forward run simulates, gathered on the host before anything runs
//! ([`ForwardSetup`]), so that what cannot work is refused first: a drivers
//! file of another scene ([`FittedDrivers::check_against`]), too few
//! substeps for the largest E used ([`check_stability`]), and, where the
//! caller asks, a motion faster than half a cell per substep
//! ([`ForwardSetup::check_velocity_bound`]).

use super::error::ForwardError;
use crate::deform::{DeformSetup, DRIVERS_PER_GAUSSIAN};
use crate::drive::{nearest_drivers, DriverSet, DriverSource};
use crate::mpm_rules::AnchorRule;
use crate::interact::Interactions;
use crate::mpm::lame::check_poisson;
use crate::mpm::simulator::{check_stability, check_stability_at};
use crate::mpm::{ImpulseForce, MpmConfig, MpmSetup, ParticleState};
use crate::output::FittedDrivers;
use crate::scene::{Scene, SimBox};

/// What one run simulates (module doc), on the host.
#[derive(Clone, Debug)]
pub struct ForwardSetup {
    /// The simulator's settings, with the interactions' gravity.
    pub config: MpmConfig,
    /// The particles (drivers) and their E; `youngs_max` is the largest E
    /// used, whose time-step bound was checked.
    pub setup: MpmSetup,
    /// How the splats follow the drivers.
    pub deform: DeformSetup,
    /// The drivers at rest with their initial velocity (normalised units).
    pub initial: ParticleState,
    /// The initial velocity per driver, world units / s.
    pub velocity_world: Vec<[f64; 3]>,
    /// The impulses (normalised units).
    pub impulses: Vec<ImpulseForce>,
    /// log10 E per driver, normalised units.
    pub log10_youngs: Vec<f64>,
    /// Poisson's ratio per driver, when it is not `config.poisson`
    /// everywhere (a fit that fitted it); the simulator is given it when
    /// built ([`super::SceneRenderer::simulated`]).
    pub poisson: Option<Vec<f64>>,
    /// The simulation cube.
    pub sim_box: SimBox,
    /// The interactions, for the velocity bound.
    interactions: Interactions,
}

/// The deformation of `followers` (splat indices) of `scene` by `rest`
/// drivers, each follower moving with its [`DRIVERS_PER_GAUSSIAN`]
/// `neighbours`.
fn deform_setup(
    scene: &Scene,
    sim_box: SimBox,
    rest: &[[f32; 3]],
    followers: &[u32],
    neighbours: &[u32],
) -> DeformSetup {
    let gaussians = scene.gaussians();
    DeformSetup {
        splat_index: followers.to_vec(),
        drivers: neighbours
            .chunks_exact(DRIVERS_PER_GAUSSIAN)
            .map(|c| c.try_into().expect("chunks of DRIVERS_PER_GAUSSIAN"))
            .collect(),
        rest_centres: followers
            .iter()
            .map(|&i| sim_box.to_normalised(gaussians.means[i as usize]))
            .collect(),
        rest_rotations: followers
            .iter()
            .map(|&i| gaussians.rotations[i as usize])
            .collect(),
        rest_drivers: rest.to_vec(),
        sim_box,
    }
}

impl ForwardSetup {
    /// The fitted object of `fitted` (read from `path`, named in errors)
    /// under `interactions`: refuses a file of another scene or other
    /// settings, and E that needs more substeps than the fit had.
    pub fn from_fitted(
        scene: &Scene,
        fitted: &FittedDrivers,
        path: &str,
        interactions: &Interactions,
    ) -> Result<Self, ForwardError> {
        fitted.check_against(scene)?;
        interactions.check_colliders_clear(scene)?;
        if fitted.settings.k != DRIVERS_PER_GAUSSIAN {
            return Err(ForwardError::NeighbourCount {
                path: path.to_string(),
                k: fitted.settings.k,
                needed: DRIVERS_PER_GAUSSIAN,
            });
        }
        let sim_box = fitted.settings.sim_box;
        // Let go, every simulated splat follows its nearest drivers and no
        // driver is held.
        let (followers, neighbours) = if interactions.released() {
            let followers = scene.simulated_indices();
            let means = &scene.gaussians().means;
            let points: Vec<[f32; 3]> = followers
                .iter()
                .map(|&i| sim_box.to_normalised(means[i as usize]))
                .collect();
            let neighbours = nearest_drivers(&fitted.rest, &points, DRIVERS_PER_GAUSSIAN);
            (followers, neighbours)
        } else {
            (fitted.followers.clone(), fitted.neighbours.clone())
        };
        let deform = deform_setup(scene, sim_box, &fitted.rest, &followers, &neighbours);
        // The drivers file records no colliders: the scene's are the world
        // the fitted object moves in (docs/design.md § Interactions).
        let mut config = fitted.mpm_config();
        config.colliders = scene.mpm_config().colliders;
        // The simulator's particles: the fitted E (normalised units, as the
        // fit sets it), checked for stability up to the top of the fit's
        // range.
        let particles = MpmSetup {
            particle_volume: fitted.particle_volume,
            anchored: interactions.held(&fitted.anchored),
            // The scene's anchored splats and fill points (the drivers file
            // keeps the drivers only): what the `splats` rule holds.
            held_points: if interactions.released() || config.anchoring != AnchorRule::Splats {
                Vec::new()
            } else {
                DriverSource::from_scene(scene)?.held_points()
            },
            youngs: fitted
                .log10_youngs
                .iter()
                .map(|&l| 10f64.powf(l) as f32)
                .collect(),
            youngs_max: 10f64.powf(fitted.settings.log10_youngs_range[1]),
        };
        let setup = Self::new(
            interactions.apply(&config, &sim_box),
            particles,
            deform,
            fitted.log10_youngs.clone(),
            &fitted.velocity,
            sim_box,
            interactions,
        )?;
        let setup = match &fitted.velocity_gradient {
            Some(g) => setup.with_velocity_gradient(g)?,
            None => setup,
        };
        match &fitted.poisson_ratio {
            Some(nu) => setup.with_poisson(nu.clone()),
            None => Ok(setup),
        }
    }

    /// The same with APIC's `C` of every driver started at the initial
    /// velocity's gradient `gradient` (one per driver, row-major
    /// `∂v_a/∂x_b`, 1/s, the same in world and normalised units): the
    /// rigid field's `[ω]×`, or a truth's (docs/design.md § Loss,
    /// parameters, fit, "The initial affine velocity"). As the velocity:
    /// held drivers keep `C = 0`, and a run that starts from rest
    /// (`[[start]] from = "rest"`) ignores it; an interaction's added
    /// velocity is uniform over its region and adds none.
    pub fn with_velocity_gradient(
        mut self,
        gradient: &[[[f64; 3]; 3]],
    ) -> Result<Self, ForwardError> {
        let n = self.initial.len();
        if gradient.len() != n {
            return Err(ForwardError::Values(format!(
                "{} velocity gradients for {n} drivers",
                gradient.len()
            )));
        }
        if let Some(d) = gradient.iter().position(|g| !g.iter().flatten().all(|v| v.is_finite())) {
            return Err(ForwardError::Values(format!(
                "the velocity gradient of driver {d} is {:?}",
                gradient[d]
            )));
        }
        if self.interactions.start() == crate::interact::Start::Rest {
            return Ok(self);
        }
        for ((c, g), &held) in self
            .initial
            .c
            .iter_mut()
            .zip(gradient)
            .zip(&self.setup.anchored)
        {
            *c = match held {
                true => [[0.0; 3]; 3],
                false => g.map(|row| row.map(|v| v as f32)),
            };
        }
        Ok(self)
    }

    /// The same with Poisson's ratio `poisson` per driver (each in
    /// `[0, 0.5)`), the time-step bound checked at its largest value and
    /// the largest E used.
    pub fn with_poisson(mut self, poisson: Vec<f64>) -> Result<Self, ForwardError> {
        if poisson.len() != self.log10_youngs.len() {
            return Err(ForwardError::Values(format!(
                "{} Poisson's ratios for {} drivers",
                poisson.len(),
                self.log10_youngs.len()
            )));
        }
        check_poisson(&poisson, poisson.len())?;
        self.poisson = Some(poisson);
        check_stability_at(&self.config, self.setup.youngs_max, self.poisson_max())?;
        Ok(self)
    }

    /// The largest Poisson's ratio the run uses.
    pub fn poisson_max(&self) -> f64 {
        self.poisson.as_deref().map_or(self.config.poisson, |nu| {
            nu.iter().fold(0.0f64, |a, &b| a.max(b))
        })
    }

    /// The scene's own `drivers` at `log10_youngs` (normalised units, one
    /// per driver) with the initial velocity `velocity` (world units / s,
    /// one per driver; anchored drivers start at rest whatever it says)
    /// under `interactions`: `physfit simulate` (from rest), `synth` and the
    /// fit's truth check (the truth's values), the fit itself (its start).
    pub fn from_drivers(
        scene: &Scene,
        drivers: &DriverSet,
        log10_youngs: Vec<f64>,
        velocity: &[[f64; 3]],
        interactions: &Interactions,
    ) -> Result<Self, ForwardError> {
        if log10_youngs.len() != drivers.len() || velocity.len() != drivers.len() {
            return Err(ForwardError::Values(format!(
                "{} log10 E values and {} velocities for {} drivers",
                log10_youngs.len(),
                velocity.len(),
                drivers.len()
            )));
        }
        if let Some(d) = log10_youngs.iter().position(|l| !l.is_finite()) {
            return Err(ForwardError::Values(format!(
                "log10 E of driver {d} is {}",
                log10_youngs[d]
            )));
        }
        if drivers.k != DRIVERS_PER_GAUSSIAN {
            return Err(ForwardError::NeighbourCount {
                path: crate::io::shown::shown(&scene.path).to_string(),
                k: drivers.k,
                needed: DRIVERS_PER_GAUSSIAN,
            });
        }
        interactions.check_colliders_clear(scene)?;
        let youngs = log10_youngs.iter().map(|&l| 10f64.powf(l) as f32).collect();
        let deform = DeformSetup::from_drivers(drivers, scene.gaussians())?;
        Self::new(
            interactions.apply(&scene.mpm_config(), &drivers.sim_box),
            drivers.setup(youngs, 0.0),
            deform,
            log10_youngs,
            velocity,
            drivers.sim_box,
            interactions,
        )
    }

    fn new(
        config: MpmConfig,
        mut setup: MpmSetup,
        deform: DeformSetup,
        log10_youngs: Vec<f64>,
        fitted_velocity: &[[f64; 3]],
        sim_box: SimBox,
        interactions: &Interactions,
    ) -> Result<Self, ForwardError> {
        // The bound for the E actually used (not the top of the fit's range).
        setup.youngs_max = setup.youngs.iter().fold(0.0f32, |a, &b| a.max(b)) as f64;
        check_stability(&config, setup.youngs_max)?;
        let rest = deform.rest_drivers.clone();
        let rest_world: Vec<[f64; 3]> = rest
            .iter()
            .map(|&x| sim_box.to_world(x).map(f64::from))
            .collect();
        let velocity_world =
            interactions.initial_velocities(&rest_world, &setup.anchored, fitted_velocity);
        let v = velocity_world
            .iter()
            .map(|&v| sim_box.vector_to_normalised(v).map(|c| c as f32))
            .collect();
        Ok(Self {
            initial: ParticleState::at_rest(rest, v),
            impulses: interactions.impulse_forces(&sim_box),
            config,
            setup,
            deform,
            velocity_world,
            log10_youngs,
            poisson: None,
            sim_box,
            interactions: interactions.clone(),
        })
    }

    /// Raises the largest E the run may use to `youngs_max` (when above the
    /// values it starts with) and checks the time-step bound for it: a fit
    /// moves E anywhere below the top of its range after construction.
    pub fn bounded_by(mut self, youngs_max: f64) -> Result<Self, ForwardError> {
        self.setup.youngs_max = self.setup.youngs_max.max(youngs_max);
        check_stability_at(&self.config, self.setup.youngs_max, self.poisson_max())?;
        Ok(self)
    }

    /// The velocity bound of the initial velocities and the impulses
    /// ([`Interactions::check_velocity_bound`]).
    pub fn check_velocity_bound(&self) -> Result<(), ForwardError> {
        Ok(self.interactions.check_velocity_bound(
            &self.velocity_world,
            &self.config,
            &self.sim_box,
        )?)
    }
}
