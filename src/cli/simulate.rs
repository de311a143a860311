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
//! The run goes through the one forward path ([`SceneRenderer`]): the
//! scene's drivers at one E, from rest plus one velocity interaction.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use physfit::drive::DriverSet;
use physfit::forward::{ForwardSetup, SceneRenderer};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::interact::InteractionFlags;
use physfit::scene::ply::PlyData;
use physfit::scene::Scene;

use physfit::io::shown::shown;

use physfit::io::owned::Owned;
use physfit::scene::inputs::scene_inputs;

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
        },
    )?;
    let interactions = InteractionFlags {
        velocity: Some(velocity.to_string()),
        from_rest: true,
        ..Default::default()
    }
    .interactions()?;
    let drivers = DriverSet::from_scene(&scene)
        .with_context(|| format!("building the drivers of {}", shown(scene_path)))?;
    // One E everywhere: the scene's starting value, said before the run.
    let log10_youngs = vec![scene.material.youngs_modulus.log10(); drivers.len()];
    if !quiet {
        eprintln!("{}", youngs_line(&scene, drivers.sim_box.side));
    }
    let setup = ForwardSetup::from_drivers(
        &scene,
        &drivers,
        log10_youngs,
        &vec![[0.0; 3]; drivers.len()],
        &interactions,
    )
    .with_context(|| format!("simulating {}", shown(scene_path)))?;

    let ctx = GpuContext::new(&GpuOptions::default())?;
    let mut animation =
        SceneRenderer::simulated(&ctx, &setup, scene.gaussians(), scene.background)?;
    // Frame 0 is the rest state; each step simulates one more.
    let bar = progress_bar(quiet, frames as u64 - 1);
    bar.set_style(
        ProgressStyle::with_template(
            "simulating {bar:40} frame {pos}/{len} after the rest frame ({elapsed}, eta {eta})",
        )
        .expect("valid template"),
    );
    for k in 1..frames {
        interrupt.reach("simulate", k);
        interrupt.check(|| nothing_kept(&staged))?;
        animation
            .step(&ctx)
            .with_context(|| format!("simulating {} (nothing was written)", shown(scene_path)))?;
        bar.inc(1);
    }
    bar.finish_and_clear();

    let target = out;
    let out = staged.staging().to_path_buf();
    let out = out.as_path();
    for (name, _) in &cameras {
        let dir = out.join(name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", shown(&dir)))?;
    }
    let mut gaussians = scene.gaussians().clone();
    let bar = progress_bar(quiet, animation.frames() as u64).with_style(
        ProgressStyle::with_template("writing {bar:40} frame {pos}/{len} ({elapsed}, eta {eta})")
            .expect("valid template"),
    );
    for k in 0..animation.frames() {
        interrupt.reach("write", k);
        interrupt.check(|| nothing_kept(&staged))?;
        // The splats follow their drivers on the GPU, for the renders; the
        // .ply output needs them on the host.
        animation.pose(&ctx, k)?;
        animation.read_pose(&ctx, &mut gaussians)?;
        let path = out.join(format!("frame_{k:04}.ply"));
        PlyData::from_gaussians(&gaussians, &path)
            .write(&path, &[])
            .with_context(|| format!("writing {}", shown(&path)))?;
        for (name, camera) in &cameras {
            let path = out.join(name).join(format!("frame_{k:04}.png"));
            let frame = animation
                .render(&ctx, camera)
                .with_context(|| format!("rendering frame {k} from view '{name}'"))?;
            super::opaque_png::write_opaque_png(&path, frame.width, frame.height, frame.pixels)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    staged.commit()?;
    if quiet {
        return Ok(());
    }
    eprintln!(
        "wrote {} ({} moving {} splats, {} substeps per frame): .ply per frame, PNG sequences per view",
        count(animation.frames(), "frame", "frames"),
        count(drivers.len(), "driver", "drivers"),
        setup.deform.len(),
        setup.config.substeps_per_frame,
    );
    eprintln!("output {}", shown(target));
    Ok(())
}

/// The sentence that says which Young's modulus `simulate` uses: the
/// scene's `material.youngs_modulus`, everywhere, in normalised and world
/// units (`E · side²`, docs/design.md § Units and frames).
fn youngs_line(scene: &Scene, side: f64) -> String {
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
