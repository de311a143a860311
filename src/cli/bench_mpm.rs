//! `physfit bench mpm [--cases a,b,c,a-flip]`: prints the MPM benchmark as JSON.

use anyhow::{bail, Result};
use clap::Args;

use physfit::bench::mpm::MpmError;
use physfit::bench::mpm::{default_cases, run_case};
use physfit::gpu::{GpuContext, GpuError, GpuOptions};

/// Options of `physfit bench mpm`.
#[derive(Args, Debug)]
pub struct BenchMpmArgs {
    /// Cases to run (a: 8k particles 64³; b: 100k 64³; c: 500k 128³; a-flip: a under the FLIP transfer); all by default.
    #[arg(long, value_delimiter = ',')]
    pub cases: Vec<String>,
    /// K of the in-frame checkpoints: the forward keeps every K-th substep state and the backward starts from them (default ⌈√substeps⌉; the substep count = store everything).
    #[arg(long)]
    pub checkpoint_every: Option<u32>,
    /// Timed runs of each figure (after one warm-up); medians are reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
}

/// Runs the MPM benchmark cases named in `args.cases` (all when empty) with
/// backward checkpoints every `args.checkpoint_every` substeps (default ⌈√S⌉).
/// `quiet` drops the progress lines (the JSON is the result).
pub fn run(args: &BenchMpmArgs, quiet: bool) -> Result<()> {
    let (cases, checkpoint_every) = (&args.cases, args.checkpoint_every);
    let ctx = GpuContext::new(&GpuOptions::default())?;
    let all = default_cases();
    for c in cases {
        if !all.iter().any(|a| &a.name == c) {
            bail!(
                "unknown MPM benchmark case '{c}' (known: {})",
                all.iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for case in all
        .iter()
        .filter(|a| cases.is_empty() || cases.contains(&a.name))
    {
        if !quiet {
            eprintln!(
                "bench mpm case {}: {} particles, grid {}³, {} substeps",
                case.name,
                case.edge.pow(3),
                case.grid_res,
                case.substeps
            );
        }
        match run_case(&ctx, case, checkpoint_every, args.repetitions) {
            Ok(r) => results.push(r),
            // "where memory allows": a case over the device's limits is
            // reported as skipped, with the reason, not as a failure.
            Err(MpmError::Gpu(e @ (GpuError::OverLimit { .. } | GpuError::OutOfMemory { .. }))) => {
                skipped.push(serde_json::json!({"case": case.name, "reason": e.to_string()}))
            }
            Err(e) => return Err(e.into()),
        }
    }
    let out = serde_json::json!({
        "adapter": ctx.adapter_info.name,
        "backend": format!("{:?}", ctx.adapter_info.backend),
        "atomics": format!("{:?}", ctx.shader_options.atomics),
        "mpm": results,
        "skipped": skipped,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
