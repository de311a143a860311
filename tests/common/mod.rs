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

/// Deterministic pseudo-random numbers in [−1, 1) (a 64-bit LCG from
/// `seed`; the same sequence on every machine).
pub fn pseudo_random(count: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// How [`block`] lays out its splats.
pub struct Block {
    /// Splats per axis.
    pub counts: [usize; 3],
    /// Lattice spacing per axis (world units); splat `(i, j, k)` sits at
    /// `(i·s₀, j·s₁, k·s₂)` plus its jitter.
    pub spacing: [f32; 3],
    /// Largest offset of a splat from its lattice point, per axis: uniform
    /// pseudo-random in `[−jitter, jitter)` ([`pseudo_random`] of
    /// `jitter_seed`, three numbers per splat in lattice order); 0 for none.
    pub jitter: f32,
    /// Seed of the jitter.
    pub jitter_seed: u64,
    /// Log scale of every axis of every splat.
    pub log_scale: f32,
    /// Opacity logit of every splat.
    pub opacity_logit: f32,
    /// SH DC colour of splat `(i, j, k)`.
    pub colour: fn([usize; 3]) -> [f32; 3],
}

/// Axis-aligned, isotropic splats on a lattice, in `i`, `j`, `k` order
/// (`k` fastest), as `layout` says.
pub fn block(layout: &Block) -> physfit::scene::Gaussians {
    let [nx, ny, nz] = layout.counts;
    let jitter = pseudo_random(3 * nx * ny * nz, layout.jitter_seed);
    let mut g = physfit::scene::Gaussians::default();
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                let s = 3 * g.means.len();
                let at = |a: usize, n: usize| {
                    let p = n as f32 * layout.spacing[a];
                    if layout.jitter == 0.0 {
                        p
                    } else {
                        p + layout.jitter * jitter[s + a]
                    }
                };
                g.means.push([at(0, i), at(1, j), at(2, k)]);
                g.rotations.push([1.0, 0.0, 0.0, 0.0]);
                g.log_scales.push([layout.log_scale; 3]);
                g.opacity_logits.push(layout.opacity_logit);
                g.sh.push((layout.colour)([i, j, k]));
            }
        }
    }
    g
}

pub mod cameras;
pub mod cli;
pub mod deform_cases;
pub mod doc_blocks;
pub mod json_shape;
pub mod slopes;
