//! Small MPM scenes shared by the tests/gpu_mpm/*.rs files.
#![allow(dead_code)]

use physfit::mpm::{MpmConfig, ParticleState, WallMode};

/// 16³ grid, 24 fps, 10 substeps, ρ = 1000, ν = 0.3, no gravity or damping.
pub fn small_config() -> MpmConfig {
    MpmConfig {
        grid_res: 16,
        fps: 24.0,
        substeps_per_frame: 10,
        gravity: [0.0; 3],
        damping: 0.0,
        density: 1000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
        colliders: Vec::new(),
    }
}

/// `side³` particle positions (not splats: see [`crate::common::block`])
/// on a lattice of spacing `spacing` centred at `centre`, slightly jittered
/// (deterministically) so no particle sits on a cell face.
pub fn block(side: usize, spacing: f32, centre: [f32; 3]) -> Vec<[f32; 3]> {
    let mut out = Vec::new();
    let half = (side as f32 - 1.0) * 0.5;
    for i in 0..side {
        for j in 0..side {
            for k in 0..side {
                let jitter = |a: usize| ((a * 7919 + 13) % 97) as f32 / 97.0 * 0.1 * spacing;
                out.push([
                    centre[0] + (i as f32 - half) * spacing + jitter(i + 3 * j + 5 * k),
                    centre[1] + (j as f32 - half) * spacing + jitter(2 * i + j + 7 * k),
                    centre[2] + (k as f32 - half) * spacing + jitter(3 * i + 11 * j + k),
                ]);
            }
        }
    }
    out
}

/// A smooth velocity field: translation + rotation about the block centre + shear.
pub fn swirl(positions: &[[f32; 3]], centre: [f32; 3], scale: f32) -> Vec<[f32; 3]> {
    positions
        .iter()
        .map(|p| {
            let r = [p[0] - centre[0], p[1] - centre[1], p[2] - centre[2]];
            [
                scale * (0.3 - 2.0 * r[1] + 1.5 * r[2]),
                scale * (-0.2 + 2.0 * r[0] + 3.0 * r[0]),
                scale * (0.1 - 1.5 * r[0] - 2.5 * r[2]),
            ]
        })
        .collect()
}

pub use crate::common::pseudo_random;

/// Rest state with positions and velocities.
pub fn rest_state(x: Vec<[f32; 3]>, v: Vec<[f32; 3]>) -> ParticleState {
    ParticleState::at_rest(x, v)
}
