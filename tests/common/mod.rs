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

/// [`gpu_with`] on lavapipe with one driver thread (`LP_NUM_THREADS=1`), for
/// tests that compare two schedules of the same arithmetic to 1e-6 (e.g. a
/// checkpointed backward against store-everything).
///
/// f32 atomic adds from workgroups that run at the same time on different
/// driver threads happen in an order that changes from run to run, and so
/// do the last bits of their sums; an MPM rollout amplifies such
/// differences (to ~2e-5 relative in tests/mpm_adjoint.rs's gradients). One
/// lavapipe thread runs the workgroups in order, so every sum has a fixed
/// order. It has no effect on other adapters: a GPU's atomics are unordered
/// too, and there these comparisons need a deterministic scatter mode or a
/// looser bound (untested: no GPU so far). The threaded adjoint walkers
/// stay covered by tests/mpm_twin.rs (GPU adjoint against the f64 twin).
///
/// The variable is process-wide and read when the driver starts, so every
/// test of a binary that uses this must call it before any other GPU or
/// environment access: the first call sets it while every other test
/// thread waits on the same `Once` (so no Rust code reads the environment
/// meanwhile; the test harness reads it only before it starts the tests).
/// It overrides an inherited value, which would bring the run-to-run
/// differences back.
pub fn gpu_single_driver_thread_with(options: GpuOptions) -> GpuContext {
    static ONE_DRIVER_THREAD: std::sync::Once = std::sync::Once::new();
    ONE_DRIVER_THREAD.call_once(|| std::env::set_var("LP_NUM_THREADS", "1"));
    gpu_with(options)
}

/// [`gpu_single_driver_thread_with`] with the adapter's preferred atomic
/// mode.
pub fn gpu_single_driver_thread() -> GpuContext {
    gpu_single_driver_thread_with(GpuOptions::default())
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
