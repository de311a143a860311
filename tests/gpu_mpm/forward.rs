//! GPU MPM forward physics on the present adapter (lavapipe in CI): free
//! fall, momentum conservation, anchored particles, the time-step refusal
//! blow-up detection, cell-binned against scatter P2G, and the active box's
//! folded indirect dispatch.

#![allow(clippy::needless_range_loop)] // parallel per-particle arrays

use crate::common;

use crate::support::*;
use physfit::mpm::{
    BackwardWork, MpmError, MpmOptions, MpmSetup, MpmSimulator, ParticleState, RolloutOptions,
    ScatterMode,
};
use physfit::mpm_rules::AnchorRule;

/// `n` free particles of volume `spacing³`, all at E = `youngs_max`.
fn setup(n: usize, spacing: f32, youngs_max: f64) -> MpmSetup {
    MpmSetup {
        particle_volume: (spacing as f64).powi(3),
        anchored: vec![false; n],
        held_points: Vec::new(),
        youngs: vec![youngs_max as f32; n],
        youngs_max,
    }
}

/// A simulator whose time step is not checked, at E = 1e10 everywhere:
/// 1e10 needs thousands of substeps, and the tests give it 10.
fn unstable(
    ctx: &physfit::gpu::GpuContext,
    config: &physfit::mpm::MpmConfig,
    n: usize,
    spacing: f32,
) -> MpmSimulator {
    let options = MpmOptions {
        check_time_step: false,
        ..Default::default()
    };
    MpmSimulator::with_options(ctx, config, &setup(n, spacing, 1e10), &options).unwrap()
}

#[test]
fn free_fall_follows_gravity() {
    let ctx = common::gpu();
    let mut config = small_config();
    config.gravity = [0.0, -2.0, 0.0];
    let spacing = 1.0 / 32.0;
    let x = block(4, spacing, [0.5, 0.6, 0.5]);
    let n = x.len();
    let sim = MpmSimulator::new(&ctx, &config, &setup(n, spacing, 1e4)).unwrap();
    let frames = 3;
    let rollout = sim
        .rollout(&ctx, &rest_state(x.clone(), vec![[0.0; 3]; n]), frames)
        .unwrap();
    let end = sim
        .read_state(&ctx, rollout.frames.last().unwrap())
        .unwrap();
    // Symplectic Euler: after s substeps v = s·dt·g, Δx = dt²·g·s(s+1)/2,
    // which is g·t²/2 + g·t·dt/2.
    let steps = (frames * config.substeps_per_frame) as f64;
    let dt = config.dt();
    let t = steps * dt;
    let expected_dy = -2.0 * dt * dt * steps * (steps + 1.0) / 2.0;
    let analytic = -2.0 * t * t / 2.0;
    assert!((expected_dy - analytic).abs() <= 2.0 * t * dt / 2.0 + 1e-12);
    for p in 0..n {
        let dy = (end.x[p][1] - x[p][1]) as f64;
        assert!(
            (dy - expected_dy).abs() < 1e-5,
            "particle {p}: {dy} vs {expected_dy}"
        );
        assert!((end.x[p][0] - x[p][0]).abs() < 1e-6);
        assert!((end.v[p][1] as f64 - (-2.0 * t)).abs() < 1e-4);
        for r in 0..3 {
            for c in 0..3 {
                let id = if r == c { 1.0 } else { 0.0 };
                assert!((end.f[p][r][c] - id).abs() < 1e-5, "F stays identity");
            }
        }
    }
}

fn momenta(s: &ParticleState, mass: f64, dx: f64) -> ([f64; 3], [f64; 3]) {
    let mut lin = [0.0; 3];
    let mut ang = [0.0; 3];
    for p in 0..s.len() {
        let x = s.x[p].map(|v| v as f64);
        let v = s.v[p].map(|v| v as f64);
        let c = s.c[p];
        let d = dx * dx / 4.0;
        for a in 0..3 {
            lin[a] += mass * v[a];
        }
        let cross = [
            x[1] * v[2] - x[2] * v[1],
            x[2] * v[0] - x[0] * v[2],
            x[0] * v[1] - x[1] * v[0],
        ];
        // APIC affine part: m·(dx²/4)·(C₃₂ − C₂₃, C₁₃ − C₃₁, C₂₁ − C₁₂).
        let affine = [
            (c[2][1] - c[1][2]) as f64,
            (c[0][2] - c[2][0]) as f64,
            (c[1][0] - c[0][1]) as f64,
        ];
        for a in 0..3 {
            ang[a] += mass * (cross[a] + d * affine[a]);
        }
    }
    (lin, ang)
}

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

#[test]
fn momentum_is_conserved_without_gravity_or_walls() {
    let ctx = common::gpu();
    let config = small_config();
    let spacing = 1.0 / 32.0;
    let centre = [0.5, 0.5, 0.5];
    let x = block(5, spacing, centre);
    let n = x.len();
    let v = swirl(&x, centre, 0.5);
    let s = setup(n, spacing, 2e4);
    let sim = MpmSimulator::new(&ctx, &config, &s).unwrap();
    sim.set_youngs(&ctx, &vec![2e4; n]).unwrap();
    let start = rest_state(x, v);
    let rollout = sim.rollout(&ctx, &start, 10).unwrap(); // 100 substeps
    let end = sim
        .read_state(&ctx, rollout.frames.last().unwrap())
        .unwrap();
    let mass = config.density * s.particle_volume;
    let (l0, a0) = momenta(&start, mass, config.dx());
    let (l1, a1) = momenta(&end, mass, config.dx());
    let dl = norm([l1[0] - l0[0], l1[1] - l0[1], l1[2] - l0[2]]) / norm(l0);
    let da = norm([a1[0] - a0[0], a1[1] - a0[1], a1[2] - a0[2]]) / norm(a0);
    eprintln!("relative drift over 100 substeps: linear {dl:.2e}, angular {da:.2e}");
    assert!(dl <= 1e-4, "linear momentum drift {dl}");
    assert!(da <= 1e-4, "angular momentum drift {da}");
    // The block really deformed (stress was active).
    let moved = (0..n)
        .map(|p| (end.f[p][0][1] - end.f[p][1][0]).abs())
        .fold(0.0f32, f32::max);
    assert!(moved > 1e-3, "F barely changed: {moved}");
}

#[test]
fn anchored_particles_do_not_move() {
    let ctx = common::gpu();
    let mut config = small_config();
    config.gravity = [0.0, -5.0, 0.0];
    let spacing = 1.0 / 32.0;
    let x = block(4, spacing, [0.5, 0.5, 0.5]);
    let n = x.len();
    let anchored: Vec<bool> = x.iter().map(|p| p[1] > 0.53).collect();
    assert!(anchored.iter().any(|a| *a) && anchored.iter().any(|a| !a));
    let s = MpmSetup {
        anchored: anchored.clone(),
        held_points: Vec::new(),
        ..setup(n, spacing, 1e4)
    };
    let sim = MpmSimulator::new(&ctx, &config, &s).unwrap();
    let start = rest_state(x.clone(), vec![[0.0, 0.0, 0.3]; n]);
    let rollout = sim.rollout(&ctx, &start, 4).unwrap();
    let end = sim
        .read_state(&ctx, rollout.frames.last().unwrap())
        .unwrap();
    for p in 0..n {
        if anchored[p] {
            assert_eq!(end.x[p], x[p], "anchored particle {p} moved");
            assert_eq!(end.v[p], [0.0; 3]);
            assert_eq!(end.f[p], start.f[p]);
        }
    }
    // The free ones are held by the anchored nodes but still deform.
    let free_moved = (0..n)
        .filter(|&p| !anchored[p])
        .map(|p| (end.x[p][1] - x[p][1]).abs())
        .fold(0.0f32, f32::max);
    assert!(
        free_moved > 1e-5,
        "free particles did not move: {free_moved}"
    );
}

/// The `splats` anchoring rule holds the grid by the anchored splats'
/// points: a setup with anchored particles and no such points would hold
/// nothing, and is refused rather than run unanchored.
#[test]
fn the_splats_rule_without_its_points_is_refused() {
    let ctx = common::gpu();
    let mut config = small_config();
    config.anchoring = AnchorRule::Splats;
    let mut s = setup(8, 0.03, 1e4);
    s.anchored[0] = true;
    let err = MpmSimulator::new(&ctx, &config, &s).err().expect("refused");
    assert!(err.to_string().contains("held_points"), "{err}");
    s.held_points = vec![[0.5; 3]];
    MpmSimulator::new(&ctx, &config, &s).expect("with its points");
}

#[test]
fn too_few_substeps_are_refused_with_the_number_needed() {
    let ctx = common::gpu();
    let mut config = small_config();
    config.substeps_per_frame = 2;
    let err = MpmSimulator::new(&ctx, &config, &setup(8, 0.03, 1e8))
        .err()
        .expect("refused");
    let needed = physfit::mpm_rules::stability::min_substeps_per_frame(
        config.fps,
        1e8,
        config.poisson,
        config.density,
        config.dx(),
    );
    match &err {
        MpmError::TooFewSubsteps { needed: n, .. } => assert_eq!(*n, needed),
        e => panic!("wrong error {e}"),
    }
    assert!(
        err.to_string().contains(&format!("at least {needed}")),
        "{err}"
    );
    // set_youngs applies the same bound to the values actually used.
    config.substeps_per_frame = 10;
    let sim = MpmSimulator::new(&ctx, &config, &setup(8, 0.03, 1e3)).unwrap();
    assert!(matches!(
        sim.set_youngs(&ctx, &[1e9; 8]),
        Err(MpmError::TooFewSubsteps { .. })
    ));
}

#[test]
fn blow_up_is_caught_and_named() {
    let ctx = common::gpu();
    let config = small_config();
    let spacing = 1.0 / 32.0;
    let x = block(4, spacing, [0.5, 0.5, 0.5]);
    let n = x.len();
    // 1e10 needs thousands of substeps; 10 explode.
    let sim = unstable(&ctx, &config, n, spacing);
    let v = swirl(&x, [0.5; 3], 1.0);
    let err = sim
        .rollout(&ctx, &rest_state(x.clone(), v.clone()), 5)
        .err()
        .expect("the run must stop");
    eprintln!("{err}");
    let failed_at = |err: MpmError| match err {
        MpmError::NonFinite { frame, substep, .. } | MpmError::LeftBox { frame, substep, .. } => {
            (frame, substep)
        }
        e => panic!("wrong error {e}"),
    };
    let (frame, substep) = failed_at(err);
    assert!((1..=5).contains(&frame));
    assert!(substep < config.substeps_per_frame);
    // Keeping in-frame checkpoints changes neither the stop nor its place.
    let kept = sim
        .rollout_with(
            &ctx,
            &rest_state(x.clone(), v.clone()),
            5,
            &RolloutOptions {
                keep_checkpoints: true,
                checkpoint_every: Some(3),
                ..Default::default()
            },
            &mut BackwardWork::new(),
        )
        .err()
        .expect("the run keeping checkpoints must stop too");
    assert_eq!(failed_at(kept), (frame, substep));
    // The same run with one substep per frame (same dt) checks health after
    // every substep, so the frame where it stops is the failing substep.
    let mut one = config.clone();
    one.fps *= config.substeps_per_frame as f64;
    one.substeps_per_frame = 1;
    let sim_one = unstable(&ctx, &one, n, spacing);
    let frames = 5 * config.substeps_per_frame;
    let err_one = sim_one
        .rollout(&ctx, &rest_state(x, v), frames)
        .err()
        .expect("the one-substep run must stop too");
    let (frame_one, substep_one) = failed_at(err_one);
    assert_eq!(substep_one, 0);
    assert_eq!(
        (frame - 1) * config.substeps_per_frame + substep,
        frame_one - 1,
        "frame {frame} substep {substep} vs one-substep frame {frame_one}"
    );
}

#[test]
fn particles_outside_the_box_are_refused() {
    let ctx = common::gpu();
    let config = small_config();
    let sim = MpmSimulator::new(&ctx, &config, &setup(1, 0.03, 1e3)).unwrap();
    let err = sim
        .rollout(&ctx, &rest_state(vec![[0.99, 0.5, 0.5]], vec![[0.0; 3]]), 1)
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("outside the simulation box"),
        "{err}"
    );
}

#[test]
fn injected_nan_is_reported_with_frame_and_substep() {
    let ctx = common::gpu();
    let config = small_config();
    let spacing = 1.0 / 32.0;
    let x = block(3, spacing, [0.5, 0.5, 0.5]);
    let n = x.len();
    let sim = MpmSimulator::new(&ctx, &config, &setup(n, spacing, 1e3)).unwrap();
    let mut packed = rest_state(x, vec![[0.0; 3]; n]).to_packed();
    // A NaN velocity on particle 5 (bypassing upload_state's check, as a
    // corrupted GPU-side state would).
    packed[5 * physfit::mpm::layout::STATE_STRIDE + 4] = f32::NAN;
    let start = ctx.storage_from_slice("nan state", &packed).unwrap();
    let err = sim.rollout_from(&ctx, start, 3).err().expect("must stop");
    match err {
        MpmError::NonFinite {
            frame,
            substep,
            particle,
        } => {
            assert_eq!((frame, substep), (1, 0), "{err}");
            assert!(particle < n as u32);
        }
        e => panic!("wrong error {e}"),
    }
    // And upload_state refuses it on the host, naming the particle.
    let mut bad = rest_state(block(3, spacing, [0.5; 3]), vec![[0.0; 3]; n]);
    bad.v[5][1] = f32::NAN;
    let msg = sim
        .upload_state(&ctx, "start", &bad)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("particle 5") && msg.contains("non-finite"),
        "{msg}"
    );
}

/// Cell-binned P2G (default on CPU adapters) and the one-kernel atomic
/// scatter (default on GPUs) build the same grid up to f32 summation order,
/// anchored nodes included: the rollouts agree to f32 rounding.
#[test]
fn binned_and_scatter_p2g_agree() {
    let ctx = common::gpu();
    let mut config = small_config();
    config.gravity = [0.0, -5.0, 0.0];
    let spacing = 1.0 / 32.0;
    let centre = [0.5, 0.5, 0.5];
    let x = block(5, spacing, centre);
    let n = x.len();
    let v = swirl(&x, centre, 0.5);
    let anchored: Vec<bool> = x.iter().map(|p| p[1] > 0.55).collect();
    assert!(anchored.iter().any(|a| *a) && anchored.iter().any(|a| !a));
    let s = MpmSetup {
        anchored,
        held_points: Vec::new(),
        ..setup(n, spacing, 2e4)
    };
    let sim = MpmSimulator::new(&ctx, &config, &s).unwrap();
    assert_eq!(
        sim.binned_scatters(),
        ctx.adapter_info.device_type == wgpu::DeviceType::Cpu,
        "CPU adapters default to binned P2G, GPUs to atomic scatters"
    );
    let start = rest_state(x, v);
    let mut runs = Vec::new();
    for scatters in [ScatterMode::Binned, ScatterMode::Atomic] {
        let options = MpmOptions {
            scatters,
            ..Default::default()
        };
        let sim = MpmSimulator::with_options(&ctx, &config, &s, &options).unwrap();
        let rollout = sim.rollout(&ctx, &start, 3).unwrap();
        let frames: Vec<Vec<f32>> = rollout
            .frames
            .iter()
            .map(|f| sim.read_state(&ctx, f).unwrap().to_packed())
            .collect();
        runs.push(frames);
    }
    // f32 rounding differences of the grid sums, amplified by the dynamics
    // (measured on lavapipe: 4e-6 after one frame of 10 substeps, 9e-6
    // after three, against values ~1).
    for k in 1..=3 {
        let scale = runs[1][k].iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let diff = runs[0][k]
            .iter()
            .zip(&runs[1][k])
            .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        eprintln!("binned vs scatter P2G, frame {k}: max |Δ| {diff:.2e} (max |value| {scale:.2e})");
        assert!(diff <= 1e-4 * scale, "frame {k}: {diff} (scale {scale})");
    }
    let ends = [&runs[0][3], &runs[1][3]];
    // Not vacuous: the block moved and deformed.
    assert!(*ends[1] != start.to_packed());
}

/// Host twin of `ComputeKernel::workgroups_for` for `size`-thread
/// workgroups and the 65,535-workgroup dimension limit.
fn folded_workgroups(threads: u32, size: u32) -> [u32; 3] {
    let groups = threads.div_ceil(size);
    let x = groups.min(65_535);
    [x, groups.div_ceil(x.max(1)), 1]
}

#[test]
fn active_box_dispatch_folds_past_65535_workgroups() {
    use physfit::mpm::grid_box::{GridBox, GridBoxBuffers};
    use physfit::mpm::uniforms::MpmUniforms;
    let ctx = common::gpu();
    let config = small_config();
    let uniforms = ctx
        .uniform_buffer("test mpm uniforms", &MpmUniforms::new(&config, 1e-6, 1))
        .unwrap();
    let kernel = GridBox::new(&ctx).unwrap();
    // Only the bounds matter to mpm/grid_box (not the grid size): boxes of
    // 16,776,960 nodes (exactly 65,535 workgroups), 27M (folds to 2 rows),
    // 1,000 and a 1-node box.
    for dims in [[256u32, 255, 257], [300, 300, 300], [10, 10, 10], [1, 1, 1]] {
        let lo = [4u32, 5, 6];
        let bounds: Vec<u32> = lo
            .iter()
            .copied()
            .chain((0..3).map(|a| lo[a] + dims[a] - 1))
            .collect();
        let bounds = ctx.storage_from_slice("test bounds", &bounds).unwrap();
        let node_box = ctx.storage_zeroed::<u32>("test node box", 8).unwrap();
        let args = ctx.storage_zeroed::<u32>("test dispatch args", 6).unwrap();
        let bg = kernel.bind(
            &ctx,
            &GridBoxBuffers {
                uniforms: &uniforms,
                bounds: &bounds,
                node_box: &node_box,
                dispatch_args: &args,
            },
        );
        let mut encoder = physfit::gpu::encoder(&ctx, "test grid_box");
        kernel.dispatch(&mut encoder, &bg);
        ctx.queue.submit([encoder.finish()]);
        ctx.check().unwrap();
        let count = dims[0] * dims[1] * dims[2];
        let node_box: Vec<u32> = ctx.read_buffer(&node_box).unwrap();
        assert_eq!(node_box[..7], [4, 5, 6, dims[0], dims[1], dims[2], count]);
        let args: Vec<u32> = ctx.read_buffer(&args).unwrap();
        // Per-node kernels (256 per workgroup), then per-column kernels (one
        // thread per (x, y) column of base cells, 8 per workgroup, from byte
        // 12): the box spans the particles' base nodes plus 2, so dims − 2
        // cells per axis (none in a box of under 3 nodes, which real bounds
        // never give).
        assert_eq!(args[..3], folded_workgroups(count, 256), "box {dims:?}");
        assert!(args[0] <= 65_535 && args[1] <= 65_535);
        assert!(args[0] as u64 * args[1] as u64 * 256 >= count as u64);
        let columns = dims[0].saturating_sub(2) * dims[1].saturating_sub(2);
        assert_eq!(args[3..], folded_workgroups(columns, 8), "box {dims:?}");
        assert!(args[3] as u64 * args[4] as u64 * 8 >= columns as u64);
        assert_eq!(
            physfit::mpm::grid_box::COLUMN_DISPATCH_OFFSET,
            3 * std::mem::size_of::<u32>() as u64
        );
        // The bounds are reset for the next substep.
        let reset: Vec<u32> = ctx.read_buffer(&bounds).unwrap();
        assert_eq!(reset, physfit::mpm::grid_bounds::EMPTY_BOUNDS);
    }
    assert_eq!(folded_workgroups(300 * 300 * 300, 256), [65_535, 2, 1]);
    assert_eq!(folded_workgroups(256 * 255 * 257, 256), [65_535, 1, 1]);
}

#[test]
fn bind_groups_are_built_once_per_set_of_buffers() {
    use physfit::mpm::bind_group_cache::BindGroupCache;
    use physfit::mpm::grid_box::{GridBox, GridBoxBuffers};
    use physfit::mpm::uniforms::MpmUniforms;
    let ctx = common::gpu();
    let kernel = GridBox::new(&ctx).unwrap();
    let buffer = |label: &str| ctx.storage_zeroed::<u32>(label, 8).unwrap();
    let uniforms = ctx
        .uniform_buffer("u", &MpmUniforms::new(&small_config(), 1e-6, 1))
        .unwrap();
    let (bounds, node_box) = (buffer("b"), buffer("n"));
    let args = [buffer("args 0"), buffer("args 1")];
    let cache = BindGroupCache::default();
    let mut built = 0;
    for round in 0..3 {
        for a in &args {
            let b = GridBoxBuffers {
                uniforms: &uniforms,
                bounds: &bounds,
                node_box: &node_box,
                dispatch_args: a,
            };
            cache.get("grid_box", &b.by_name(), || {
                built += 1;
                kernel.bind(&ctx, &b)
            });
        }
        assert_eq!(
            built, 2,
            "round {round}: one bind group per argument buffer"
        );
    }
    assert_eq!(cache.len(), 2);
    cache.clear();
    assert!(cache.is_empty());
    ctx.check().unwrap();
}

/// A frame recorded into the caller's encoder (with other work in the same
/// submission) gives the frame `run_frame` gives, and its check names a
/// blow-up's frame and substep as `run_frame` does.
#[test]
fn a_frame_recorded_into_the_callers_encoder_matches_run_frame() {
    let ctx = common::gpu();
    let config = small_config();
    let spacing = 1.0 / 32.0;
    let x = block(4, spacing, [0.5, 0.5, 0.5]);
    let n = x.len();
    let v = swirl(&x, [0.5; 3], 0.5);
    let start = rest_state(x.clone(), v.clone());
    let sim = MpmSimulator::new(&ctx, &config, &setup(n, spacing, 1e4)).unwrap();
    let first = sim.upload_state(&ctx, "start", &start).unwrap();
    let by_run = sim.state_buffer(&ctx, "run_frame end").unwrap();
    sim.run_frame(&ctx, &first, &by_run, 1).unwrap();
    let recorded = sim.state_buffer(&ctx, "encode_frame end").unwrap();
    let other = sim.state_buffer(&ctx, "other work").unwrap();
    let mut encoder = physfit::gpu::encoder(&ctx, "caller's encoder");
    encoder.clear_buffer(other.raw(), 0, None);
    sim.encode_frame(&ctx, &mut encoder, &first, &recorded);
    ctx.queue.submit([encoder.finish()]);
    sim.check_frame(&ctx, &first, 1).unwrap();
    let a = sim.read_state(&ctx, &by_run).unwrap().to_packed();
    let b = sim.read_state(&ctx, &recorded).unwrap().to_packed();
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs() / (1.0 + x.abs()))
        .fold(0.0f32, f32::max);
    // The same substeps: equal up to f32 atomics' summation order.
    assert!(worst <= 1e-4, "{worst}");
    assert_ne!(a, start.to_packed(), "the frame moved");

    // A blow-up is caught by the check, at the substep run_frame names.
    let sim = unstable(&ctx, &config, n, spacing);
    let first = sim.upload_state(&ctx, "start", &start).unwrap();
    let end = sim.state_buffer(&ctx, "end").unwrap();
    let by_run = sim
        .run_frame(&ctx, &first, &end, 1)
        .unwrap_err()
        .to_string();
    let mut encoder = physfit::gpu::encoder(&ctx, "caller's encoder");
    sim.encode_frame(&ctx, &mut encoder, &first, &end);
    ctx.queue.submit([encoder.finish()]);
    let by_check = sim.check_frame(&ctx, &first, 1).unwrap_err().to_string();
    assert_eq!(by_run, by_check);
}
