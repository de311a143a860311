//! `physfit bench mpm`: particle-substeps per second of the GPU MPM forward
//! and adjoint, peak GPU memory, and per-kernel times.
//!
//! Cases (the brief's): (a) 8,000 particles on a 64³ grid, 40 substeps per
//! frame; (b) 100,000 particles, 64³; (c) 500,000 particles, 128³. Particles
//! fill a cube at 8 per cell (spacing dx/2) with a swirling initial velocity
//! and E = 1e4 (stable at every substep count used). One frame is timed
//! forward ([`MpmSimulator::rollout`], including its once-per-frame health
//! check) and backward ([`MpmSimulator::backward`] with the default ⌈√S⌉
//! checkpointing, so it includes the replay). Large cases may time fewer
//! substeps per frame (`substeps` in the case, with fps scaled so that dt
//! = 1/1200 s everywhere): the rate is per particle-substep. Per-kernel times submit
//! each stage alone and wait for it, averaged over a few substeps.

use std::time::Instant;

use serde::Serialize;

use crate::gpu::GpuContext;
use crate::mpm::{
    BackwardOptions, FrameGradient, MpmConfig, MpmError, MpmSetup, MpmSimulator, ParticleState,
    StageBuffers, SubstepStage, WallMode,
};

/// One benchmark case.
#[derive(Clone, Debug, Serialize)]
pub struct MpmBenchCase {
    /// Case name ("a", "b", "c").
    pub name: String,
    /// Particles along one edge of the cube (count = edge³).
    pub edge: u32,
    /// Grid cells per axis.
    pub grid_res: u32,
    /// Substeps per frame timed.
    pub substeps: u32,
}

/// The brief's three cases.
pub fn default_cases() -> Vec<MpmBenchCase> {
    vec![
        MpmBenchCase {
            name: "a".into(),
            edge: 20,
            grid_res: 64,
            substeps: 40,
        },
        MpmBenchCase {
            name: "b".into(),
            edge: 46,
            grid_res: 64,
            substeps: 10,
        },
        MpmBenchCase {
            name: "c".into(),
            edge: 80,
            grid_res: 128,
            substeps: 4,
        },
    ]
}

/// Measured figures of one case.
#[derive(Clone, Debug, Serialize)]
pub struct MpmBenchResult {
    /// The case.
    pub case: MpmBenchCase,
    /// Particles simulated.
    pub particles: u64,
    /// Seconds for one forward frame.
    pub forward_s: f64,
    /// K used by the backward pass (every K-th substep state kept).
    pub checkpoint_every: u32,
    /// Seconds for the backward pass of that frame.
    pub adjoint_s: f64,
    /// Forward particle-substeps per second.
    pub forward_particle_substeps_per_s: f64,
    /// Adjoint particle-substeps per second.
    pub adjoint_particle_substeps_per_s: f64,
    /// Peak bytes allocated through the context during the case.
    pub peak_memory_bytes: u64,
    /// Milliseconds per substep of each stage, submitted alone.
    pub kernel_ms: Vec<(String, f64)>,
}

fn scene(case: &MpmBenchCase) -> (MpmConfig, ParticleState, f64) {
    let config = MpmConfig {
        grid_res: case.grid_res,
        // dt = 1/1200 s in every case (case a: 30 fps × 40 substeps).
        fps: 1200.0 / case.substeps as f64,
        substeps_per_frame: case.substeps,
        gravity: [0.0, -9.8, 0.0],
        damping: 0.0,
        density: 2000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
    };
    let dx = 1.0 / case.grid_res as f32;
    let spacing = dx / 2.0;
    let edge = case.edge as usize;
    let half = edge as f32 * spacing / 2.0;
    let mut x = Vec::with_capacity(edge * edge * edge);
    let mut v = Vec::with_capacity(edge * edge * edge);
    for i in 0..edge {
        for j in 0..edge {
            for k in 0..edge {
                let p = [
                    0.5 - half + (i as f32 + 0.5) * spacing,
                    0.5 - half + (j as f32 + 0.5) * spacing,
                    0.5 - half + (k as f32 + 0.5) * spacing,
                ];
                v.push([0.2 * (p[1] - 0.5), -0.2 * (p[0] - 0.5), 0.05]);
                x.push(p);
            }
        }
    }
    (
        config,
        ParticleState::at_rest(x, v),
        (spacing as f64).powi(3),
    )
}

/// Runs one case.
///
/// `checkpoint_every`: K of the backward pass (`None`: the default ⌈√S⌉).
pub fn run_case(
    ctx: &GpuContext,
    case: &MpmBenchCase,
    checkpoint_every: Option<u32>,
) -> Result<MpmBenchResult, MpmError> {
    ctx.memory.reset_peak();
    let (config, start, volume) = scene(case);
    let n = start.len();
    let youngs = 1e4;
    let sim = MpmSimulator::new(
        ctx,
        &config,
        &MpmSetup {
            particle_volume: volume,
            anchored: vec![false; n],
            youngs_max: youngs,
        },
    )?;
    // Warm-up: pipelines, first-touch of buffers.
    let warm = sim.upload_state(ctx, "bench warm-up", &start)?;
    let warm_next = sim.state_buffer(ctx, "bench warm-up next")?;
    let mut encoder = crate::gpu::encoder(ctx, "bench warm-up");
    sim.encode_substep(ctx, &mut encoder, &warm, &warm_next);
    ctx.queue.submit([encoder.finish()]);
    ctx.wait()?;

    let t = Instant::now();
    let rollout = sim.rollout(ctx, &start, 1)?;
    ctx.wait()?;
    let forward_s = t.elapsed().as_secs_f64();

    let seed = sim.upload_state(ctx, "bench dL/dstate", &start)?;
    let t = Instant::now();
    sim.backward(
        ctx,
        &rollout,
        &[FrameGradient {
            frame: 1,
            grad: &seed,
        }],
        &BackwardOptions {
            checkpoint_every,
            ..Default::default()
        },
    )?;
    let adjoint_s = t.elapsed().as_secs_f64();

    let kernel_ms = time_stages(ctx, &sim, &warm, &warm_next, &seed)?;
    let work = (n as u64 * case.substeps as u64) as f64;
    Ok(MpmBenchResult {
        case: case.clone(),
        particles: n as u64,
        forward_s,
        checkpoint_every: checkpoint_every
            .unwrap_or_else(|| (case.substeps as f64).sqrt().ceil() as u32)
            .clamp(1, case.substeps),
        adjoint_s,
        forward_particle_substeps_per_s: work / forward_s,
        adjoint_particle_substeps_per_s: work / adjoint_s,
        peak_memory_bytes: ctx.memory.peak(),
        kernel_ms,
    })
}

/// Milliseconds per stage, each submitted alone and waited for.
fn time_stages(
    ctx: &GpuContext,
    sim: &MpmSimulator,
    state: &crate::gpu::GpuBuffer,
    next: &crate::gpu::GpuBuffer,
    grad_next: &crate::gpu::GpuBuffer,
) -> Result<Vec<(String, f64)>, MpmError> {
    const REPEATS: u32 = 3;
    let grad = sim.state_buffer(ctx, "bench grad")?;
    let youngs_grad = ctx.storage_zeroed::<f32>("bench youngs grad", sim.particle_count())?;
    let b = StageBuffers {
        state,
        next,
        grad_next,
        grad: &grad,
        youngs_grad: &youngs_grad,
    };
    let mut stages: Vec<SubstepStage> = SubstepStage::FORWARD.to_vec();
    stages.extend(
        SubstepStage::ADJOINT
            .iter()
            .filter(|s| !SubstepStage::FORWARD.contains(s)),
    );
    let mut totals = vec![0.0f64; stages.len()];
    for _ in 0..REPEATS {
        // Run every stage in substep order so each sees realistic inputs.
        for (i, stage) in stages.iter().enumerate() {
            let t = Instant::now();
            let mut encoder = crate::gpu::encoder(ctx, "bench stage");
            sim.encode_stage(ctx, &mut encoder, *stage, &b);
            ctx.queue.submit([encoder.finish()]);
            ctx.wait()?;
            totals[i] += t.elapsed().as_secs_f64();
        }
    }
    Ok(stages
        .iter()
        .zip(totals)
        .map(|(s, t)| (s.name().to_string(), t * 1e3 / REPEATS as f64))
        .collect())
}
