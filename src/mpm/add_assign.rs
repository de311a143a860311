//! `dst += src` over f32 arrays (shaders/mpm/add_assign.wgsl): adds a frame's
//! `∂L/∂(state)` to the adjoint flowing back from later frames.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Uniforms of `mpm/add_assign`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct AddAssignUniforms {
    /// Number of f32 values.
    pub count: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 3],
}

/// Buffers of one dispatch, named, in binding order.
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
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/add_assign",
                "main",
                &[Uniform, StorageRead, StorageReadWrite],
            )?,
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
        let bind_group = self.kernel.bind(ctx, &[b.uniforms, b.src, b.dst]);
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}
