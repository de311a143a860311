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
    /// Simulate a scene from rest with a uniform initial velocity and write one .ply per frame.
    Simulate {
        /// The scene file.
        scene: PathBuf,
        /// Initial velocity of the simulated (non-anchored) splats, world units per second.
        #[arg(
            long,
            required = true,
            value_delimiter = ',',
            allow_hyphen_values = true
        )]
        velocity: Vec<f64>,
        /// Frames to simulate after the rest state (default: the reference frame count − 1, else 30).
        #[arg(long)]
        frames: Option<u32>,
        /// Output directory (frame_0000.ply, frame_0001.ply, ...).
        #[arg(long)]
        out: PathBuf,
    },
    /// Benchmarks (JSON on stdout).
    Bench {
        #[command(subcommand)]
        target: BenchTarget,
    },
}

#[derive(Subcommand)]
enum BenchTarget {
    /// GPU MPM: particle-substeps per second forward and adjoint, peak memory, per-kernel times.
    Mpm {
        /// Cases to run (a: 8k particles 64³; b: 100k 64³; c: 500k 128³); all by default.
        #[arg(long, value_delimiter = ',')]
        cases: Vec<String>,
        /// Keep every K-th substep state in the backward pass (default ⌈√substeps⌉; the substep count = store everything).
        #[arg(long)]
        checkpoint_every: Option<u32>,
    },
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
        Command::Simulate {
            scene,
            velocity,
            frames,
            out,
        } => cli::simulate::run(
            &scene,
            [velocity[0], velocity[1], velocity[2]],
            frames,
            &out,
        )?,
        Command::Bench {
            target:
                BenchTarget::Mpm {
                    cases,
                    checkpoint_every,
                },
        } => cli::bench::mpm(&cases, checkpoint_every)?,
    }
    Ok(())
}
