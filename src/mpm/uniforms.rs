//! Uniforms shared by every MPM kernel (`MpmParams` in shaders/mpm/params.wgsl,
//! same field order), derived from an [`MpmConfig`] and the particle volume.

use bytemuck::{Pod, Zeroable};

use crate::gpu::wgsl_layout::wgsl_mirror;
use crate::mpm_rules::config::{AnchorRule, MpmConfig, WallMode, WALL_MARGIN_CELLS};
#[cfg(doc)]
use crate::mpm_rules::config::Transfer;

/// `MpmParams` of shaders/mpm/params.wgsl (80 bytes, 16-byte aligned).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct MpmUniforms {
    /// Grid cells per axis: nodes at `i·dx`, `i` in `[0, grid_res]`.
    pub grid_res: u32,
    /// Number of particles.
    pub particle_count: u32,
    /// 0 = sticky, 1 = slip.
    pub wall_mode: u32,
    /// Wall margin in nodes ([`WALL_MARGIN_CELLS`]).
    pub wall_margin: u32,
    /// `dx = 1/grid_res`.
    pub dx: f32,
    /// `1/dx`.
    pub inv_dx: f32,
    /// Substep length.
    pub dt: f32,
    /// Particle volume `V_p` (normalised units).
    pub particle_volume: f32,
    /// Particle mass `ρ·V_p`.
    pub particle_mass: f32,
    /// `exp(−damping·dt)`.
    pub damping_factor: f32,
    /// `μ/E = 1/(2(1+ν))`.
    pub mu_per_youngs: f32,
    /// `λ/E = ν/((1+ν)(1−2ν))`.
    pub lambda_per_youngs: f32,
    /// Gravity (normalised units).
    pub gravity: [f32; 3],
    /// Colliders in the simulator's collider buffer ([`crate::mpm_rules::collider`]).
    pub collider_count: u32,
    /// 0: an anchored particle holds every node its stencil reaches; 1:
    /// only the node nearest it ([`AnchorRule`]).
    pub anchor_rule: u32,
    /// The FLIP transfer's share `α = exp(−dt/τ)`; 0 for APIC
    /// ([`Transfer::flip_share`]).
    pub flip_share: f32,
    /// Padding to the struct's 16-byte alignment.
    pub _pad: [u32; 2],
}

wgsl_mirror!(MpmUniforms => "MpmParams" in ["mpm/params"] {
    grid_res,
    particle_count,
    wall_mode,
    wall_margin,
    dx,
    inv_dx,
    dt,
    particle_volume,
    particle_mass,
    damping_factor,
    mu_per_youngs,
    lambda_per_youngs,
    gravity,
    collider_count,
    anchor_rule,
    flip_share,
    _pad,
});

impl MpmUniforms {
    /// Uniforms for `config`, `particle_count` particles of volume `particle_volume`.
    pub fn new(config: &MpmConfig, particle_volume: f64, particle_count: u32) -> Self {
        let (mu_per_youngs, lambda_per_youngs) = config.lame(1.0);
        Self {
            grid_res: config.grid_res,
            particle_count,
            wall_mode: match config.walls {
                WallMode::Sticky => 0,
                WallMode::Slip => 1,
            },
            wall_margin: WALL_MARGIN_CELLS,
            dx: config.dx() as f32,
            inv_dx: config.grid_res as f32,
            dt: config.dt() as f32,
            particle_volume: particle_volume as f32,
            particle_mass: (config.density * particle_volume) as f32,
            damping_factor: (-config.damping * config.dt()).exp() as f32,
            mu_per_youngs: mu_per_youngs as f32,
            lambda_per_youngs: lambda_per_youngs as f32,
            gravity: config.gravity.map(|g| g as f32),
            collider_count: config.colliders.len() as u32,
            anchor_rule: match config.anchoring {
                AnchorRule::Stencil => 0,
                AnchorRule::Nearest => 1,
                AnchorRule::Splats => 2,
            },
            flip_share: config.transfer.flip_share(config.dt()) as f32,
            _pad: [0; 2],
        }
    }
}
