//! The MPM's rules on the CPU, without GPU types: the simulation settings
//! ([`config`]: [`MpmConfig`], [`WallMode`]), the static colliders as data
//! ([`collider`]), the explicit time-step bound ([`stability`]) and the
//! grid nodes the `splats` anchoring rule holds ([`held_nodes`]), the
//! grid cells the material occupies with the interior fill of closed
//! objects ([`voxel`]) (docs/design.md § MPM). The scene loader validates
//! a scene with them and the simulator (`crate::mpm`, which re-exports
//! them under its old paths) runs by them, so neither of the two imports
//! the other for them.

pub mod collider;
pub mod config;
pub mod held_nodes;
pub mod stability;
pub mod voxel;

pub use collider::{Collider, ColliderShape, ContactRule};
pub use config::{AnchorRule, MpmConfig, WallMode};
