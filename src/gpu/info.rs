//! The report behind `physfit info`: adapter, backend, driver, the limits that
//! bound scene size, and the features physfit uses.

use std::fmt::Write;

use super::context::GpuContext;
use super::shader::AtomicMode;
use crate::memory::bytes::human_bytes;

/// Human-readable description of a context, one fact a line.
pub fn describe(ctx: &GpuContext) -> String {
    let i = &ctx.adapter_info;
    let l = &ctx.limits;
    let mut s = String::new();
    let _ = writeln!(s, "adapter:            {}", i.name);
    let _ = writeln!(
        s,
        "type:               {:?}{}",
        i.device_type,
        if ctx.is_software() {
            " (software: correct but slow)"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "backend:            {:?}", i.backend);
    let _ = writeln!(s, "driver:             {} {}", i.driver, i.driver_info);
    let _ = writeln!(s, "vendor/device id:   {:#06x}/{:#06x}", i.vendor, i.device);
    let _ = writeln!(
        s,
        "float atomics:      {}",
        if ctx.caps.float_atomics { "yes" } else { "no" }
    );
    let _ = writeln!(
        s,
        "scatter-add mode:   {}",
        match ctx.shader_options.atomics {
            AtomicMode::Native => "native atomicAdd on f32",
            AtomicMode::CompareSwap => "compare-and-swap loop on u32",
        }
    );
    let _ = writeln!(
        s,
        "subgroups:          {}",
        if ctx.caps.subgroups {
            format!(
                "yes (size {}..={})",
                ctx.caps.min_subgroup_size, ctx.caps.max_subgroup_size
            )
        } else {
            "no".to_string()
        }
    );
    let _ = writeln!(
        s,
        "max storage binding: {}",
        human_bytes(l.max_storage_buffer_binding_size)
    );
    let _ = writeln!(s, "max buffer size:    {}", human_bytes(l.max_buffer_size));
    let _ = writeln!(
        s,
        "storage buffers/stage: {}",
        l.max_storage_buffers_per_shader_stage
    );
    let _ = writeln!(
        s,
        "workgroup memory:   {}",
        human_bytes(l.max_compute_workgroup_storage_size as u64)
    );
    let _ = writeln!(
        s,
        "invocations/workgroup: {}",
        l.max_compute_invocations_per_workgroup
    );
    let _ = write!(
        s,
        "workgroups/dimension: {}",
        l.max_compute_workgroups_per_dimension
    );
    s
}
