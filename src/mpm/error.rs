//! Typed errors of the MPM simulator.

use thiserror::Error;

use crate::gpu::GpuError;

/// Why a simulation was refused or stopped.
#[derive(Debug, Error)]
pub enum MpmError {
    /// The explicit time-step bound (src/mpm_rules/stability.rs) is violated.
    #[error(
        "{substeps} substeps per frame are too few for Young's modulus up to {youngs_max:.3e} \
         (ν = {poisson}, ρ = {density}, grid_res = {grid_res}, {fps} fps): the explicit MPM step \
         would be unstable. fix: set `simulation.substeps` to at least {needed} in scene.toml, or \
         lower the top of `material.log10_youngs_range`"
    )]
    TooFewSubsteps {
        /// Substeps per frame configured.
        substeps: u32,
        /// Substeps per frame needed.
        needed: u32,
        /// Largest Young's modulus checked.
        youngs_max: f64,
        /// Poisson's ratio.
        poisson: f64,
        /// Density.
        density: f64,
        /// Grid resolution.
        grid_res: u32,
        /// Frames per second.
        fps: f64,
    },
    /// A value became NaN or infinite.
    #[error(
        "the simulation blew up at frame {frame}, substep {substep}: particle {particle} has a \
         non-finite position, velocity or deformation (usually too few substeps for the \
         stiffness, or an extreme initial velocity). fix: raise `simulation.substeps` or lower \
         the velocity or the top of `material.log10_youngs_range`"
    )]
    NonFinite {
        /// Frame being computed (1-based: frame 1 follows the rest state 0).
        frame: u32,
        /// Substep within the frame (0-based).
        substep: u32,
        /// First offending particle index.
        particle: u32,
    },
    /// A particle's stencil left the grid.
    #[error(
        "particle {particle} left the simulation box at frame {frame}, substep {substep}. \
         fix: enlarge the simulation box (`simulation.box` or `simulation.padding` in \
         scene.toml), lower the initial velocity, or use `simulation.walls = \"sticky\"`"
    )]
    LeftBox {
        /// Frame being computed (1-based).
        frame: u32,
        /// Substep within the frame (0-based).
        substep: u32,
        /// First offending particle index.
        particle: u32,
    },
    /// A backward pass against a rollout whose Young's moduli or friction
    /// coefficients changed after its forward run.
    #[error(
        "the rollout ran with Young's moduli and friction coefficients (version {rollout}) \
         that have changed since (now version {current}: set_youngs, youngs_buffer_mut or \
         set_friction); its states belong to the old values. fix: run a new rollout before \
         its backward pass"
    )]
    StaleRollout {
        /// The version the rollout ran with.
        rollout: u64,
        /// The simulator's version now.
        current: u64,
    },
    /// Inputs inconsistent with the simulator (a bug in the caller or bad data).
    #[error("invalid MPM input: {0}")]
    InvalidInput(String),
    /// A GPU failure.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}
