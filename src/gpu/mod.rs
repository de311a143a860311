//! GPU runtime: adapter and device ([`GpuContext`]), typed errors, labelled
//! buffers with readback, embedded WGSL with a prelude/import mechanism, and
//! the [`ComputeKernel`] building block every typed kernel wrapper uses.

internal_mods! {
    binding_table;
    buffer;
    context;
    error;
    info;
    kernel;
    memory;
    prefix_sum;
    prefix_sum_add;
    prefix_sum_blocks;
    primitive_error;
    radix_sort;
    radix_sort_histogram;
    radix_sort_pass;
    radix_sort_scatter;
    runtime_dir;
    shader;
    #[cfg(feature = "reference")]
    sort_bench;
    traffic;
    wgsl_layout;
}

pub use info::describe;
pub use runtime_dir::RuntimeDir;

pub use binding_table::{Binding, BindingKind, KernelSpec, NamedBuffer};
pub use buffer::{GpuBuffer, STORAGE, UNIFORM};
pub use context::{GpuCaps, GpuContext, GpuOptions};
pub use error::GpuError;
pub use kernel::ComputeKernel;
pub use shader::{AtomicMode, ShaderOptions};

/// Creates a command encoder with a label.
pub fn encoder(ctx: &GpuContext, label: &str) -> wgpu::CommandEncoder {
    ctx.traffic.encoder();
    ctx.device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
}
