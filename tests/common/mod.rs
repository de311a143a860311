//! Shared helpers for integration tests.
#![allow(dead_code)]

use physfit::gpu::{GpuContext, GpuOptions};

/// A GPU context on the present adapter (lavapipe in CI). Fails loudly when
/// none exists: GPU tests must run, never silently skip.
pub fn gpu_with(options: GpuOptions) -> GpuContext {
    let _ = env_logger::builder().is_test(true).try_init();
    GpuContext::new(&options).expect("a wgpu adapter (install mesa-vulkan-drivers)")
}

/// A GPU context with the adapter's preferred atomic mode.
pub fn gpu() -> GpuContext {
    gpu_with(GpuOptions::default())
}

/// Path of a test fixture under tests/fixtures (kept in the repository,
/// with its provenance and licence in tests/fixtures/README.md).
pub fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `n³` small opaque splats on a cubic lattice of spacing 0.5 from the origin.
pub fn splat_lattice(n: usize) -> physfit::scene::Gaussians {
    let mut g = physfit::scene::Gaussians::default();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                g.means
                    .push([i as f32 * 0.5, j as f32 * 0.5, k as f32 * 0.5]);
                g.rotations.push([1.0, 0.0, 0.0, 0.0]);
                g.log_scales.push([-3.0; 3]);
                g.opacity_logits.push(2.0);
                g.sh.push([0.5, 0.2, 0.1]);
            }
        }
    }
    g
}

/// A smooth `w × h` RGBA test image (every channel varies, alpha too).
pub fn gradient_image(w: u32, h: u32) -> Vec<[f32; 4]> {
    (0..w * h)
        .map(|i| {
            let (x, y) = (
                (i % w) as f32 / (w - 1) as f32,
                (i / w) as f32 / (h - 1) as f32,
            );
            [x, y, x * y, 0.25 + 0.5 * x]
        })
        .collect()
}

/// Writes `means` as small splats (`splats.ply`) and a scene around them
/// (`scene.toml`: one 16×12 camera, log10 E in [3, 5]) with `extra` TOML
/// appended, in a fresh temporary directory.
pub fn scene_with(
    means: &[[f32; 3]],
    extra: &str,
) -> (
    tempfile::TempDir,
    Result<physfit::scene::Scene, physfit::scene::SceneError>,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = physfit::scene::Gaussians::default();
    for &m in means {
        g.means.push(m);
        g.rotations.push([1.0, 0.0, 0.0, 0.0]);
        g.log_scales.push([-4.0; 3]);
        g.opacity_logits.push(2.0);
        g.sh.push([0.5, 0.2, 0.1]);
    }
    let ply = dir.path().join("splats.ply");
    physfit::scene::ply::PlyData::from_gaussians(&g, &ply)
        .write(&ply, &[])
        .unwrap();
    let toml = format!(
        "[gaussians]\npath = \"splats.ply\"\n\n[[views]]\n[views.camera]\nwidth = 16\nheight = 12\n\
         fx = 20.0\nposition = [0.5, -4.0, 0.5]\nlook_at = [0.5, 0.5, 0.5]\nup = [0.0, 0.0, 1.0]\n\n\
         [material]\nlog10_youngs_range = [3.0, 5.0]\n\n{extra}\n"
    );
    let path = dir.path().join("scene.toml");
    std::fs::write(&path, toml).unwrap();
    let scene = physfit::scene::Scene::load(&path);
    (dir, scene)
}

pub mod deform_cases;
