//! GPU runtime: adapter and device ([`GpuContext`]), typed errors, labelled
//! buffers with readback, embedded WGSL with a prelude/import mechanism, and
//! the [`ComputeKernel`] building block every typed kernel wrapper uses.

pub mod binding_table;
pub mod buffer;
pub mod context;
pub mod error;
pub mod info;
pub mod kernel;
pub mod memory;
pub mod prefix_sum;
pub mod prefix_sum_add;
pub mod prefix_sum_blocks;
pub mod primitive_error;
pub mod radix_sort;
pub mod radix_sort_histogram;
pub mod radix_sort_pass;
pub mod radix_sort_scatter;
pub mod runtime_dir;
pub mod shader;
pub mod sort_bench;
pub mod traffic;
pub mod wgsl_layout;

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
