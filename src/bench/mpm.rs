//! `physfit bench mpm`: particle-substeps per second of the GPU MPM forward
//! and adjoint, peak GPU memory, and per-kernel times.
//!
//! Cases (fixed, so that figures compare across commits and with the
//! targets in docs/benchmarks.md): (a) 8,000 particles on a 64³ grid, 40
//! substeps per frame; (b) 100,000 particles, 64³; (c) 500,000 particles,
//! 128³; (a-flip) case a under the FLIP transfer. Particles
//! fill a cube at 8 per cell (spacing dx/2) with a swirling initial velocity
//! and E = 1e4 (stable at every substep count used). One frame is timed
//! forward ([`MpmSimulator::rollout_with`], including its once-per-frame
//! health check, keeping its in-frame checkpoints as stage 2 of the fit
//! does, which also leaves its last segment to the backward) and backward
//! ([`MpmSimulator::backward`] with ⌈√S⌉ checkpointing by default: the
//! segment replays and substep adjoints, starting from the kept checkpoints
//! and last segment; `adjoint_recompute_*` is the same backward of a
//! rollout that kept nothing, recomputing them). Each figure is the median of
//! `repetitions` runs after a warm-up, as wall time and as process CPU time
//! (`*_cpu_s`: on a software adapter the driver's worker threads run in
//! this process, so it measures the work whatever else the machine runs;
//! on a GPU it is the host's share only). Large cases may time fewer
//! substeps per frame (`substeps` in the case, with fps scaled so that dt
//! = 1/1200 s everywhere): the rate is per particle-substep. Per-kernel
//! times record each stage several times in one submission and wait for it
//! (see `time_stages`).
//!
//! Since 2026-11-29 `adjoint_s` (and the adjoint rate) is the backward from
//! the forward's kept checkpoints; earlier figures recomputed them, as
//! `adjoint_recompute_s` does now. Since 20:00 UTC that day the forward
//! also keeps its last segment and `adjoint_over_forward` is the median of
//! per-pair ratios (it was the ratio of the medians).

use std::time::Instant;

use serde::Serialize;

use crate::gpu::GpuContext;
/// Why a bench case failed: the simulator's errors.
pub use crate::mpm::MpmError;
use crate::mpm::{
    BackwardOptions, BackwardWork, FrameGradient, MpmConfig, MpmSetup, MpmSimulator, ParticleState,
    Rollout, RolloutOptions, StageBuffers, SubstepStage, WallMode,
};
use crate::mpm_rules::config::{AnchorRule, Transfer};

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
    /// Under the FLIP transfer (τ = [`BENCH_PIC_TIME`]), whose six
    /// kernels run beside APIC's (src/mpm/flip.rs); APIC otherwise.
    pub flip: bool,
}

/// τ of the FLIP cases, seconds (the scene default).
pub const BENCH_PIC_TIME: f64 = crate::scene::DEFAULT_PIC_TIME;

/// The four fixed cases a, b, c and a-flip (docs/benchmarks.md § MPM).
pub fn default_cases() -> Vec<MpmBenchCase> {
    vec![
        MpmBenchCase {
            name: "a".into(),
            edge: 20,
            grid_res: 64,
            substeps: 40,
            flip: false,
        },
        MpmBenchCase {
            name: "b".into(),
            edge: 46,
            grid_res: 64,
            substeps: 10,
            flip: false,
        },
        MpmBenchCase {
            name: "c".into(),
            edge: 80,
            grid_res: 128,
            substeps: 4,
            flip: false,
        },
        // Case a under the FLIP transfer: what its kernels add.
        MpmBenchCase {
            name: "a-flip".into(),
            edge: 20,
            grid_res: 64,
            substeps: 40,
            flip: true,
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
    /// Timed runs of each figure (medians are reported).
    pub repetitions: u32,
    /// Seconds for one forward frame (median wall time).
    pub forward_s: f64,
    /// Process CPU seconds for one forward frame (median).
    pub forward_cpu_s: f64,
    /// K used by the backward pass (every K-th substep state kept).
    pub checkpoint_every: u32,
    /// Seconds for the backward pass of that frame, from the in-frame
    /// checkpoints the forward kept (median wall time).
    pub adjoint_s: f64,
    /// Process CPU seconds of that backward pass (median).
    pub adjoint_cpu_s: f64,
    /// Seconds for the backward pass of a rollout that kept no in-frame
    /// checkpoints (recomputing them; median wall time).
    pub adjoint_recompute_s: f64,
    /// Process CPU seconds of that backward pass (median).
    pub adjoint_recompute_cpu_s: f64,
    /// Backward over forward time, wall and CPU (the latter `None` where no
    /// CPU time is measured): the median over the repetitions of each
    /// forward/backward pair's ratio. The pair runs back to back, so a
    /// slow spell of a shared machine slows both and cancels out, which a
    /// ratio of medians does not do.
    pub adjoint_over_forward: [Option<f64>; 2],
    /// Forward substeps the backward pass ran again (its segment replays;
    /// [`crate::mpm::MpmGradients::replayed_substeps`]), of `case.substeps`.
    pub replayed_substeps: u64,
    /// Forward particle-substeps per second.
    pub forward_particle_substeps_per_s: f64,
    /// Adjoint particle-substeps per second (from `adjoint_s`).
    pub adjoint_particle_substeps_per_s: f64,
    /// Peak bytes allocated through the context during the case.
    pub peak_memory_bytes: u64,
    /// Time per substep of each stage, each stage submitted on its own.
    pub kernel_ms: Vec<StageTime>,
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
        colliders: Vec::new(),
        // No particle is anchored, so the rule changes nothing (the
        // scenes' default named).
        anchoring: AnchorRule::Splats,
        transfer: match case.flip {
            true => Transfer::Flip {
                pic_time: BENCH_PIC_TIME,
            },
            false => Transfer::Apic,
        },
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

/// Wall and process CPU seconds of one timed run.
#[derive(Clone, Copy, Debug)]
struct Timing {
    wall_s: f64,
    cpu_s: f64,
}

/// Runs `f` once, timing it.
fn timed<T>(f: impl FnOnce() -> Result<T, MpmError>) -> Result<(T, Timing), MpmError> {
    let cpu = process_cpu_seconds();
    let t = Instant::now();
    let out = f()?;
    let wall_s = t.elapsed().as_secs_f64();
    let cpu_s = process_cpu_seconds() - cpu;
    Ok((out, Timing { wall_s, cpu_s }))
}

/// Median of a non-empty set.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Medians (wall, CPU) of a set of runs.
fn medians(runs: &[Timing]) -> (f64, f64) {
    (
        median(runs.iter().map(|r| r.wall_s).collect()),
        median(runs.iter().map(|r| r.cpu_s).collect()),
    )
}

/// Median over the pairs of `a[i] / b[i]`, wall and CPU; `None` where a
/// time of some pair was not measured (0).
fn pair_ratios(a: &[Timing], b: &[Timing]) -> [Option<f64>; 2] {
    let ratio = |time: fn(&Timing) -> f64| {
        let ratios: Option<Vec<f64>> = a
            .iter()
            .zip(b)
            .map(|(x, y)| (time(x) > 0.0 && time(y) > 0.0).then(|| time(x) / time(y)))
            .collect();
        ratios.filter(|r| !r.is_empty()).map(median)
    };
    [ratio(|t| t.wall_s), ratio(|t| t.cpu_s)]
}

/// CPU seconds this process has used (user + system, all threads); 0 where
/// the platform offers no `getrusage`.
fn process_cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes a rusage into the pointer it is given.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0 {
            // SAFETY: initialised by the successful call above.
            let usage = unsafe { usage.assume_init() };
            let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            return seconds(usage.ru_utime) + seconds(usage.ru_stime);
        }
    }
    0.0
}

/// Runs one case: `repetitions` timed runs of each figure after a warm-up.
///
/// `checkpoint_every`: K of the backward pass (`None`: the default ⌈√S⌉).
pub fn run_case(
    ctx: &GpuContext,
    case: &MpmBenchCase,
    checkpoint_every: Option<u32>,
    repetitions: u32,
) -> Result<MpmBenchResult, MpmError> {
    let repetitions = repetitions.max(1);
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
            held_points: Vec::new(),
            youngs: vec![youngs as f32; n],
            youngs_max: youngs,
        },
    )?;
    let work = std::cell::RefCell::new(BackwardWork::new());
    let keep = RolloutOptions {
        keep_checkpoints: true,
        checkpoint_every,
        keep_every_substep: false,
    };
    let seed = sim.upload_state(ctx, "bench dL/dstate", &start)?;
    let backward = |rollout: &Rollout| {
        sim.backward(
            ctx,
            rollout,
            &[FrameGradient {
                frame: 1,
                grad: &seed,
            }],
            &BackwardOptions {
                checkpoint_every,
                ..Default::default()
            },
            &mut work.borrow_mut(),
        )
        // Until the gradients are computed (they stay on the GPU).
        .and_then(|g| ctx.wait().map(|_| g).map_err(MpmError::from))
    };
    // Warm-up: pipelines, first touch of buffers, the backward's buffers.
    let warm = sim.rollout_with(ctx, &start, 1, &keep, &mut work.borrow_mut())?;
    backward(&warm)?;
    drop(warm);

    let mut forward = Vec::new();
    let mut adjoint = Vec::new();
    let mut recompute = Vec::new();
    let mut replayed_substeps = 0;
    for _ in 0..repetitions {
        let (rollout, t) = timed(|| {
            let r = sim.rollout_with(ctx, &start, 1, &keep, &mut work.borrow_mut())?;
            ctx.wait()?;
            Ok(r)
        })?;
        forward.push(t);
        let (gradients, t) = timed(|| backward(&rollout))?;
        replayed_substeps = gradients.replayed_substeps;
        adjoint.push(t);
        drop(rollout);
        let plain = sim.rollout(ctx, &start, 1)?;
        recompute.push(timed(|| backward(&plain).map(|_| ()))?.1);
    }
    let (forward_s, forward_cpu_s) = medians(&forward);
    let (adjoint_s, adjoint_cpu_s) = medians(&adjoint);
    let (adjoint_recompute_s, adjoint_recompute_cpu_s) = medians(&recompute);

    let warm = sim.upload_state(ctx, "bench warm-up", &start)?;
    let warm_next = sim.state_buffer(ctx, "bench warm-up next")?;
    let kernel_ms = time_stages(ctx, &sim, &warm, &warm_next, &seed)?;
    drop(work);
    let work = (n as u64 * case.substeps as u64) as f64;
    Ok(MpmBenchResult {
        case: case.clone(),
        particles: n as u64,
        repetitions,
        forward_s,
        forward_cpu_s,
        checkpoint_every: sim.checkpoint_every(checkpoint_every),
        adjoint_s,
        adjoint_cpu_s,
        adjoint_recompute_s,
        adjoint_recompute_cpu_s,
        adjoint_over_forward: pair_ratios(&adjoint, &forward),
        replayed_substeps,
        forward_particle_substeps_per_s: work / forward_s,
        adjoint_particle_substeps_per_s: work / adjoint_s,
        peak_memory_bytes: ctx.memory.peak(),
        kernel_ms,
    })
}

/// Submissions per stage in [`time_stages`] (the least is kept).
const STAGE_REPEATS: u32 = 9;

/// What one timed run of a stage records: the stage, or for P2G the grid
/// clear then P2G. P2G adds into the grid that the clear zeroes and, with
/// binned scatters (CPU adapters), links the particles into cell lists that
/// only the clear empties (run again without it, it would link particles
/// already on a list again and corrupt the lists), so it is timed after
/// the clear, whose
/// own time is subtracted and an empty submission's added back, so that it
/// carries one submit/wait round trip as every other stage does.
#[derive(Clone, Copy, PartialEq)]
enum StageRun {
    Stage(SubstepStage),
    Nothing,
    ClearGridThenP2g,
}

impl StageRun {
    fn encode(
        self,
        ctx: &GpuContext,
        sim: &MpmSimulator,
        encoder: &mut wgpu::CommandEncoder,
        b: &StageBuffers,
    ) {
        match self {
            Self::Stage(stage) => sim.encode_stage(ctx, encoder, stage, b),
            Self::Nothing => {}
            Self::ClearGridThenP2g => {
                sim.encode_stage(ctx, encoder, SubstepStage::ClearGrid, b);
                sim.encode_stage(ctx, encoder, SubstepStage::P2g, b);
            }
        }
    }
}

/// Milliseconds per stage, wall and process CPU: each stage recorded
/// several times in one submission (about 80,000 particle-stages, at most
/// 10 runs, so one submit/wait round trip is spread over them) and waited
/// for, in substep order so each sees realistic inputs; the least of
/// [`STAGE_REPEATS`] such submissions, because on a shared machine the
/// other jobs only ever add time (the mean of three swung by 1.5× between
/// runs of one build on lavapipe, the minimum of nine by about 10%). P2G
/// is the difference of two such times ([`StageRun`]).
fn time_stages(
    ctx: &GpuContext,
    sim: &MpmSimulator,
    state: &crate::gpu::GpuBuffer,
    next: &crate::gpu::GpuBuffer,
    grad_next: &crate::gpu::GpuBuffer,
) -> Result<Vec<StageTime>, MpmError> {
    let runs = (80_000 / sim.particle_count().max(1)).clamp(1, 10) as u32;
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
    let run_of = |stage: SubstepStage| match stage {
        SubstepStage::P2g => StageRun::ClearGridThenP2g,
        _ => StageRun::Stage(stage),
    };
    let mut timed_runs: Vec<StageRun> = stages.iter().map(|&s| run_of(s)).collect();
    timed_runs.push(StageRun::Nothing);
    let mut least = vec![(f64::INFINITY, f64::INFINITY); timed_runs.len()];
    for _ in 0..STAGE_REPEATS {
        for (i, run) in timed_runs.iter().enumerate() {
            let ((), t) = timed(|| {
                let mut encoder = crate::gpu::encoder(ctx, "bench stage");
                for _ in 0..runs {
                    run.encode(ctx, sim, &mut encoder, &b);
                }
                ctx.queue.submit([encoder.finish()]);
                Ok(ctx.wait()?)
            })?;
            least[i].0 = least[i].0.min(t.wall_s);
            least[i].1 = least[i].1.min(t.cpu_s);
        }
    }
    let time_of = |run: StageRun| {
        let i = timed_runs.iter().position(|&r| r == run);
        least[i.expect("every run whose time is used is timed")]
    };
    let per_run = 1e3 / runs as f64;
    Ok(stages
        .iter()
        .map(|&s| {
            let (wall, cpu) = match run_of(s) {
                StageRun::ClearGridThenP2g => {
                    let both = time_of(StageRun::ClearGridThenP2g);
                    let clear = time_of(StageRun::Stage(SubstepStage::ClearGrid));
                    let nothing = time_of(StageRun::Nothing);
                    (
                        (both.0 - clear.0).max(0.0) + nothing.0,
                        (both.1 - clear.1).max(0.0) + nothing.1,
                    )
                }
                run => time_of(run),
            };
            StageTime {
                stage: s.name().to_string(),
                ms: wall * per_run,
                cpu_ms: cpu * per_run,
            }
        })
        .collect())
}

/// Time per substep of one stage.
#[derive(Clone, Debug, Serialize)]
pub struct StageTime {
    /// Stage name ([`SubstepStage::name`]).
    pub stage: String,
    /// Wall milliseconds.
    pub ms: f64,
    /// Process CPU milliseconds.
    pub cpu_ms: f64,
}
