//! The `physfit` command line. Library errors are typed; anyhow only here.

mod cli;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "physfit",
    version,
    about = "Recover the material of a 3D Gaussian Splatting object from video"
)]
struct Cli {
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
    /// Render the scene's Gaussians from its cameras to sRGB PNGs.
    Render(cli::render::RenderArgs),
    /// Time GPU stages on the present adapter; prints JSON.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Splat rasterizer forward/backward: the fox and a 500k-splat cloud.
    Raster(cli::bench_raster::BenchRasterArgs),
}

fn main() {
    env_logger::Builder::from_env(
        env_logger::Env::default()
            .default_filter_or("info,wgpu_core=warn,wgpu_hal=error,naga=warn"),
    )
    .init();
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Info => {
            let ctx = physfit::gpu::GpuContext::new(&Default::default())?;
            println!("{}", physfit::gpu::info::describe(&ctx));
        }
        Command::Check { scene } => cli::check::run(&scene)?,
        Command::Render(args) => cli::render::run(&args)?,
        Command::Bench(BenchCommand::Raster(args)) => cli::bench_raster::run(&args)?,
    }
    Ok(())
}
