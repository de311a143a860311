//! Per-driver sum of the slots of [`super::gaussian_motion_adjoint`], added
//! into the `x` part of an MPM state gradient
//! (shaders/deform/driver_gather.wgsl).
//!
//! A gather over a CSR list (driver → its slots, built once on the host),
//! not a scatter with float atomics: one thread per driver sums its slots
//! in a fixed order, so the gradient is bit-identical on every adapter and
//! run (docs/design.md § Verification strategy, item 7, needs no noise
//! tolerance here) and no atomic variant needs testing; each driver's record has one writer, so
//! the `+=` into the state gradient is a plain read-modify-write.

use bytemuck::{Pod, Zeroable};

use crate::gpu::binding_table::named_buffers;
use crate::gpu::wgsl_layout::wgsl_mirror;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Uniforms of `deform/driver_gather`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct DriverGatherUniforms {
    /// Number of drivers.
    pub driver_count: u32,
    /// Number of entries in the slot list (reads are clamped to it).
    pub entry_count: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 2],
}

wgsl_mirror!(DriverGatherUniforms => "Uniforms" in ["deform/driver_gather"] {
    driver_count,
    entry_count,
    _pad,
});

/// Buffers of one dispatch, named.
pub struct DriverGatherBuffers<'a> {
    /// [`DriverGatherUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `driver_count + 1` u32 offsets into `entries`.
    pub offsets: &'a GpuBuffer,
    /// Slot indices (u32) into `contributions`, grouped by driver.
    pub entries: &'a GpuBuffer,
    /// The slots (`vec4<f32>`).
    pub contributions: &'a GpuBuffer,
    /// MPM state gradient (24 f32 per driver); its `x` part is added to.
    pub state_grad: &'a GpuBuffer,
}

/// The `deform/driver_gather` kernel.
pub struct DriverGather {
    kernel: ComputeKernel,
}

impl DriverGather {
    /// Entry point `main` of shaders/deform/driver_gather.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "deform/driver_gather",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("offsets", 1),
            Binding::read("entries", 2),
            Binding::read("contributions", 3),
            Binding::read_write("state_grad", 4),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the gather for `driver_count` drivers.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &DriverGatherBuffers,
        driver_count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms,
                b.offsets,
                b.entries,
                b.contributions,
                b.state_grad,
            ],
        );
        self.kernel
            .dispatch_threads(encoder, &bind_group, driver_count);
    }
}
