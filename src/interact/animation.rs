//! A simulated object, stepped frame by frame and rendered from any camera:
//! the one forward run that `physfit render --params` (the fitted object
//! under new interactions, issue 14) and `physfit simulate` (the scene's
//! drivers at one E with a uniform velocity) share.
//!
//! [`AnimationSetup`] gathers what a run needs on the host and refuses what
//! cannot work before anything runs: a drivers file of another scene
//! ([`FittedDrivers::check_against`]), too few substeps for the largest E
//! used ([`check_stability`]), and, where the caller asks, a motion faster
//! than half a cell per substep ([`AnimationSetup::check_velocity_bound`]).
//! [`Animation`] runs it on the GPU: the MPM under the impulses
//! ([`ForcedRun`]; with none, exactly the fit's forward), the splats
//! following their drivers ([`Deformation`]), the rasterizer. A frame that
//! breaks down stops the run naming the frame and substep.

use super::animation_error::AnimationError;
use super::Interactions;
use crate::deform::{DeformSetup, Deformation, DRIVERS_PER_GAUSSIAN};
use crate::drive::DriverSet;
use crate::gpu::{GpuBuffer, GpuContext};
use crate::mpm::simulator::check_stability;
use crate::mpm::{ForcedRun, ImpulseForce, MpmConfig, MpmSetup, MpmSimulator, ParticleState};
use crate::output::{youngs_world, FittedDrivers};
use crate::scene::frames::Frame;
use crate::scene::{Camera, Gaussians, Scene, SimBox};
use crate::splat::{Rasterizer, SplatBuffers};

/// What one run simulates (module doc), on the host.
#[derive(Clone, Debug)]
pub struct AnimationSetup {
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

impl AnimationSetup {
    /// The fitted object of `fitted` (read from `path`, named in errors)
    /// under `interactions`: refuses a file of another scene or other
    /// settings, and E that needs more substeps than the fit had.
    pub fn from_fitted(
        scene: &Scene,
        fitted: &FittedDrivers,
        path: &str,
        interactions: &Interactions,
    ) -> Result<Self, AnimationError> {
        fitted.check_against(scene)?;
        if fitted.settings.k != DRIVERS_PER_GAUSSIAN {
            return Err(AnimationError::NeighbourCount {
                path: path.to_string(),
                k: fitted.settings.k,
                needed: DRIVERS_PER_GAUSSIAN,
            });
        }
        let sim_box = fitted.settings.sim_box;
        let deform = deform_setup(
            scene,
            sim_box,
            &fitted.rest,
            &fitted.followers,
            &fitted.neighbours,
        );
        Self::new(
            interactions.apply_gravity(&fitted.mpm_config(), &sim_box),
            fitted.mpm_setup(),
            deform,
            fitted.log10_youngs.clone(),
            &fitted.velocity,
            sim_box,
            interactions,
        )
    }

    /// The scene's own `drivers` at `log10_youngs` (normalised units, one
    /// per driver) under `interactions`, starting from rest plus their
    /// velocities (`physfit simulate`).
    pub fn from_drivers(
        scene: &Scene,
        drivers: &DriverSet,
        log10_youngs: Vec<f64>,
        interactions: &Interactions,
    ) -> Result<Self, AnimationError> {
        if drivers.k != DRIVERS_PER_GAUSSIAN {
            return Err(AnimationError::NeighbourCount {
                path: scene.path.display().to_string(),
                k: drivers.k,
                needed: DRIVERS_PER_GAUSSIAN,
            });
        }
        let youngs = log10_youngs.iter().map(|&l| 10f64.powf(l) as f32).collect();
        let deform = DeformSetup::from_drivers(drivers, scene.gaussians())?;
        Self::new(
            interactions.apply_gravity(&scene.mpm_config(), &drivers.sim_box),
            drivers.setup(youngs, 0.0),
            deform,
            log10_youngs,
            &vec![[0.0; 3]; drivers.len()],
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
    ) -> Result<Self, AnimationError> {
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
            sim_box,
            interactions: interactions.clone(),
        })
    }

    /// The velocity bound of the initial velocities and the impulses
    /// ([`Interactions::check_velocity_bound`]).
    pub fn check_velocity_bound(&self) -> Result<(), AnimationError> {
        Ok(self.interactions.check_velocity_bound(
            &self.velocity_world,
            &self.config,
            &self.sim_box,
        )?)
    }

    /// Per splat of `scene`: log10 of Young's modulus in world units, the
    /// mean over its drivers of their log10 E (as `fitted.ply` has it);
    /// NaN for the splats no driver moves (static and anchored ones).
    pub fn splat_log10_youngs_world(&self, scene: &Scene) -> Vec<f64> {
        let mut values = vec![f64::NAN; scene.gaussians().len()];
        let side = self.sim_box.side;
        for (g, &splat) in self.deform.splat_index.iter().enumerate() {
            let near = &self.deform.drivers[g];
            let mean = near
                .iter()
                .map(|&d| self.log10_youngs[d as usize])
                .sum::<f64>()
                / near.len() as f64;
            values[splat as usize] = youngs_world(10f64.powf(mean), side).log10();
        }
        values
    }
}

/// A run on the GPU (module doc): every frame state simulated so far, and
/// the splats posed at one of them for rendering.
pub struct Animation {
    sim: MpmSimulator,
    forced: ForcedRun,
    deformation: Deformation,
    splats: SplatBuffers,
    raster: Rasterizer,
    background: [f32; 3],
    states: Vec<GpuBuffer>,
}

impl Animation {
    /// Uploads `setup` with the splats `gaussians` (the scene's, or
    /// recoloured ones) rendered over `background`; frame 0 is the rest
    /// state with the initial velocity.
    pub fn new(
        ctx: &GpuContext,
        setup: &AnimationSetup,
        gaussians: &Gaussians,
        background: [f32; 3],
    ) -> Result<Self, AnimationError> {
        let sim = MpmSimulator::new(ctx, &setup.config, &setup.setup)?;
        let forced = ForcedRun::new(ctx, &sim, setup.impulses.clone())?;
        let first = sim.upload_state(ctx, "animation frame 0", &setup.initial)?;
        Ok(Self {
            forced,
            deformation: Deformation::new(ctx, &setup.deform)?,
            splats: SplatBuffers::upload(ctx, gaussians)?,
            raster: Rasterizer::new(ctx)?,
            background,
            states: vec![first],
            sim,
        })
    }

    /// Frames simulated so far, the rest frame 0 included.
    pub fn frames(&self) -> usize {
        self.states.len()
    }

    /// The simulator.
    pub fn simulator(&self) -> &MpmSimulator {
        &self.sim
    }

    /// Frame `k`'s state, if simulated.
    pub fn state(&self, k: usize) -> Option<&GpuBuffer> {
        self.states.get(k)
    }

    /// The particles impulse `k` holds, once it has started.
    pub fn impulse_members(&self, k: usize) -> Option<Vec<usize>> {
        self.forced.members(k)
    }

    /// Simulates the next frame; a breakdown names the frame and substep.
    pub fn step(&mut self, ctx: &GpuContext) -> Result<(), AnimationError> {
        let k = self.states.len();
        let next = self
            .sim
            .state_buffer(ctx, &format!("animation frame {k}"))?;
        self.forced
            .run_frame(ctx, &self.sim, &self.states[k - 1], &next, k as u32)?;
        self.states.push(next);
        Ok(())
    }

    /// Moves the splats to frame `k` (simulated already).
    pub fn pose(&self, ctx: &GpuContext, k: usize) -> Result<(), AnimationError> {
        let state = self.states.get(k).ok_or_else(|| {
            crate::mpm::MpmError::InvalidInput(format!(
                "frame {k} is not simulated ({} so far)",
                self.states.len()
            ))
        })?;
        let mut encoder = crate::gpu::encoder(ctx, "animation: splats follow drivers");
        self.deformation
            .encode_forward(ctx, &mut encoder, state, &self.splats)?;
        ctx.queue.submit([encoder.finish()]);
        Ok(())
    }

    /// Renders the posed splats from `camera` (RGBA in [0, 1], the
    /// background composited, alpha the coverage).
    pub fn render(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<Frame, AnimationError> {
        let out = self
            .raster
            .render(ctx, &self.splats, camera, self.background)?;
        Ok(Frame {
            width: out.width,
            height: out.height,
            pixels: self.raster.read_image(ctx, &out)?,
        })
    }

    /// Reads the posed splats' centres (world units) and raw rotations back
    /// into `gaussians` (the scene's splats, for writing a `.ply`).
    pub fn read_pose(
        &self,
        ctx: &GpuContext,
        gaussians: &mut Gaussians,
    ) -> Result<(), AnimationError> {
        gaussians.means = ctx.read_buffer(&self.splats.means)?;
        gaussians.rotations = ctx.read_buffer(&self.splats.rotations)?;
        Ok(())
    }
}
