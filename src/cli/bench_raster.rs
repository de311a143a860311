//! `physfit bench raster`: times the splat rasterizer on the present adapter
//! (see `physfit::bench::raster`) and prints the figures as JSON.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::parse_size;
use clap::Args;
use serde_json::json;

use physfit::bench::raster::{bench_case, synthetic_cases, RasterCase};
use physfit::gpu::GpuContext;
use physfit::scene::Scene;

/// Options of `physfit bench raster`.
#[derive(Args, Debug)]
pub struct BenchRasterArgs {
    /// Real scene to time from its first camera (skipped when absent).
    #[arg(long, default_value = "scenes/fox.toml")]
    pub scene: PathBuf,
    /// Image sizes for the real scene, WxH, comma-separated (square pixels,
    /// horizontal field of view of its camera kept).
    #[arg(long, value_delimiter = ',', default_value = "512x512,1024x576")]
    pub size: Vec<String>,
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

/// Runs the benchmark.
pub fn run(args: &BenchRasterArgs) -> Result<()> {
    let ctx = GpuContext::new(&Default::default())?;
    let mut cases = Vec::new();
    if args.scene.exists() {
        let scene = Scene::load(&args.scene)?;
        let view = scene
            .views
            .first()
            .with_context(|| format!("{} has no camera", physfit::io::shown(&args.scene)))?;
        let stem = args.scene.file_stem().unwrap_or_default().to_string_lossy();
        for size in &args.size {
            let (w, h) = parse_size(size)?;
            let camera = view.camera.resized(w, h);
            cases.push(RasterCase {
                name: format!("{stem} view '{}' {w}x{h}", view.name),
                camera,
                gaussians: scene.gaussians().clone(),
            });
        }
    } else {
        log::warn!(
            "{} not found: skipping the real-scene case",
            physfit::io::shown(&args.scene)
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
            physfit::budget::human_bytes(r.peak_gpu_bytes)
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
        std::fs::write(&tmp, &text)
            .with_context(|| format!("writing {}", physfit::io::shown(&tmp)))?;
        std::fs::rename(&tmp, path)
            .with_context(|| format!("writing {}", physfit::io::shown(path)))?;
    }
    Ok(())
}
