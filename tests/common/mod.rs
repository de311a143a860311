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

/// Path of a file under ../shared/data.
pub fn shared_data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(name)
}
