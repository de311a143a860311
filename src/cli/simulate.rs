//! `physfit simulate scene.toml --velocity VX,VY,VZ [--frames N] --out DIR`:
//! runs the GPU MPM forward from the scene's rest state with a uniform
//! initial velocity (world units per second; anchored splats start at rest)
//! and Young's modulus `material.youngs_modulus` everywhere, and writes one
//! 3DGS .ply per frame (`frame_0000.ply` is the rest state) with the
//! simulated splats' centres moved. Every simulated splat is a particle
//! (drivers come later); rotations and scales are unchanged until the
//! deformation stage exists. Each frame is also rendered from every view of
//! the scene (`DIR/<view>/frame_0000.png`, 8-bit, 3DGS colours; `--size WxH` rescales
//! the cameras), so the motion can be looked at as image sequences. The whole
//! simulation happens before anything is written, so a refused or
//! broken-down run writes nothing; each file is written atomically.

use std::path::Path;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::gpu::{GpuContext, GpuOptions};
use physfit::mpm::config::particle_volume;
use physfit::mpm::{MpmSetup, MpmSimulator, ParticleState};
use physfit::scene::ply::PlyData;
use physfit::scene::{Camera, Scene};
use physfit::splat::{Rasterizer, SplatBuffers};

use super::render::render_png;

/// Runs the subcommand.
pub fn run(
    scene_path: &Path,
    velocity: [f64; 3],
    frames: Option<u32>,
    size: Option<(u32, u32)>,
    out: &Path,
) -> Result<()> {
    let scene = Scene::load(scene_path)?;
    if velocity.iter().any(|v| !v.is_finite()) {
        bail!("--velocity must be three finite numbers, got {velocity:?}");
    }
    let frames = match frames {
        Some(0) => bail!("--frames must be at least 1"),
        Some(n) => n,
        None => scene
            .frame_count()
            .map(|n| n.saturating_sub(1).max(1) as u32)
            .unwrap_or(30),
    };
    let indices = scene.simulated_indices();
    if indices.is_empty() {
        bail!(
            "{}: no splat lies in regions.simulated; nothing to simulate",
            scene_path.display()
        );
    }
    let means = scene.normalised_means();
    let x: Vec<[f32; 3]> = indices.iter().map(|&i| means[i as usize]).collect();
    let anchored: Vec<bool> = indices
        .iter()
        .map(|&i| scene.anchored[i as usize])
        .collect();
    let v_norm = scene
        .simulation
        .sim_box
        .vector_to_normalised(velocity)
        .map(|c| c as f32);
    let v: Vec<[f32; 3]> = anchored
        .iter()
        .map(|&a| if a { [0.0; 3] } else { v_norm })
        .collect();
    let config = scene.mpm_config();
    let x64: Vec<[f64; 3]> = x.iter().map(|p| p.map(f64::from)).collect();
    let volume = particle_volume(&x64, config.grid_res);
    let youngs = scene.material.youngs_modulus;

    let ctx = GpuContext::new(&GpuOptions::default())?;
    let sim = MpmSimulator::new(
        &ctx,
        &config,
        &MpmSetup {
            particle_volume: volume,
            anchored,
            youngs_max: youngs,
        },
    )
    .with_context(|| format!("simulating {}", scene_path.display()))?;
    sim.set_youngs(&ctx, &vec![youngs as f32; x.len()])?;
    let start = ParticleState::at_rest(x.clone(), v);
    let mut current = sim.upload_state(&ctx, "simulate frame", &start)?;
    let mut next = sim.state_buffer(&ctx, "simulate next frame")?;

    let bar = ProgressBar::new(frames as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "simulating {bar:40} frame {pos}/{len} ({elapsed}, eta {eta})",
        )
        .expect("valid template"),
    );
    let mut positions = vec![x];
    for k in 1..=frames {
        sim.run_frame(&ctx, &current, &next, k).with_context(|| {
            format!("simulating {} (nothing was written)", scene_path.display())
        })?;
        std::mem::swap(&mut current, &mut next);
        positions.push(sim.read_state(&ctx, &current)?.x);
        bar.inc(1);
    }
    bar.finish_and_clear();

    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let cameras: Vec<(String, Camera)> = scene
        .views
        .iter()
        .map(|view| {
            let camera = match size {
                Some((w, h)) => view.camera.resized(w, h),
                None => view.camera.clone(),
            };
            (view.name.clone(), camera)
        })
        .collect();
    for (name, _) in &cameras {
        let dir = out.join(name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let sim_box = scene.simulation.sim_box;
    let mut gaussians = scene.gaussians().clone();
    let mut raster = Rasterizer::new(&ctx)?;
    let splats = SplatBuffers::upload(&ctx, &gaussians)?;
    let bar = ProgressBar::new(positions.len() as u64).with_style(
        ProgressStyle::with_template("writing {bar:40} frame {pos}/{len} ({elapsed}, eta {eta})")
            .expect("valid template"),
    );
    for (k, frame) in positions.iter().enumerate() {
        for (p, &i) in indices.iter().enumerate() {
            gaussians.means[i as usize] = sim_box.to_world(frame[p]);
        }
        let path = out.join(format!("frame_{k:04}.ply"));
        PlyData::from_gaussians(&gaussians, &path)
            .write(&path, &[])
            .with_context(|| format!("writing {}", path.display()))?;
        ctx.write(&splats.means, &gaussians.means);
        for (name, camera) in &cameras {
            let path = out.join(name).join(format!("frame_{k:04}.png"));
            render_png(&ctx, &mut raster, &splats, camera, scene.background, &path)
                .with_context(|| format!("rendering frame {k} from view '{name}'"))?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    eprintln!(
        "wrote {} frames ({} particles, {} substeps per frame) to {} (.ply per frame, PNG sequences per view)",
        positions.len(),
        indices.len(),
        config.substeps_per_frame,
        out.display()
    );
    Ok(())
}
