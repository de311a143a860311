//! `physfit simulate scene.toml --velocity VX,VY,VZ [--frames N] --out DIR`:
//! runs the GPU MPM forward from the scene's rest state with a uniform
//! initial velocity (world units per second; anchored splats start at rest)
//! and Young's modulus `material.youngs_modulus` everywhere, and writes one
//! 3DGS .ply per frame (`frame_0000.ply` is the rest state) with the
//! simulated splats' centres moved. Every simulated splat is a particle
//! ([`physfit::drive::SceneParticles`]; drivers come later); rotations and
//! scales are unchanged until the deformation stage exists. The frames stay
//! on the GPU, where [`physfit::drive::SplatMotion`] moves the splats for
//! rendering; states are read back only to write the .ply files. Each frame is also rendered from every view of
//! the scene (`DIR/<view>/frame_0000.png`, 8-bit, 3DGS colours; `--size WxH` rescales
//! the cameras), so the motion can be looked at as image sequences. The whole
//! simulation happens before anything is written, so a refused or
//! broken-down run writes nothing; each file is written atomically.

use std::path::Path;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::drive::{SceneParticles, SplatMotion};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::mpm::MpmSimulator;
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
    let frames = match frames {
        Some(0) => bail!("--frames must be at least 1"),
        Some(n) => n,
        None => scene
            .frame_count()
            .map(|n| n.saturating_sub(1).max(1) as u32)
            .unwrap_or(30),
    };
    let particles = SceneParticles::from_scene(&scene)?;
    let start = particles
        .uniform_start(velocity)
        .context("--velocity VX,VY,VZ")?;
    let config = scene.mpm_config();
    let youngs = scene.material.youngs_modulus;

    let ctx = GpuContext::new(&GpuOptions::default())?;
    let sim = MpmSimulator::new(
        &ctx,
        &config,
        &particles.setup(vec![youngs as f32; particles.len()], youngs),
    )
    .with_context(|| format!("simulating {}", scene_path.display()))?;
    let mut states = vec![sim.upload_state(&ctx, "simulate frame 0", &start)?];

    let bar = ProgressBar::new(frames as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "simulating {bar:40} frame {pos}/{len} ({elapsed}, eta {eta})",
        )
        .expect("valid template"),
    );
    for k in 1..=frames {
        let next = sim.state_buffer(&ctx, &format!("simulate frame {k}"))?;
        sim.run_frame(&ctx, &states[k as usize - 1], &next, k)
            .with_context(|| {
                format!("simulating {} (nothing was written)", scene_path.display())
            })?;
        states.push(next);
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
    let mut gaussians = scene.gaussians().clone();
    let mut raster = Rasterizer::new(&ctx)?;
    let splats = SplatBuffers::upload(&ctx, &gaussians)?;
    let motion = SplatMotion::new(&ctx, &particles)?;
    let bar = ProgressBar::new(states.len() as u64).with_style(
        ProgressStyle::with_template("writing {bar:40} frame {pos}/{len} ({elapsed}, eta {eta})")
            .expect("valid template"),
    );
    for (k, state) in states.iter().enumerate() {
        // The .ply output needs the positions on the host.
        let positions = particles.world_positions(&sim.read_state(&ctx, state)?);
        for (&i, &p) in particles.splat_indices.iter().zip(&positions) {
            gaussians.means[i as usize] = p;
        }
        let path = out.join(format!("frame_{k:04}.ply"));
        PlyData::from_gaussians(&gaussians, &path)
            .write(&path, &[])
            .with_context(|| format!("writing {}", path.display()))?;
        // The renders move the splats on the GPU.
        let mut encoder = physfit::gpu::encoder(&ctx, "simulate: splats follow particles");
        motion.encode(&ctx, &mut encoder, state, &splats)?;
        ctx.queue.submit([encoder.finish()]);
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
        states.len(),
        particles.len(),
        config.substeps_per_frame,
        out.display()
    );
    Ok(())
}
