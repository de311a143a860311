//! `physfit bench fit`: seconds per fit iteration of a case of `n`
//! reference frames per view (a frame count, the rest frame 0 included),
//! stage 1 ([`GradientFlow::Full`] over frames
//! `1..=min(n, fit.velocity.frames)−1`) and stage 2 (over frames
//! `1..=n−1`, in the flow the fit's stage 2 takes for the case's field,
//! [`StageKind::flow`]: the full flow for few parameters, the truncated
//! one for a per-driver field), each split into MPM
//! forward, MPM adjoint, deformation, render forward, render backward and
//! loss, and the peak GPU memory of the fit problem.
//!
//! `static_tiles` off ([`run_case_with`]) renders and back-propagates
//! every tile, as before the fit's static backdrops (docs/design.md §
//! Gaussian splatting, "Static tiles"): the same run with and without the
//! cut.
//!
//! A case is a scene without reference frames: [`run_case`] makes them by
//! rendering its own forward at "true" parameters (uniform `log10 E` of
//! the scene's `material.youngs_modulus`, a uniform initial velocity),
//! writes them as 8-bit PNGs (as a video's frames would be) and fits from
//! other parameters (E 2× softer, velocity 0.8×), so the renders differ
//! from the references as in a fit. Cases: the demo scene
//! (scenes/fox.toml, optionally at a smaller image size) and a synthetic
//! block of 100,000 splats ([`synthetic_scene`]).
//!
//! Per stage, `iteration_s` is the median over `repetitions` unprofiled
//! calls of [`FitProblem::evaluate`] (after one warm-up call of each
//! stage), waited for; the split (`stages`) is the median per stage over as
//! many profiled calls ([`FitProblem::set_profile`]: each stage waited for
//! on its own, so the stages include a submit/wait round trip each and
//! `stages_total_s` exceeds `iteration_s`).

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::drive::DriverSet;
use crate::fit::{
    FitError, FitProblem, FitProblemOptions, FitTimings, GradientFlow, Parameters,
    RegionAssignment, Selection, StageKind, LBFGS_MAX_PARAMETERS,
};
use crate::gpu::traffic::Traffic;
use crate::gpu::GpuContext;
use crate::scene::frames::{write_png, FrameError};
use crate::scene::ply::{PlyData, PlyError};
use crate::scene::view::FrameSet;
use crate::scene::{FieldSetting, FitStage, Gaussians, Scene, SceneError};

/// What can stop a fit benchmark.
#[derive(Debug, thiserror::Error)]
pub enum FitBenchError {
    /// The fit problem.
    #[error(transparent)]
    Fit(#[from] FitError),
    /// The synthetic scene.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// Writing the synthetic splats.
    #[error(transparent)]
    Ply(#[from] PlyError),
    /// Writing a reference frame.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// Writing a file or directory.
    #[error("{0}: {1}")]
    Io(std::path::PathBuf, std::io::Error),
    /// The GPU.
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
}

/// The initial velocity of the "true" parameters (world units per second).
pub const TRUE_VELOCITY: [f64; 3] = [0.3, 0.0, 0.2];

/// Figures of one stage.
#[derive(Clone, Debug, Serialize)]
pub struct StageFigures {
    /// "full" (stage 1; stage 2 of a field of few parameters) or
    /// "truncated" (stage 2 of a per-driver field).
    pub flow: String,
    /// The frames fitted.
    pub frames: Vec<usize>,
    /// Seconds per iteration (median, unprofiled).
    pub iteration_s: f64,
    /// Seconds per stage of an iteration (median per stage, profiled).
    pub stages: FitTimings,
    /// Sum of `stages`.
    pub stages_total_s: f64,
    /// Submissions and readbacks of one unprofiled iteration (the last).
    pub traffic: Traffic,
    /// Forward substeps the MPM backward of one iteration ran again
    /// (checkpoints recomputed, segments replayed), beside the rollout's
    /// `substeps_per_frame` × frames.
    pub replayed_substeps: u64,
    /// The loss at the starting parameters (not a timing: shows the
    /// references differ from the renders).
    pub loss: f64,
}

/// Figures of one case.
#[derive(Clone, Debug, Serialize)]
pub struct FitBenchResult {
    /// Case name.
    pub case: String,
    /// Splats rendered.
    pub splats: u64,
    /// MPM particles (drivers).
    pub drivers: u64,
    /// MPM grid cells per axis.
    pub grid_res: u32,
    /// MPM substeps per frame.
    pub substeps_per_frame: u32,
    /// Views fitted.
    pub views: usize,
    /// Image size of the views, `[width, height]`.
    pub image_size: [u32; 2],
    /// Reference frames per view, the rest frame 0 included.
    pub frames: usize,
    /// Timed runs of each figure (medians are reported).
    pub repetitions: u32,
    /// Frames drawn over the views' static backdrops (the default; off:
    /// every tile, [`run_case_with`]).
    pub static_tiles: bool,
    /// Forwards kept for the MPM backward (the default; off: the backward
    /// recomputes and replays, [`run_case_with`]).
    pub kept_forward: bool,
    /// Bytes a full-flow evaluation could keep of its rollout (the
    /// machine's budget; 0 with the kept rollout off: checkpoints only).
    pub kept_rollout_budget: u64,
    /// Per view: tiles of the last frame of the last evaluation that no
    /// moving splat reached (skipped when `static_tiles`), and the tile
    /// total; `None` for a view without a backdrop.
    pub skipped_tiles: Vec<Option<[u32; 2]>>,
    /// Stage 1 (velocity): [`GradientFlow::Full`].
    pub stage1: StageFigures,
    /// Stage 2 (stiffness) over all frames, in the fit's flow for the
    /// case's field ([`StageKind::flow`]).
    pub stage2: StageFigures,
    /// Peak bytes allocated through the context while the fit problem
    /// (not the reference maker) was built and run.
    pub peak_gpu_bytes: u64,
    /// The device bytes [`crate::budget::estimate()`] gives for fitting the
    /// scene with its references, computed before the problem is built
    /// (it must never fall below `peak_gpu_bytes`, and stay within twice
    /// it).
    pub estimated_gpu_bytes: u64,
    /// Seconds to make the reference frames (forward renders, PNGs).
    pub references_s: f64,
    /// Seconds to build the fit problem (drivers, uploads, pipelines).
    pub setup_s: f64,
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

/// Medians per stage.
fn median_timings(runs: &[FitTimings]) -> FitTimings {
    let m = |f: fn(&FitTimings) -> f64| median(runs.iter().map(f).collect());
    let render_stages_s = runs
        .iter()
        .flat_map(|r| r.render_stages_s.keys().copied())
        .map(|stage| {
            let times = runs
                .iter()
                .map(|r| r.render_stages_s.get(stage).copied().unwrap_or(0.0))
                .collect();
            (stage, median(times))
        })
        .collect();
    FitTimings {
        render_stages_s,
        mpm_forward_s: m(|t| t.mpm_forward_s),
        mpm_adjoint_s: m(|t| t.mpm_adjoint_s),
        deformation_s: m(|t| t.deformation_s),
        render_forward_s: m(|t| t.render_forward_s),
        render_backward_s: m(|t| t.render_backward_s),
        loss_s: m(|t| t.loss_s),
    }
}

/// How many values the fit of `scene`'s stiffness field solves for on
/// `drivers`: its E's (one per region the drivers fill, the uncovered rest
/// included) and a fitted ν's; `None` for a per-driver field. The fit
/// chooses its solver and gradient flow by this count.
fn stiffness_values(scene: &Scene, drivers: &DriverSet) -> Option<usize> {
    let stiffness = &scene.fit.stiffness;
    let youngs = match &stiffness.field {
        FieldSetting::Drivers => return None,
        FieldSetting::Global | FieldSetting::Rigid => 1,
        FieldSetting::Regions(r) => RegionAssignment::new(r, drivers).count() as usize,
    };
    Some(stiffness.poisson.with_youngs(youngs))
}

/// Uniform parameters: `log10 E` and velocity per driver.
fn uniform(p: &FitProblem, log10_youngs: f64, velocity: [f64; 3]) -> Parameters {
    let n = p.drivers().len();
    Parameters {
        log10_youngs: vec![log10_youngs; n],
        velocity: (0..n).flat_map(|_| velocity).collect(),
        poisson: Vec::new(),
    }
}

/// Renders `scene`'s forward at the true parameters for `frames` frames
/// (`0..frames`, the rest frame 0 included) in every view, writes them as
/// PNGs under `dir/<view index>/` and attaches them to the views.
fn make_references(
    ctx: &GpuContext,
    scene: &mut Scene,
    options: &FitProblemOptions,
    frames: usize,
    dir: &Path,
) -> Result<(), FitBenchError> {
    let mut maker = FitProblem::new(ctx, scene, options)?;
    let truth = uniform(&maker, scene.material.youngs_modulus.log10(), TRUE_VELOCITY);
    for v in 0..scene.views.len() {
        let rendered = maker.render_frames(ctx, &truth, v, frames - 1)?;
        let out = dir.join(format!("view{v}"));
        std::fs::create_dir_all(&out).map_err(|e| FitBenchError::Io(out.clone(), e))?;
        let mut paths = Vec::with_capacity(rendered.len());
        for (k, f) in rendered.iter().enumerate() {
            let path = out.join(format!("{k:04}.png"));
            write_png(&path, f.width, f.height, &f.pixels)?;
            paths.push(path);
        }
        let camera = &scene.views[v].camera;
        scene.views[v].frames = Some(FrameSet {
            spec: out,
            paths,
            width: camera.width,
            height: camera.height,
        });
    }
    Ok(())
}

/// Runs one case on `scene` (its views' own reference frames are
/// replaced) with `frames` reference frames per view (the rest frame 0
/// included; at least 2): makes the references under `dir`, then times
/// `repetitions` iterations of each stage after a warm-up (module doc).
pub fn run_case(
    ctx: &GpuContext,
    name: &str,
    scene: Scene,
    frames: usize,
    repetitions: u32,
    dir: &Path,
) -> Result<FitBenchResult, FitBenchError> {
    run_case_with(ctx, name, scene, frames, repetitions, dir, Cuts::default())
}

/// The cuts of an evaluation's work a case runs with, each on as a fit
/// runs it, off for a before/after on one machine at one load.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Cuts {
    /// Frames drawn over the views' static backdrops
    /// ([`FitProblem::set_static_tiles`]).
    pub static_tiles: bool,
    /// Forwards keep what the MPM backward would recompute
    /// ([`FitProblem::set_kept_forward`]).
    pub kept_forward: bool,
    /// A full-flow forward keeps every substep of its rollout where the
    /// machine leaves room, so that its backward replays nothing
    /// ([`FitProblem::set_kept_rollout_budget`]; off: checkpoints only).
    pub kept_rollout: bool,
}

impl Default for Cuts {
    fn default() -> Self {
        Self {
            static_tiles: true,
            kept_forward: true,
            kept_rollout: true,
        }
    }
}

/// [`run_case`] with the fit problem's cuts on or off ([`Cuts`]: static
/// tiles off renders and back-propagates every tile; kept forward off
/// recomputes the MPM backward's checkpoints and replays every frame),
/// the work before each cut, for a before/after on one machine at one
/// load.
pub fn run_case_with(
    ctx: &GpuContext,
    name: &str,
    mut scene: Scene,
    frames: usize,
    repetitions: u32,
    dir: &Path,
    cuts: Cuts,
) -> Result<FitBenchResult, FitBenchError> {
    let static_tiles = cuts.static_tiles;
    let repetitions = repetitions.max(1);
    let frames = frames.max(2);
    let options = FitProblemOptions::per_driver(&scene.fit.stiffness);
    let t = Instant::now();
    make_references(ctx, &mut scene, &options, frames, dir)?;
    let references_s = t.elapsed().as_secs_f64();
    let estimate = crate::budget::estimate(&scene, &crate::budget::Workload::Fit);

    ctx.memory.reset_peak();
    let t = Instant::now();
    let mut problem = FitProblem::new(ctx, &scene, &options)?;
    problem.set_static_tiles(static_tiles);
    problem.set_kept_forward(cuts.kept_forward);
    if !cuts.kept_rollout {
        problem.set_kept_rollout_budget(0);
    }
    // The kept rollouts count where the machine leaves room for them.
    let estimated_gpu_bytes = estimate.device_bytes()
        + match cuts.kept_forward && problem.kept_rollout_budget() > 0 {
            true => estimate.kept_rollout.min(problem.kept_rollout_budget()),
            false => 0,
        };
    let setup_s = t.elapsed().as_secs_f64();
    let start = uniform(
        &problem,
        scene.material.youngs_modulus.log10() - 0.3,
        TRUE_VELOCITY.map(|v| 0.8 * v),
    );
    let views: Vec<usize> = (0..scene.views.len()).collect();
    // Stage 1 at most the case's frames (a benchmark case fits whatever
    // frames it made, where a fit would refuse too large a count).
    let velocity = FitStage {
        frames: scene.fit.velocity.frames.map(|n| n.min(frames as u32)),
        ..scene.fit.velocity.clone()
    };
    // The bench's problem is per-driver whatever the field (the cost of an
    // evaluation does not depend on the map); the flow is the field's.
    let few =
        stiffness_values(&scene, problem.drivers()).is_some_and(|n| n <= LBFGS_MAX_PARAMETERS);
    let stiffness_flow = StageKind::Stiffness.flow(few);
    let stages = [
        (
            GradientFlow::Full,
            "full",
            Selection {
                frames: velocity.fitted_frames(frames).collect(),
                views: views.clone(),
            },
        ),
        (
            stiffness_flow,
            match stiffness_flow {
                GradientFlow::Full => "full",
                GradientFlow::Truncated => "truncated",
            },
            Selection {
                frames: (1..frames).collect(),
                views,
            },
        ),
    ];
    let mut figures = Vec::new();
    for (flow, flow_name, selection) in stages {
        // Warm-up: pipelines, the backward's buffers, state gradients.
        let loss = problem.evaluate(ctx, &start, &selection, flow)?.report.loss;
        ctx.wait()?;
        let mut iterations = Vec::new();
        let mut profiled = Vec::new();
        let mut traffic = Traffic::default();
        let mut replayed_substeps = 0;
        for _ in 0..repetitions {
            let before = ctx.traffic.snapshot();
            let t = Instant::now();
            let e = problem.evaluate(ctx, &start, &selection, flow)?;
            ctx.wait()?;
            iterations.push(t.elapsed().as_secs_f64());
            traffic = ctx.traffic.snapshot().since(before);
            replayed_substeps = problem.replayed_substeps();
            drop(e);
            problem.set_profile(true);
            let e = problem.evaluate(ctx, &start, &selection, flow);
            problem.set_profile(false);
            drop(e?);
            profiled.push(problem.take_timings());
        }
        let stages = median_timings(&profiled);
        figures.push(StageFigures {
            flow: flow_name.into(),
            frames: selection.frames.clone(),
            iteration_s: median(iterations),
            stages_total_s: stages.total_s(),
            stages,
            traffic,
            replayed_substeps,
            loss,
        });
    }
    let skipped_tiles = (0..scene.views.len())
        .map(|v| {
            problem
                .static_backdrop(v)
                .map(|b| b.skipped_tiles(ctx).map(|(s, t)| [s, t]))
                .transpose()
        })
        .collect::<Result<_, _>>()
        .map_err(FitError::from)?;
    let stage2 = figures.pop().expect("two stages");
    let stage1 = figures.pop().expect("two stages");
    let camera = &scene.views[0].camera;
    Ok(FitBenchResult {
        case: name.into(),
        splats: scene.gaussians().means.len() as u64,
        drivers: problem.drivers().len() as u64,
        grid_res: scene.simulation.grid_res,
        substeps_per_frame: problem.substeps_per_frame(),
        views: scene.views.len(),
        image_size: [camera.width, camera.height],
        frames,
        repetitions,
        static_tiles,
        kept_forward: cuts.kept_forward,
        kept_rollout_budget: problem.kept_rollout_budget(),
        skipped_tiles,
        stage1,
        stage2,
        peak_gpu_bytes: ctx.memory.peak(),
        estimated_gpu_bytes,
        references_s,
        setup_s,
    })
}

/// A block of `nx × ny × nz` splats over [0, 1] × [0, 1] × [0, 1] (world
/// units), coloured in stripes, slightly jittered.
pub fn block(nx: usize, ny: usize, nz: usize) -> Gaussians {
    let mut g = Gaussians::default();
    let step = |n: usize| 1.0 / n.max(1) as f32;
    let (sx, sy, sz) = (step(nx), step(ny), step(nz));
    let scale = (sx.min(sy).min(sz) * 0.6).ln();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut jitter = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                g.means.push([
                    (i as f32 + 0.5 + 0.3 * jitter()) * sx,
                    (j as f32 + 0.5 + 0.3 * jitter()) * sy,
                    (k as f32 + 0.5 + 0.3 * jitter()) * sz,
                ]);
                g.rotations.push([1.0, 0.0, 0.0, 0.0]);
                g.log_scales.push([scale; 3]);
                g.opacity_logits.push(2.0);
                let c = |m: usize| ((m % 5) as f32) * 0.35 - 0.7;
                g.sh.push([
                    c(i / 3 + 2 * (j / 3) + 3 * (k / 3)),
                    c(3 * (i / 4) + k / 4),
                    c(2 * (i / 5) + 3 * (j / 5) + k / 5 + 1),
                ]);
            }
        }
    }
    g
}

/// Writes a scene of a 50 × 50 × 40 = 100,000-splat [`block`] to `dir`
/// (splats.ply, scene.toml: one `width × height` view, grid 32³,
/// `drivers` K-Means drivers, the bottom tenth anchored, no frames) and
/// loads it.
pub fn synthetic_scene(
    dir: &Path,
    width: u32,
    height: u32,
    drivers: u32,
) -> Result<Scene, FitBenchError> {
    synthetic_scene_of(dir, &block(50, 50, 40), width, height, drivers)
}

/// As [`synthetic_scene`] with the given splats (in [0, 1]³).
pub fn synthetic_scene_of(
    dir: &Path,
    gaussians: &Gaussians,
    width: u32,
    height: u32,
    drivers: u32,
) -> Result<Scene, FitBenchError> {
    let ply = dir.join("splats.ply");
    PlyData::from_gaussians(gaussians, &ply).write(&ply, &[])?;
    let fx = 1.1 * width as f64;
    let toml = format!(
        r#"
[gaussians]
path = "splats.ply"

[[views]]
name = "front"
[views.camera]
width = {width}
height = {height}
fx = {fx}
position = [2.4, -2.6, 1.9]
look_at = [0.5, 0.5, 0.45]
up = [0.0, 0.0, 1.0]

[reference]
fps = 30.0
background = [0.0, 0.0, 0.0]

[simulation]
box = {{ min = [-0.25, -0.25, -0.25], max = [1.25, 1.25, 1.25] }}
grid_res = 32
gravity = [0.0, 0.0, 0.0]

[material]
youngs_modulus = 1.0e4
log10_youngs_range = [3.0, 4.5]

[regions]
anchored = [{{ min = [-1.0, -1.0, -1.0], max = [2.0, 2.0, 0.1] }}]

[drivers]
count = {drivers}
k = 8
seed = 0

[fit.velocity]
frames = 4
"#
    );
    let path = dir.join("scene.toml");
    std::fs::write(&path, toml).map_err(|e| FitBenchError::Io(path.clone(), e))?;
    Ok(Scene::load(&path)?)
}
