//! `physfit bench raster`: times the splat rasterizer on the present adapter
//! (see `physfit::bench::raster`) and prints the figures as JSON.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use physfit::bench::raster::{bench_case, fox_demo_camera, synthetic_cases, RasterCase};
use physfit::gpu::GpuContext;

/// Options of `physfit bench raster`.
#[derive(Args, Debug)]
pub struct BenchRasterArgs {
    /// 3DGS .ply to time as a real scene (skipped when absent).
    #[arg(long, default_value = "assets/fox.ply")]
    pub fox: PathBuf,
    /// Image size for the real scene, WxH.
    #[arg(long, default_value = "512x512")]
    pub fox_size: String,
    /// Splats in the synthetic cloud (0 skips it).
    #[arg(long, default_value_t = 500_000)]
    pub splats: usize,
    /// Timed repetitions per case (after one warm-up).
    #[arg(long, default_value_t = 3)]
    pub repetitions: u32,
    /// Also write the JSON to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Parses `WxH`.
pub fn parse_size(s: &str) -> Result<(u32, u32)> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .with_context(|| format!("size '{s}' must look like 512x512"))?;
    let w: u32 = w
        .trim()
        .parse()
        .with_context(|| format!("bad width in size '{s}'"))?;
    let h: u32 = h
        .trim()
        .parse()
        .with_context(|| format!("bad height in size '{s}'"))?;
    anyhow::ensure!(w > 0 && h > 0, "size '{s}' must be positive");
    Ok((w, h))
}

/// Runs the benchmark.
pub fn run(args: &BenchRasterArgs) -> Result<()> {
    let ctx = GpuContext::new(&Default::default())?;
    let mut cases = Vec::new();
    if args.fox.exists() {
        let (w, h) = parse_size(&args.fox_size)?;
        let loaded = physfit::scene::ply::load_gaussians(&args.fox)
            .with_context(|| format!("loading {}", args.fox.display()))?;
        let gaussians = loaded.gaussians;
        cases.push(RasterCase {
            name: format!("fox {w}x{h}"),
            camera: fox_demo_camera(w, h),
            gaussians,
        });
    } else {
        log::warn!(
            "{} not found: skipping the real-scene case",
            args.fox.display()
        );
    }
    if args.splats > 0 {
        cases.extend(synthetic_cases(args.splats));
    }
    let mut results = Vec::new();
    for case in &cases {
        log::info!("timing {}", case.name);
        let r = bench_case(&ctx, case, args.repetitions)
            .with_context(|| format!("benchmark case '{}'", case.name))?;
        log::info!(
            "{}: forward {:.1} ms, backward {:.1} ms, {} intersections, peak {}",
            r.name,
            r.forward_ms,
            r.backward_ms,
            r.intersections,
            physfit::gpu::error::human_bytes(r.peak_gpu_bytes)
        );
        results.push(r);
    }
    let report = json!({
        "adapter": ctx.adapter_info.name,
        "backend": format!("{:?}", ctx.adapter_info.backend),
        "atomics": format!("{:?}", ctx.shader_options.atomics),
        "raster": results,
    });
    let text = serde_json::to_string_pretty(&report)?;
    println!("{text}");
    if let Some(path) = &args.out {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, &text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
