//! `physfit bench` without a target: one JSON object with the headline
//! figures of every hot path on the present adapter: MPM particle-substeps
//! per second forward and adjoint (case a: 8,000 particles, grid 64³, 40
//! substeps), rasterizer frames per second forward and backward (the demo
//! scene's first camera), and peak GPU memory. `physfit bench mpm` and
//! `physfit bench raster` give the full cases and per-kernel times.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::json;

use physfit::bench::mpm::{default_cases, run_case};
use physfit::bench::raster::{bench_case, RasterCase};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::scene::Scene;

/// The demo scene the raster figure is measured on.
const DEMO_SCENE: &str = "scenes/fox.toml";

/// Runs the summary benchmark and prints its JSON; `quiet` drops the
/// progress lines (the JSON is the result).
pub fn run(quiet: bool) -> Result<()> {
    let ctx = GpuContext::new(&GpuOptions::default())?;

    let case = default_cases()
        .into_iter()
        .find(|c| c.name == "a")
        .context("MPM benchmark case 'a' is missing")?;
    if !quiet {
        eprintln!(
            "bench: MPM case a ({} particles, grid {}³, {} substeps)",
            case.edge.pow(3),
            case.grid_res,
            case.substeps
        );
    }
    let mpm = run_case(&ctx, &case, None, 3)?;

    let scene_path = Path::new(DEMO_SCENE);
    let scene = Scene::load(scene_path).with_context(|| {
        format!("the raster summary renders {DEMO_SCENE}: run from the repository root")
    })?;
    let view = scene
        .views
        .first()
        .with_context(|| format!("{DEMO_SCENE} has no camera"))?;
    let raster_case = RasterCase {
        name: format!(
            "fox view '{}' {}x{}",
            view.name, view.camera.width, view.camera.height
        ),
        camera: view.camera.clone(),
        gaussians: scene.gaussians().clone(),
    };
    if !quiet {
        eprintln!("bench: rasterizer, {}", raster_case.name);
    }
    let raster = bench_case(&ctx, &raster_case, 3)?;

    let out = json!({
        "adapter": ctx.adapter_info.name,
        "backend": format!("{:?}", ctx.adapter_info.backend),
        "atomics": format!("{:?}", ctx.shader_options.atomics),
        "mpm": {
            "case": "a",
            "particles": mpm.particles,
            "substeps": case.substeps,
            "forward_particle_substeps_per_s": mpm.forward_particle_substeps_per_s,
            "adjoint_particle_substeps_per_s": mpm.adjoint_particle_substeps_per_s,
            "forward_s": mpm.forward_s,
            "adjoint_s": mpm.adjoint_s,
            "forward_cpu_s": mpm.forward_cpu_s,
            "adjoint_cpu_s": mpm.adjoint_cpu_s,
            "peak_gpu_bytes": mpm.peak_memory_bytes,
        },
        "raster": {
            "case": raster.name,
            "splats": raster.splats,
            "forward_fps": 1e3 / raster.forward_ms,
            "backward_fps": 1e3 / raster.backward_ms,
            "peak_gpu_bytes": raster.peak_gpu_bytes,
        },
        "peak_gpu_bytes": mpm.peak_memory_bytes.max(raster.peak_gpu_bytes),
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
