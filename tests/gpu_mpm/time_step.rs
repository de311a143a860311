//! The GPU simulator's (f32) motion against the substep count, beside its
//! f64 twin's (docs/benchmarks.md "The simulator against its own time
//! step, at a fixed E"): on a fixed grid both change their motion more per
//! doubling of the substeps, by the same amounts, so that behaviour is the
//! rules' (APIC's transfers), not f32 rounding at small dt.

// Index loops over particles and axes read like the equations they code.
#![allow(clippy::needless_range_loop)]

use crate::common;
use crate::twin::to64;
use physfit::mpm::{MpmConfig, MpmOptions, MpmSetup, MpmSimulator, ParticleState, WallMode};
use physfit::reference::mpm::{frame_states, MpmSetup64, MpmState64};

const YOUNGS: f32 = 1.0e4;
const FRAMES: u32 = 4;

/// A 6 × 2 × 2-cell bar on grid 16, 8 particles per cell on a regular
/// lattice, centred in the box, its first cell layer along x anchored
/// (physfit's rule) and the rest swaying along y in proportion to the
/// distance from the anchored end; `substeps` per frame at 30 fps.
fn bar(substeps: u32) -> (MpmConfig, ParticleState, Vec<bool>, f64) {
    let grid_res = 16u32;
    let dx = 1.0 / grid_res as f32;
    let h = dx / 2.0;
    let n = [12usize, 4, 4];
    let start: [f32; 3] = std::array::from_fn(|a| (8 - n[a] / 4) as f32 * dx);
    let length = n[0] as f32 * h;
    let (mut x, mut v, mut anchored) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n[0] {
        for j in 0..n[1] {
            for k in 0..n[2] {
                let idx = [i, j, k];
                let p: [f32; 3] = std::array::from_fn(|a| start[a] + (idx[a] as f32 + 0.5) * h);
                let held = i < 2;
                let sway = 0.5 * (p[0] - start[0]) / length;
                x.push(p);
                v.push(if held { [0.0; 3] } else { [0.0, sway, 0.0] });
                anchored.push(held);
            }
        }
    }
    let config = MpmConfig {
        grid_res,
        fps: 30.0,
        substeps_per_frame: substeps,
        gravity: [0.0; 3],
        damping: 0.0,
        density: 2000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
        colliders: Vec::new(),
        anchoring: physfit::mpm_rules::AnchorRule::Stencil,
        transfer: Default::default(),
    };
    (
        config,
        ParticleState::at_rest(x, v),
        anchored,
        (h as f64).powi(3),
    )
}

/// RMS displacement of the free particles of `last` from `first`.
fn rms(first: &MpmState64, last: &MpmState64, anchored: &[bool]) -> f64 {
    let (mut sum, mut count) = (0.0, 0.0);
    for p in 0..first.len() {
        if anchored[p] {
            continue;
        }
        for a in 0..3 {
            sum += (last.x[p][a] - first.x[p][a]).powi(2);
        }
        count += 1.0;
    }
    (sum / count).sqrt()
}

#[test]
fn the_gpu_changes_its_motion_with_the_substeps_as_its_f64_twin_does() {
    let ctx = common::gpu();
    let mut gpu = Vec::new();
    let mut twin = Vec::new();
    for substeps in [6, 12, 24] {
        let (config, start, anchored, volume) = bar(substeps);
        let n = start.len();
        let sim = MpmSimulator::with_options(
            &ctx,
            &config,
            &MpmSetup {
                particle_volume: volume,
                anchored: anchored.clone(),
                held_points: Vec::new(),
                youngs: vec![YOUNGS; n],
                youngs_max: YOUNGS as f64,
            },
            &MpmOptions::default(),
        )
        .unwrap();
        let rollout = sim.rollout(&ctx, &start, FRAMES).unwrap();
        let end = sim
            .read_state(&ctx, rollout.frames.last().unwrap())
            .unwrap();
        let first = to64(&start);
        gpu.push(rms(&first, &to64(&end), &anchored));
        let setup = MpmSetup64 {
            config,
            particle_volume: volume,
            anchored: anchored.clone(),
            held_points: Vec::new(),
            poisson: None,
        };
        let states = frame_states(&setup, &first, &vec![YOUNGS as f64; n], FRAMES as usize);
        twin.push(rms(&first, &states[FRAMES as usize], &anchored));
    }
    eprintln!(
        "RMS displacement at frame {FRAMES}, 6/12/24 substeps: GPU {gpu:.6?}, twin {twin:.6?}"
    );
    let changes = |m: &[f64]| [m[1] - m[0], m[2] - m[1]];
    let (g, t) = (changes(&gpu), changes(&twin));
    for k in 0..2 {
        assert!(
            (g[k] - t[k]).abs() < 0.02 * t[k].abs(),
            "change per doubling {k}: GPU {:+e}, twin {:+e}",
            g[k],
            t[k]
        );
    }
    assert!(
        g[1].abs() > g[0].abs(),
        "the GPU's motion converged in the substeps ({:+e}, then {:+e}): update \
         docs/benchmarks.md \"The simulator against its own time step\"",
        g[0],
        g[1]
    );
}
