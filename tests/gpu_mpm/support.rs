//! Small MPM scenes shared by the tests/gpu_mpm/*.rs files.
#![allow(dead_code)]

use physfit::deform::DeformSetup;
use physfit::fit::{FitProblem, FitProblemOptions};
use physfit::mpm::{MpmConfig, ParticleState, WallMode};
use physfit::reference::chain::ChainProblem64;
use physfit::reference::loss::{LossWeights64, Rgb64};
use physfit::reference::mpm::MpmSetup64;
use physfit::reference::splat::SplatParams64;
use physfit::scene::Scene;

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
        anchoring: physfit::mpm_rules::AnchorRule::Stencil,
        transfer: Default::default(),
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

/// The f64 twin of `problem`'s chain on `scene` (docs/design.md §
/// Verification 3): the problem's own drivers (not a second K-Means),
/// their volume and anchored flags, the scene's MPM config, the
/// deformation setup of those drivers, the scene's splats, cameras and
/// background, frames `1..=frames` read back from the PNGs on disk, the
/// loss weights of `o` and TV over the driver graph at `tv_weight`.
pub fn chain_twin(
    scene: &Scene,
    problem: &FitProblem,
    o: &FitProblemOptions,
    frames: usize,
    tv_weight: f64,
) -> ChainProblem64 {
    let drivers = problem.drivers();
    let references = (1..=frames)
        .map(|k| {
            scene
                .views
                .iter()
                .map(|view| {
                    let f = view.frames.as_ref().unwrap().load(k).unwrap();
                    Rgb64 {
                        width: f.width as usize,
                        height: f.height as usize,
                        // 8-bit values: `b / 255` exactly.
                        pixels: f
                            .pixels
                            .iter()
                            .map(|p| {
                                std::array::from_fn(|c| (f64::from(p[c]) * 255.0).round() / 255.0)
                            })
                            .collect(),
                    }
                })
                .collect()
        })
        .collect();
    ChainProblem64 {
        mpm: MpmSetup64 {
            config: scene.mpm_config(),
            particle_volume: drivers.volume,
            anchored: drivers.anchored.clone(),
            held_points: drivers
                .held_points
                .iter()
                .map(|p| p.map(f64::from))
                .collect(),
            poisson: None,
        },
        deform: DeformSetup::from_drivers(drivers, scene.gaussians()).unwrap(),
        splats: SplatParams64::from(scene.gaussians()),
        background: scene.background.map(f64::from),
        cameras: scene.views.iter().map(|v| v.camera.clone()).collect(),
        references,
        weights: LossWeights64 {
            l1: f64::from(o.weights.l1),
            ssim: f64::from(o.weights.ssim),
        },
        tv_edges: drivers.graph.clone(),
        tv_weight,
    }
}
