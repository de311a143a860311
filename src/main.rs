//! The `physfit` command line. Library errors are typed; anyhow only here.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

mod cli;

#[derive(Parser)]
#[command(
    name = "physfit",
    version,
    about = "Recover the material of a 3D Gaussian Splatting object from video"
)]
struct Cli {
    /// Print nothing but errors (every command: no progress, no summary, no
    /// warnings; `bench` still prints its JSON, which is its result).
    #[arg(long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the GPU adapter, backend, driver, limits and features physfit will use.
    Info,
    /// Load and validate a scene.toml and print a summary (splats, box, grid, cameras, frames, time step).
    Check {
        /// The scene file.
        scene: PathBuf,
    },
    /// Fit the initial velocity and Young's modulus of the simulated object to the reference frames (two stages; writes fitted.ply, drivers.safetensors, reports).
    Fit(cli::fit::FitArgs),
    /// Fit each view's camera pose (optionally focal length) and colour correction to its reference frame 0; writes an aligned scene.toml.
    Align(cli::align::AlignArgs),
    /// Render the scene's Gaussians from its cameras to 8-bit PNGs (3DGS colours, no transfer curve).
    Render(cli::render::RenderArgs),
    /// Simulate a scene from rest with a uniform initial velocity and write one .ply per frame.
    Simulate(cli::simulate::SimulateArgs),
    /// Write reference frames of a known material and motion (a twin experiment; docs/truth.md).
    Synth(cli::synth::SynthArgs),
    /// Time the hot paths on the present adapter; prints JSON. Without a
    /// target: a summary (MPM case a, rasterizer on the demo scene).
    Bench {
        #[command(subcommand)]
        target: Option<BenchTarget>,
    },
}

#[derive(Subcommand)]
enum BenchTarget {
    /// Splat rasterizer forward/backward: the fox and a 500k-splat cloud.
    Raster(cli::bench_raster::BenchRasterArgs),
    /// GPU MPM: particle-substeps per second forward and adjoint, peak memory, per-kernel times.
    Mpm(cli::bench_mpm::BenchMpmArgs),
    /// Fit iterations: seconds per stage-1 and stage-2 iteration split into MPM, deformation, render and loss; peak memory.
    Fit(cli::bench_fit::BenchFitArgs),
    /// Where the fit's loss puts each region's log10 E under one change of the discretisation at a time (drivers, substeps, grid), the rest at a truth file's values.
    Discretisation(cli::bench_discretisation::BenchDiscretisationArgs),
}

fn main() {
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        // clap's own message, then what an unquoted `--splats` pattern needs.
        let args: Vec<String> = std::env::args().collect();
        match cli::unquoted_glob::unquoted_glob_hint(&args) {
            Some(hint) if e.use_stderr() => {
                let _ = e.print();
                eprintln!("{hint}");
                std::process::exit(e.exit_code());
            }
            _ => e.exit(),
        }
    });
    cli::log_setup::init_logger(cli.quiet);
    // Before any wgpu instance: the Vulkan loader complains on stderr
    // without a runtime directory.
    let runtime_dir = physfit::gpu::RuntimeDir::ensure();
    let result = run(cli);
    // `process::exit` runs no destructors: the private directory goes first.
    drop(runtime_dir);
    match result {
        Ok(0) => {}
        Ok(status) => std::process::exit(status),
        Err(e) => fail(e),
    }
}

/// Reports `e` and exits with its status.
fn fail(e: anyhow::Error) -> ! {
    // A stop by SIGINT or SIGTERM is not an error: its line says what
    // was kept, and the status which signal it was.
    if let Some(stopped) = e.downcast_ref::<cli::interrupt::Interrupted>() {
        eprintln!("{stopped}");
        std::process::exit(stopped.status);
    }
    eprintln!("error: {e:#}");
    std::process::exit(1);
}

/// Runs the command; its exit status (0, or a stop's status).
fn run(cli: Cli) -> Result<i32> {
    let quiet = cli.quiet;
    match cli.command {
        Command::Info => {
            let ctx = physfit::gpu::GpuContext::new(&Default::default())?;
            if !quiet {
                println!("{}", physfit::gpu::describe(&ctx));
            }
        }
        Command::Check { scene } => cli::check::run(&scene, quiet)?,
        Command::Fit(mut args) => {
            args.quiet = quiet;
            if let cli::fit::FitOutcome::Interrupted(cause) = cli::fit::run(&args)? {
                return Ok(cause.exit_status());
            }
        }
        Command::Render(mut args) => {
            args.quiet = quiet;
            cli::render::run(&args)?
        }
        Command::Align(mut args) => {
            args.quiet = quiet;
            cli::align::run(&args)?
        }
        Command::Simulate(mut args) => {
            args.quiet = quiet;
            cli::simulate::run(&args)?
        }
        Command::Synth(mut args) => {
            args.quiet = quiet;
            cli::synth::run(&args)?
        }
        Command::Bench { target: None } => cli::bench_summary::run(quiet)?,
        Command::Bench {
            target: Some(BenchTarget::Raster(args)),
        } => cli::bench_raster::run(&args)?,
        Command::Bench {
            target: Some(BenchTarget::Mpm(args)),
        } => cli::bench_mpm::run(&args, quiet)?,
        Command::Bench {
            target: Some(BenchTarget::Fit(args)),
        } => cli::bench_fit::run(&args, quiet)?,
        Command::Bench {
            target: Some(BenchTarget::Discretisation(args)),
        } => cli::bench_discretisation::run(&args, quiet)?,
    }
    Ok(0)
}
