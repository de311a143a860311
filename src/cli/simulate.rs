//! `physfit simulate scene.toml --velocity VX,VY,VZ [--frames N] --out DIR`:
//! runs the GPU MPM forward from the scene's rest state with a uniform
//! initial velocity (world units per second; anchored splats start at rest)
//! and Young's modulus `material.youngs_modulus` everywhere, and writes one
//! 3DGS .ply per frame (`frame_0000.ply` is the rest state) with the
//! simulated splats moved. The MPM particles are the scene's K-Means drivers
//! ([`physfit::drive::DriverSet`]), and every free simulated splat follows
//! the rigid motion of its 8 nearest drivers, centre and rotation
//! ([`physfit::deform::Deformation`], DESIGN.md § Drivers and the
//! deformation of Gaussians); anchored and static splats stay at rest. The
//! frames stay on the GPU, where the deformation moves the splats for
//! rendering; splats are read back only to write the .ply files. Each frame is also rendered from every view of
//! the scene (`DIR/<view>/frame_0000.png`, 8-bit, 3DGS colours; `--size WxH` rescales
//! the cameras), so the motion can be looked at as image sequences. The whole
//! simulation happens before anything is written, so a refused or
//! broken-down run writes nothing; each file is written atomically.

use std::path::Path;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::deform::{DeformSetup, Deformation};
use physfit::drive::DriverSet;
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
    let drivers = DriverSet::from_scene(&scene)
        .with_context(|| format!("building the drivers of {}", scene_path.display()))?;
    let start = drivers
        .uniform_start(velocity)
        .context("--velocity VX,VY,VZ")?;
    let deform_setup = DeformSetup::from_drivers(&drivers, scene.gaussians())
        .with_context(|| format!("{}: `drivers`", scene_path.display()))?;
    let config = scene.mpm_config();
    let youngs = scene.material.youngs_modulus;

    let ctx = GpuContext::new(&GpuOptions::default())?;
    let sim = MpmSimulator::new(
        &ctx,
        &config,
        &drivers.setup(vec![youngs as f32; drivers.len()], youngs),
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
    let deformation = Deformation::new(&ctx, &deform_setup)?;
    let bar = ProgressBar::new(states.len() as u64).with_style(
        ProgressStyle::with_template("writing {bar:40} frame {pos}/{len} ({elapsed}, eta {eta})")
            .expect("valid template"),
    );
    for (k, state) in states.iter().enumerate() {
        // The splats follow their drivers on the GPU, for the renders.
        let mut encoder = physfit::gpu::encoder(&ctx, "simulate: splats follow drivers");
        deformation.encode_forward(&ctx, &mut encoder, state, &splats)?;
        ctx.queue.submit([encoder.finish()]);
        // The .ply output needs them on the host.
        gaussians.means = ctx.read_buffer(&splats.means)?;
        gaussians.rotations = ctx.read_buffer(&splats.rotations)?;
        let path = out.join(format!("frame_{k:04}.ply"));
        PlyData::from_gaussians(&gaussians, &path)
            .write(&path, &[])
            .with_context(|| format!("writing {}", path.display()))?;
        for (name, camera) in &cameras {
            let path = out.join(name).join(format!("frame_{k:04}.png"));
            render_png(&ctx, &mut raster, &splats, camera, scene.background, &path)
                .with_context(|| format!("rendering frame {k} from view '{name}'"))?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    eprintln!(
        "wrote {} frames ({} drivers moving {} splats, {} substeps per frame) to {} (.ply per frame, PNG sequences per view)",
        states.len(),
        drivers.len(),
        deform_setup.len(),
        config.substeps_per_frame,
        out.display()
    );
    Ok(())
}
