//! From a scene to MPM particles and back to splats (DESIGN.md § Drivers
//! and the deformation of Gaussians).
//!
//! Two mappings live here. [`SceneParticles`] makes every simulated splat
//! one particle: its centre is the particle's rest position and follows it,
//! and its rotation and scales stay as they are ([`SplatMotion`] on the
//! GPU). [`DriverSet`] is the method's: K-Means driving particles
//! ([`kmeans`]) over the simulated Gaussians (and the fill points of
//! [`voxel`]), the k nearest drivers of every free Gaussian, which the
//! deformation moves rigidly with them, and the drivers' kNN graph for TV.
//! Both offer the same MPM setup and initial state.

pub mod drivers;
pub mod kmeans;
pub mod particles_to_splats;
pub mod voxel;

pub use drivers::{DriverSet, DriverSource};

use crate::gpu::{GpuBuffer, GpuContext, GpuError};
use crate::mpm::config::particle_volume;
use crate::mpm::{MpmSetup, ParticleState};
use crate::scene::{Scene, SimBox};
use crate::splat::SplatBuffers;
use particles_to_splats::{ParticlesToSplats, ParticlesToSplatsBuffers, ParticlesToSplatsUniforms};

/// Why a scene gives no particles.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// No splat lies in the simulated region.
    #[error(
        "{scene}: no splat lies in `regions.simulated`, so there is nothing to simulate; \
         fix: make the region cover the object, or remove it to simulate every splat"
    )]
    NothingSimulated {
        /// The scene file.
        scene: String,
    },
    /// Buffers of another particle set or scene than the motion's.
    #[error("{0}")]
    Mismatch(String),
    /// A driver count the points cannot give.
    #[error("cannot make {count} drivers of {points} points (need 1 ≤ drivers ≤ points)")]
    BadCount {
        /// Drivers asked for.
        count: usize,
        /// Points K-Means runs over.
        points: usize,
    },
    /// A neighbour count outside `1..=count`.
    #[error("{k} nearest drivers per Gaussian asked of {count} drivers (need 1 ≤ k ≤ drivers)")]
    BadNeighbours {
        /// Neighbours asked for.
        k: usize,
        /// Drivers.
        count: usize,
    },
    /// A velocity that is not finite.
    #[error("initial velocity {0:?} must be three finite numbers (world units per second)")]
    BadVelocity([f64; 3]),
    /// A GPU failure.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// The MPM particles of a scene: one per simulated splat, in splat order.
#[derive(Clone, Debug)]
pub struct SceneParticles {
    /// The splat of each particle.
    pub splat_indices: Vec<u32>,
    /// Rest positions in normalised box coordinates.
    pub rest: Vec<[f32; 3]>,
    /// Anchored flag per particle (the splat is in `regions.anchored`).
    pub anchored: Vec<bool>,
    /// Volume of every particle (normalised units): the occupied half-cell
    /// voxels over the particle count ([`particle_volume`]).
    pub volume: f64,
    /// The simulation cube (world ↔ normalised).
    pub sim_box: SimBox,
}

impl SceneParticles {
    /// The particles of `scene`; an error when it simulates no splat.
    pub fn from_scene(scene: &Scene) -> Result<Self, DriveError> {
        let splat_indices = scene.simulated_indices();
        if splat_indices.is_empty() {
            return Err(DriveError::NothingSimulated {
                scene: scene.path.display().to_string(),
            });
        }
        let means = scene.normalised_means();
        let rest: Vec<[f32; 3]> = splat_indices.iter().map(|&i| means[i as usize]).collect();
        let anchored = splat_indices
            .iter()
            .map(|&i| scene.anchored[i as usize])
            .collect();
        let rest64: Vec<[f64; 3]> = rest.iter().map(|p| p.map(f64::from)).collect();
        let volume = particle_volume(&rest64, scene.simulation.grid_res);
        Ok(Self {
            splat_indices,
            rest,
            anchored,
            volume,
            sim_box: scene.simulation.sim_box,
        })
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.rest.len()
    }

    /// True when there are none (never for [`SceneParticles::from_scene`]).
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The simulator setup with Young's modulus `youngs` (normalised units)
    /// per particle, checked for stability up to `youngs_max`.
    pub fn setup(&self, youngs: Vec<f32>, youngs_max: f64) -> MpmSetup {
        MpmSetup {
            particle_volume: self.volume,
            anchored: self.anchored.clone(),
            youngs,
            youngs_max,
        }
    }

    /// The rest state with a uniform initial velocity given in world units
    /// per second (anchored particles start at rest).
    pub fn uniform_start(&self, velocity: [f64; 3]) -> Result<ParticleState, DriveError> {
        if velocity.iter().any(|v| !v.is_finite()) {
            return Err(DriveError::BadVelocity(velocity));
        }
        let v = self
            .sim_box
            .vector_to_normalised(velocity)
            .map(|c| c as f32);
        let velocities = self
            .anchored
            .iter()
            .map(|&a| if a { [0.0; 3] } else { v })
            .collect();
        Ok(ParticleState::at_rest(self.rest.clone(), velocities))
    }

    /// World positions of the particles of a state (host side, for writing
    /// outputs).
    pub fn world_positions(&self, state: &ParticleState) -> Vec<[f32; 3]> {
        state.x.iter().map(|&x| self.sim_box.to_world(x)).collect()
    }
}

/// Moves splats with their particles on the GPU: after
/// [`SplatMotion::encode`] on a state buffer, the simulated splats of
/// `splats` are at its particles' positions, ready to render; nothing is
/// read back.
pub struct SplatMotion {
    kernel: ParticlesToSplats,
    uniforms: GpuBuffer,
    splat_index: GpuBuffer,
    count: u32,
    /// Splats the scene must have at least (largest splat index + 1).
    min_splats: u32,
}

impl SplatMotion {
    /// The motion of `particles`' splats.
    pub fn new(ctx: &GpuContext, particles: &SceneParticles) -> Result<Self, DriveError> {
        let b = &particles.sim_box;
        let uniforms = ParticlesToSplatsUniforms {
            box_min_side: [
                b.min[0] as f32,
                b.min[1] as f32,
                b.min[2] as f32,
                b.side as f32,
            ],
            count: particles.len() as u32,
            _pad: [0; 3],
        };
        Ok(Self {
            kernel: ParticlesToSplats::new(ctx)?,
            uniforms: ctx.uniform_buffer("particles to splats uniforms", &uniforms)?,
            splat_index: ctx
                .storage_from_slice("particles to splats: splat index", &particles.splat_indices)?,
            count: particles.len() as u32,
            min_splats: particles.splat_indices.iter().max().map_or(0, |&i| i + 1),
        })
    }

    /// Records the move of the simulated splats of `splats` to the
    /// positions in `state` (an MPM state buffer of the same particles).
    /// Refuses a state of another particle count or splats of a smaller
    /// scene, whose writes would otherwise be dropped silently.
    pub fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        state: &GpuBuffer,
        splats: &SplatBuffers,
    ) -> Result<(), DriveError> {
        let state_bytes = self.count as u64 * (crate::mpm::layout::STATE_STRIDE * 4) as u64;
        if state.size() != state_bytes {
            return Err(DriveError::Mismatch(format!(
                "state '{}' has {} bytes, {} particles need {state_bytes}",
                state.label(),
                state.size(),
                self.count
            )));
        }
        if splats.count < self.min_splats {
            return Err(DriveError::Mismatch(format!(
                "{} splats uploaded, but the particles move splats up to index {}",
                splats.count,
                self.min_splats - 1
            )));
        }
        self.kernel.dispatch(
            ctx,
            encoder,
            &ParticlesToSplatsBuffers {
                uniforms: &self.uniforms,
                state,
                splat_index: &self.splat_index,
                means: &splats.means,
            },
            self.count,
        );
        Ok(())
    }
}
