//! From a scene to MPM particles and back to splats (docs/design.md § Drivers
//! and the deformation of Gaussians).
//!
//! [`DriverSet`] holds the method's K-Means driving particles ([`kmeans`])
//! over the simulated Gaussians (and the fill points of [`crate::mpm_rules::voxel`]), the k
//! nearest drivers of every free Gaussian, which the deformation
//! ([`crate::deform`]) moves rigidly with them, and the drivers' kNN graph
//! for TV; it gives the MPM setup and the initial state.

pub mod drivers;
pub mod kmeans;

pub use drivers::{nearest_drivers, DriverSet, DriverSource};

/// Why a scene gives no drivers.
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
    /// Inconsistent or non-finite driver input.
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
}
