//! `physfit bench discretisation --scene S --truth T [--changes a,b]
//! [--points N] [--span D]`: prints, as JSON, where the fit's loss puts
//! each region's `log10 E` under one change of the discretisation at a
//! time ([`physfit::bench::discretisation`]).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use physfit::bench::discretisation::{run as run_bench, Change};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::scene::Scene;
use physfit::synth::Truth;

/// Options of `physfit bench discretisation`.
#[derive(Args, Debug)]
pub struct BenchDiscretisationArgs {
    /// The scene (with reference frames and a regions stiffness field).
    #[arg(long)]
    pub scene: PathBuf,
    /// The truth file of its frames (docs/truth.md): the E per region and v0 held while one region is scanned.
    #[arg(long)]
    pub truth: PathBuf,
    /// Changes, one row each: default, drivers-per-cell=N, driver-per-splat, substeps=xN (of the stability minimum), grid=xF, anchoring=stencil|nearest|splats; the recorded table by default.
    #[arg(long, value_delimiter = ',')]
    pub changes: Vec<String>,
    /// Values of log10 E per region.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(3..))]
    pub points: u32,
    /// Half-width of the scan around each region's truth, in decades.
    #[arg(long, default_value_t = 0.6)]
    pub span: f64,
}

/// Runs the benchmark and prints its JSON; `quiet` drops the progress lines.
pub fn run(args: &BenchDiscretisationArgs, quiet: bool) -> Result<()> {
    let changes = if args.changes.is_empty() {
        Change::table()
    } else {
        args.changes
            .iter()
            .map(|c| match Change::parse(c) {
                Some(change) => Ok(change),
                None => bail!(
                    "unknown change '{c}' (known: default, drivers-per-cell=N, \
                     driver-per-splat, substeps=xN, grid=xF, anchoring=stencil|nearest|splats)"
                ),
            })
            .collect::<Result<Vec<_>>>()?
    };
    if !(args.span.is_finite() && args.span > 0.0) {
        bail!("--span {} must be a positive number of decades", args.span);
    }
    let scene = Scene::load(&args.scene)?;
    let truth = Truth::load(&args.truth, scene.material.log10_youngs_range)
        .with_context(|| format!("the truth of {}", physfit::io::shown(&args.scene)))?;
    let ctx = GpuContext::new(&GpuOptions::default())?;
    let result = run_bench(
        &ctx,
        &scene,
        &truth,
        &changes,
        args.points as usize,
        args.span,
        |name| {
            if !quiet {
                eprintln!("bench discretisation: {name}");
            }
        },
    )?;
    let out = serde_json::json!({
        "adapter": ctx.adapter_info.name,
        "backend": format!("{:?}", ctx.adapter_info.backend),
        "discretisation": result,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
