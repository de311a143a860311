//! Poisson's ratio per particle: the record the P2G kernels and the adjoint
//! of P2G read for each particle (shaders/mpm/p2g_particle.wgsl,
//! p2g_adjoint_particle.wgsl), `(μ̂, λ̂, dμ̂/dν, dλ̂/dν)` with `μ̂ = μ/E`,
//! `λ̂ = λ/E` (docs/design.md § MPM: `μ = E/(2(1+ν))`,
//! `λ = Eν/((1+ν)(1−2ν))`).
//!
//! Why a record per particle rather than ν: the Lamé factors are computed
//! here in f64 and rounded once, exactly as the uniform μ/E, λ/E were, so
//! that a simulation at one ν gives the same numbers as before ν could vary
//! per particle; and the adjoint gets `∂L/∂ν` from `∂L/∂μ̂`, `∂L/∂λ̂` with
//! the derivatives stored next to them, without a division on the GPU.

use super::error::MpmError;
use crate::mpm_rules::config::{lame, lame_per_youngs_poisson_derivative};

/// Poisson's ratios the simulator accepts: `[0, 0.5)` (0.5 is
/// incompressible, λ → ∞).
pub fn check_poisson(poisson: &[f64], particles: usize) -> Result<(), MpmError> {
    if poisson.len() != particles {
        return Err(MpmError::InvalidInput(format!(
            "{} Poisson's ratios for {particles} particles",
            poisson.len()
        )));
    }
    if let Some(i) = poisson.iter().position(|nu| !(0.0..0.5).contains(nu)) {
        return Err(MpmError::InvalidInput(format!(
            "Poisson's ratio {} of particle {i} must be in [0, 0.5)",
            poisson[i]
        )));
    }
    Ok(())
}

/// The record of one particle with Poisson's ratio `poisson`.
pub fn lame_record(poisson: f64) -> [f32; 4] {
    let (mu, lambda) = lame(1.0, poisson);
    let (d_mu, d_lambda) = lame_per_youngs_poisson_derivative(poisson);
    [mu as f32, lambda as f32, d_mu as f32, d_lambda as f32]
}

/// The records of particles with Poisson's ratios `poisson`.
pub fn lame_records(poisson: &[f64]) -> Vec<[f32; 4]> {
    poisson.iter().map(|&nu| lame_record(nu)).collect()
}
