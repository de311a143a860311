//! `physfit simulate scene.toml --velocity VX,VY,VZ [--frames N] [--size WxH] [--camera NAME|INDEX]... --out DIR [--force] [--quiet]`:
//! runs the GPU MPM forward from the scene's rest state with a uniform
//! initial velocity (world units per second; anchored splats start at rest)
//! and Young's modulus `material.youngs_modulus` everywhere, and writes one
//! 3DGS .ply per frame (`frame_0000.ply` is the rest state; `--frames N`
//! counts it, so N files `frame_0000` .. `frame_{N−1}`, docs/scene.md
//! § Frame counts) with the
//! simulated splats moved. The MPM particles are the scene's K-Means drivers
//! ([`physfit::drive::DriverSet`]), and every free simulated splat follows
//! the rigid motion of its 8 nearest drivers, centre and rotation
//! ([`physfit::deform::Deformation`], docs/design.md § Drivers and the
//! deformation of Gaussians); anchored and static splats stay at rest. The
//! frames stay on the GPU, where the deformation moves the splats for
//! rendering; splats are read back only to write the .ply files. Each frame is also rendered from every view of
//! the scene (`DIR/<view>/frame_0000.png`, 8-bit, 3DGS colours; `--size WxH` rescales
//! the cameras), so the motion can be looked at as image sequences. The whole
//! simulation happens before anything is written, so a refused or
//! broken-down run writes nothing; the files are staged and moved into DIR
//! together ([`physfit::io::output_dir`]), and a DIR holding an earlier
//! simulate's files is refused unless `--force`, which replaces those only.
//! SIGINT and SIGTERM stop it between frames, writing nothing.
//!
//! The run is [`simulate_scene`], the one forward path: the scene's drivers
//! at one E, from rest plus one velocity interaction; this file maps the
//! flags, keeps the output directory's discipline and shows progress.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use physfit::forward::{simulate_scene, ForwardError, SimulateOptions};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::interact::InteractionFlags;
use physfit::scene::Scene;

use physfit::io::shown;

use physfit::io::Owned;
use physfit::scene::scene_inputs;

use super::count::count;
use super::interrupt::{nothing_kept, Interrupt};
use super::output::open_output;
use super::view_selection::resolve_views;
use super::DEFAULT_FRAMES;

/// Options of `physfit simulate`.
#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// The scene file.
    pub scene: PathBuf,
    /// Initial velocity VX,VY,VZ of the simulated (non-anchored) splats, world units per second.
    #[arg(long, required = true, allow_hyphen_values = true)]
    pub velocity: String,
    /// Frames written, the rest frame 0 included: N gives frame_0000 .. frame_{N−1} (docs/scene.md § Frame counts; default: the scene's reference frame count, else 48).
    #[arg(long)]
    pub frames: Option<u32>,
    /// Image size WxH of the rendered frames (square pixels, horizontal field of view kept); default: each camera's.
    #[arg(long)]
    pub size: Option<String>,
    /// Render only this view: its name or its number (0-based, in
    /// scene.toml order); repeatable. Default: every view.
    #[arg(long)]
    pub camera: Vec<String>,
    /// Output directory (frame_0000.ply, ... and <view>/frame_0000.png, ...).
    #[arg(long)]
    pub out: PathBuf,
    /// Replace an earlier simulate's files in the output directory (only those).
    #[arg(long)]
    pub force: bool,
    /// The global `--quiet` (one flag for every command, set by `main`).
    #[arg(skip)]
    pub quiet: bool,
}

/// Runs the subcommand: `--velocity VX,VY,VZ` as typed, `--frames N` the
/// frames written with the rest frame 0 included (default: the scene's
/// reference frame count, else [`DEFAULT_FRAMES`]), the views of
/// `--camera` (default every view).
pub fn run(args: &SimulateArgs) -> Result<()> {
    let (scene_path, velocity, out, force, quiet) = (
        args.scene.as_path(),
        args.velocity.as_str(),
        args.out.as_path(),
        args.force,
        args.quiet,
    );
    let size = args.size.as_deref().map(super::parse_size).transpose()?;
    // Installed first: SIGINT and SIGTERM stop at the next frame.
    let interrupt = Interrupt::install(&["simulate", "write"], &["simulate", "write"])?;
    let scene = Scene::load(scene_path)?;
    // Resolved first: a mistyped --camera is refused before anything runs.
    let cameras = resolve_views(&scene, scene_path, &args.camera, size)?;
    let owned: Vec<Owned> = std::iter::once(Owned::frames("", "ply"))
        .chain(cameras.iter().map(|(name, _)| Owned::frames(name, "png")))
        .collect();
    let mut staged = open_output(out, "simulate", owned, scene_inputs(&scene, true), force)?;
    if !quiet {
        eprintln!("output {}", shown(out));
    }
    let frames = match args.frames {
        Some(0) => bail!("--frames must be at least 1 (the rest frame 0 included)"),
        Some(n) => n as usize,
        None => scene.frame_count().unwrap_or(DEFAULT_FRAMES).max(1),
    };
    super::memory_check::refuse_over_memory(
        &scene,
        &physfit::budget::Workload::Forward {
            command: "physfit simulate",
            frames,
            cameras: cameras.iter().map(|(_, c)| c.clone()).collect(),
            frames_held: false,
        },
    )?;
    let interactions = InteractionFlags {
        velocity: Some(velocity.to_string()),
        from_rest: true,
        ..Default::default()
    }
    .interactions()?;
    if !quiet {
        eprintln!("{}", youngs_line(&scene));
    }
    let options = SimulateOptions {
        frames,
        interactions,
        stop: Some(interrupt.stop().clone()),
    };
    let ctx = GpuContext::new(&GpuOptions::default())?;
    // Frame 0 is the rest state; each step simulates one more.
    let bar = progress_bar(quiet, frames as u64 - 1);
    bar.set_style(
        ProgressStyle::with_template(
            "simulating {bar:40} frame {pos}/{len} after the rest frame ({elapsed}, eta {eta})",
        )
        .expect("valid template"),
    );
    let simulated = simulate_scene(&ctx, &scene, &options, |k| {
        interrupt.reach("simulate", k);
        bar.set_position(k as u64 - 1);
    });
    if matches!(simulated, Err(ForwardError::Stopped { .. })) {
        interrupt.check(|| nothing_kept(&staged))?;
    }
    let mut simulation = simulated
        .with_context(|| format!("simulating {} (nothing was written)", shown(scene_path)))?;
    bar.finish_and_clear();

    let bar = progress_bar(quiet, simulation.frames() as u64).with_style(
        ProgressStyle::with_template("writing {bar:40} frame {pos}/{len} ({elapsed}, eta {eta})")
            .expect("valid template"),
    );
    let written = simulation.write_outputs(
        &ctx,
        &scene,
        staged.staging(),
        &cameras,
        Some(interrupt.stop()),
        |k| {
            interrupt.reach("write", k);
            bar.set_position(k as u64);
        },
    );
    if matches!(written, Err(ForwardError::Stopped { .. })) {
        interrupt.check(|| nothing_kept(&staged))?;
    }
    written?;
    bar.finish_and_clear();
    staged.commit()?;
    if quiet {
        return Ok(());
    }
    eprintln!(
        "wrote {} ({} moving {} splats, {} substeps per frame): .ply per frame, PNG sequences per view",
        count(simulation.frames(), "frame", "frames"),
        count(simulation.drivers().len(), "driver", "drivers"),
        simulation.moved_splats(),
        simulation.substeps_per_frame(),
    );
    eprintln!("output {}", shown(out));
    Ok(())
}

/// The sentence that says which Young's modulus `simulate` uses: the
/// scene's `material.youngs_modulus`, everywhere, in normalised and world
/// units (`E · side²`, docs/design.md § Units and frames).
fn youngs_line(scene: &Scene) -> String {
    let side = scene.simulation.sim_box.side;
    let e = scene.material.youngs_modulus;
    format!(
        "Young's modulus: {e:.3e} everywhere (log10 E = {:.2}, normalised units; {:.3e} in \
         world units), the scene's `material.youngs_modulus`; to simulate a fitted E, use \
         `physfit render --params DIR/drivers.safetensors`",
        e.log10(),
        e * side * side
    )
}

/// A bar of `len` steps, hidden under `--quiet`.
fn progress_bar(quiet: bool, len: u64) -> ProgressBar {
    if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(len)
    }
}
