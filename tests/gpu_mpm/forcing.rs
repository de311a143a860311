//! Impulses in the GPU MPM forward (src/mpm/forcing.rs): an
//! impulse moves the particles inside its radius first and adds exactly
//! its impulse to the momentum (sticky walls out of reach), a run without
//! an active impulse is bit for bit the plain forward, and a blow-up under
//! forces names its frame.

#![allow(clippy::needless_range_loop)] // parallel per-particle arrays

use crate::common;

use crate::support::*;
use physfit::mpm::{ForcedRun, ImpulseForce, MpmError, MpmSetup, MpmSimulator, ParticleState};

fn setup(n: usize, spacing: f32) -> MpmSetup {
    MpmSetup {
        particle_volume: (spacing as f64).powi(3),
        anchored: vec![false; n],
        held_points: Vec::new(),
        youngs: vec![2e4; n],
        youngs_max: 2e4,
    }
}

fn momentum(state: &ParticleState, mass: f64) -> [f64; 3] {
    let mut p = [0.0; 3];
    for v in &state.v {
        for a in 0..3 {
            p[a] += mass * v[a] as f64;
        }
    }
    p
}

#[test]
fn an_impulse_pushes_its_particles_first_and_adds_its_impulse_to_the_momentum() {
    let ctx = common::gpu();
    let config = small_config();
    let spacing = 1.0 / 32.0;
    let centre = [0.5f32, 0.5, 0.5];
    let x = block(6, spacing, centre);
    let n = x.len();
    let s = setup(n, spacing);
    let sim = MpmSimulator::new(&ctx, &config, &s).unwrap();
    let dt = config.dt();
    // Starts inside frame 1's 6th substep, lasts one frame: membership is
    // fixed mid-frame, and the window cuts substeps at both ends.
    let start = 5.3 * dt;
    let impulse = ImpulseForce {
        centre: [0.45, 0.45, 0.45],
        radius: 0.06,
        acceleration: [0.0, 0.0, 2.0],
        start,
        end: start + 1.0 / config.fps,
    };
    let mut run = ForcedRun::new(&ctx, &sim, vec![impulse.clone()]).unwrap();
    assert_eq!(run.members(0), None, "not fixed before its window");
    let initial = rest_state(x.clone(), vec![[0.0; 3]; n]);
    let frames = run.rollout(&ctx, &sim, &initial, 3).unwrap();
    let members = run.members(0).unwrap();
    let inside = |p: usize| {
        (0..3)
            .map(|a| (x[p][a] as f64 - impulse.centre[a]).powi(2))
            .sum::<f64>()
            .sqrt()
            <= impulse.radius
    };
    // Before it starts nothing moves, so its members are the particles
    // inside the ball at rest.
    assert_eq!(members, (0..n).filter(|&p| inside(p)).collect::<Vec<_>>());
    assert!(
        members.len() > 5 && members.len() < n / 2,
        "{}",
        members.len()
    );

    // Frame 1: the members have moved along the push, the others barely.
    let first = sim.read_state(&ctx, &frames[1]).unwrap();
    let mean_dz = |held: bool| {
        let ps: Vec<usize> = (0..n).filter(|p| members.contains(p) == held).collect();
        ps.iter()
            .map(|&p| (first.x[p][2] - x[p][2]) as f64)
            .sum::<f64>()
            / ps.len() as f64
    };
    let (held, others) = (mean_dz(true), mean_dz(false));
    eprintln!("frame 1 mean z displacement: members {held:.3e}, others {others:.3e}");
    assert!(held > 0.0 && others < 0.5 * held, "{held} vs {others}");

    // By frame 3 the window is over: momentum = m_p · members · a · (end − start).
    let mass = config.density * s.particle_volume;
    let end = sim.read_state(&ctx, &frames[3]).unwrap();
    let p = momentum(&end, mass);
    let expected = mass * members.len() as f64 * impulse.acceleration[2] * (impulse.end - start);
    let rel = (p[2] - expected).abs() / expected;
    eprintln!(
        "momentum z {:.6e}, expected {expected:.6e} (relative {rel:.1e}); x {:.1e}, y {:.1e}",
        p[2], p[0], p[1]
    );
    assert!(rel < 1e-4, "momentum {p:?}, expected z {expected}");
    assert!(
        p[0].abs() < 1e-4 * expected && p[1].abs() < 1e-4 * expected,
        "{p:?}"
    );
}

#[test]
fn without_an_active_impulse_the_forced_forward_is_the_plain_forward_bit_for_bit() {
    let ctx = common::gpu();
    let config = small_config();
    // 2³ particles 4 cells apart: no node has two contributions, so every
    // sum is exact whatever order the GPU adds in, and two schedules can be
    // compared bit for bit.
    let x: Vec<[f32; 3]> = block(2, 4.0 / 16.0, [0.5, 0.5, 0.5]);
    let n = x.len();
    let v = swirl(&x, [0.5, 0.5, 0.5], 0.4);
    let sim = MpmSimulator::new(&ctx, &config, &setup(n, 1.0 / 32.0)).unwrap();
    let initial = rest_state(x, v);
    let plain = sim.rollout(&ctx, &initial, 3).unwrap();
    let later = ImpulseForce {
        centre: [0.5; 3],
        radius: 1.0,
        acceleration: [5.0, 0.0, 0.0],
        start: 10.0,
        end: 11.0,
    };
    for impulses in [vec![], vec![later]] {
        let mut run = ForcedRun::new(&ctx, &sim, impulses).unwrap();
        let forced = run.rollout(&ctx, &sim, &initial, 3).unwrap();
        for k in 0..=3 {
            let a = sim.read_state(&ctx, &plain.frames[k]).unwrap().to_packed();
            let b = sim.read_state(&ctx, &forced[k]).unwrap().to_packed();
            let bits = |s: &[f32]| s.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "frame {k}");
        }
        assert_eq!(run.members(0), None);
    }
}

#[test]
fn a_blow_up_under_an_impulse_names_its_frame() {
    let ctx = common::gpu();
    let config = small_config();
    let spacing = 1.0 / 32.0;
    let x = block(3, spacing, [0.5, 0.5, 0.5]);
    let n = x.len();
    let sim = MpmSimulator::new(&ctx, &config, &setup(n, spacing)).unwrap();
    let start = 1.0 / config.fps; // frame 2
    let throw = ImpulseForce {
        centre: [0.5; 3],
        radius: 1.0,
        acceleration: [3000.0, 0.0, 0.0],
        start,
        end: start + 1.0,
    };
    let mut run = ForcedRun::new(&ctx, &sim, vec![throw]).unwrap();
    let result = run.rollout(&ctx, &sim, &rest_state(x, vec![[0.0; 3]; n]), 3);
    match result {
        Err(
            MpmError::LeftBox { frame, substep, .. } | MpmError::NonFinite { frame, substep, .. },
        ) => {
            assert_eq!(frame, 2);
            assert!(substep < config.substeps_per_frame);
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("the throw should have left the box"),
    }
}
