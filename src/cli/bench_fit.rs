//! `physfit bench fit [--cases fox,fox-scale,synthetic] [--frames N]
//! [--size WxH] [--repetitions R] [--static-tiles on|off] [--kept-forward
//! on|off]`: prints the fit benchmark as JSON ([`physfit::bench::fit`]).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use physfit::bench::fit::{run_case_with, synthetic_scene, Cuts};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::scene::Scene;

/// Options of `physfit bench fit`.
#[derive(Args, Debug)]
pub struct BenchFitArgs {
    /// Cases to run (fox: the demo scene; fox-scale: the fox's whole body at grid 32, rest + 12 frames; synthetic: a 100,000-splat block); fox and synthetic by default (fox-scale takes minutes per iteration on a software adapter).
    #[arg(long, value_delimiter = ',')]
    pub cases: Vec<String>,
    /// The demo scene of the fox case.
    #[arg(long, default_value = "scenes/fox.toml")]
    pub scene: PathBuf,
    /// The scene of the fox-scale case.
    #[arg(long, default_value = "scenes/fox_scale.toml")]
    pub fox_scale_scene: PathBuf,
    /// Reference frames per view, the rest frame 0 included (docs/scene.md § Frame counts): stage 2 fits frames 1..=N−1, stage 1 frames 1..=min(N, fit.velocity.frames)−1. Default: 4 (frames 1–3) for fox and synthetic, 13 (rest + 12) for fox-scale, the cases the recorded figures measure (docs/benchmarks.md).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..))]
    pub frames: Option<u32>,
    /// Image size WxH of every view (square pixels, horizontal field of view kept); default: the fox camera's own, 256x256 for the synthetic case.
    #[arg(long)]
    pub size: Option<String>,
    /// K-Means drivers (MPM particles) of the synthetic case.
    #[arg(long, default_value_t = 4000)]
    pub drivers: u32,
    /// Timed runs of each figure (after one warm-up); medians are reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Draw frames over the views' static backdrops (on, as a fit does) or render and back-propagate every tile (off: the work before that cut, for a before/after on one machine).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub static_tiles: String,
    /// Keep in each evaluation's forward what the MPM backward would recompute (on, as a fit does: checkpoints per frame, a truncated evaluation frame by frame) or not (off: the backward recomputes checkpoints and replays every frame, the work before that cut).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub kept_forward: String,
    /// Let a full-flow evaluation keep every substep of its rollout where the machine's memory leaves room, so that its backward replays nothing (on, as a fit does), or keep checkpoints only (off: the work before that cut).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub kept_rollout: String,
}

/// A directory under the system's temporary directory, removed on drop
/// (the reference frames and synthetic scene; tempfile is a dev-dependency).
struct TempDir(PathBuf);

impl TempDir {
    fn new(case: &str) -> Result<Self> {
        let dir =
            std::env::temp_dir().join(format!("physfit-bench-fit-{}-{case}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating {}", physfit::io::shown(&dir)))?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reference frames of the fox and synthetic cases when `--frames` is not given.
const DEFAULT_FRAMES: usize = 4;
/// Reference frames of the fox-scale case when `--frames` is not given
/// (rest + 12, as the fits it stands for).
const FOX_SCALE_FRAMES: usize = 13;

/// Runs the fit benchmark cases named in `args.cases` (fox and synthetic
/// when empty). `quiet` drops the progress lines (the JSON is the result).
pub fn run(args: &BenchFitArgs, quiet: bool) -> Result<()> {
    const KNOWN: [&str; 3] = ["fox", "fox-scale", "synthetic"];
    for c in &args.cases {
        if !KNOWN.contains(&c.as_str()) {
            bail!("unknown fit benchmark case '{c}' (known: fox, fox-scale, synthetic)");
        }
    }
    let wanted = |c: &str| {
        if args.cases.is_empty() {
            c != "fox-scale"
        } else {
            args.cases.iter().any(|a| a == c)
        }
    };
    let size = args.size.as_deref().map(super::parse_size).transpose()?;
    let ctx = GpuContext::new(&GpuOptions::default())?;
    let frames_or = |default: usize| args.frames.map_or(default, |n| n as usize);
    let cuts = Cuts {
        static_tiles: args.static_tiles == "on",
        kept_forward: args.kept_forward == "on",
        kept_rollout: args.kept_rollout == "on",
    };
    let mut results = Vec::new();
    for (case, path, flag) in [
        ("fox", &args.scene, "--scene"),
        ("fox-scale", &args.fox_scale_scene, "--fox-scale-scene"),
    ] {
        if !wanted(case) {
            continue;
        }
        let frames = frames_or(if case == "fox" {
            DEFAULT_FRAMES
        } else {
            FOX_SCALE_FRAMES
        });
        let mut scene = Scene::load(path).with_context(|| {
            format!(
                "the {case} case fits {}: run from the repository root or pass {flag}",
                physfit::io::shown(path)
            )
        })?;
        if let Some((w, h)) = size {
            for view in &mut scene.views {
                view.camera = view.camera.resized(w, h);
            }
        }
        let dir = TempDir::new(case)?;
        if !quiet {
            eprintln!(
                "bench fit case {case}: {} splats, {} views, {frames} frames",
                scene.gaussians().means.len(),
                scene.views.len()
            );
        }
        results.push(run_case_with(
            &ctx,
            case,
            scene,
            frames,
            args.repetitions,
            dir.0.as_path(),
            cuts,
        )?);
    }
    if wanted("synthetic") {
        let frames = frames_or(DEFAULT_FRAMES);
        let (w, h) = size.unwrap_or((256, 256));
        let dir = TempDir::new("synthetic")?;
        let scene = synthetic_scene(dir.0.as_path(), w, h, args.drivers)?;
        if !quiet {
            eprintln!(
                "bench fit case synthetic: {} splats, {} drivers, {w}x{h}, {frames} frames",
                scene.gaussians().means.len(),
                args.drivers
            );
        }
        let refs = dir.0.as_path().join("references");
        results.push(run_case_with(
            &ctx,
            "synthetic",
            scene,
            frames,
            args.repetitions,
            &refs,
            cuts,
        )?);
    }
    let out = serde_json::json!({
        "adapter": ctx.adapter_info.name,
        "backend": format!("{:?}", ctx.adapter_info.backend),
        "atomics": format!("{:?}", ctx.shader_options.atomics),
        "fit": results,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
