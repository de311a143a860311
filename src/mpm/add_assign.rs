//! `dst += src` over f32 arrays (shaders/mpm/add_assign.wgsl): adds a frame's
//! `∂L/∂(state)` to the adjoint flowing back from later frames.

use bytemuck::{Pod, Zeroable};

use crate::gpu::binding_table::named_buffers;
use crate::gpu::wgsl_layout::wgsl_mirror;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Uniforms of `mpm/add_assign`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct AddAssignUniforms {
    /// Number of f32 values.
    pub count: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 3],
}

wgsl_mirror!(AddAssignUniforms => "Uniforms" in ["mpm/add_assign"] {
    count,
    _pad,
});

/// Buffers of one dispatch, named.
pub struct AddAssignBuffers<'a> {
    /// [`AddAssignUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Values to add.
    pub src: &'a GpuBuffer,
    /// Accumulator.
    pub dst: &'a GpuBuffer,
}

/// The `mpm/add_assign` kernel.
pub struct AddAssign {
    kernel: ComputeKernel,
}

impl AddAssign {
    /// Entry point `main` of shaders/mpm/add_assign.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/add_assign",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("src", 1),
            Binding::read_write("dst", 2),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records `dst += src` over `count` values.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &AddAssignBuffers,
        count: u32,
    ) {
        let bind_group = self
            .kernel
            .bind(ctx, &named_buffers![b.uniforms, b.src, b.dst,]);
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}
