//! Differentiable MLS-MPM (DESIGN.md § MPM, § Adjoint).

pub mod config;
pub mod stability;

pub use config::{MpmConfig, WallMode};
