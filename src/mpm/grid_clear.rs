//! Zeroes per-node words over the active box (shaders/mpm/grid_clear.wgsl):
//! the grid before P2G, the anchored flags, ∂L/∂(grid velocity) before G2P*.
//! Cheaper than clearing whole grid buffers when the object is small.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Uniforms of `mpm/grid_clear`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct GridClearUniforms {
    /// u32 words per node of the cleared buffer.
    pub words_per_node: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 3],
}

/// Buffers of one dispatch, in binding order.
pub struct GridClearBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// [`GridClearUniforms`].
    pub clear: &'a GpuBuffer,
    /// Active box from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// The per-node buffer to zero.
    pub values: &'a GpuBuffer,
}

impl<'a> GridClearBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 4] {
        [self.uniforms, self.clear, self.node_box, self.values]
    }
}

/// The `mpm/grid_clear` kernel.
pub struct GridClear {
    kernel: ComputeKernel,
}

impl GridClear {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/grid_clear",
                "main",
                &[Uniform, Uniform, StorageRead, StorageReadWrite],
            )?,
        })
    }

    /// Bind group for `b`.
    pub fn bind(&self, ctx: &GpuContext, b: &GridClearBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.in_binding_order())
    }

    /// Records the clear over the active box (indirect arguments from [`super::grid_box`]).
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        dispatch_args: &GpuBuffer,
    ) {
        self.kernel
            .dispatch_indirect(encoder, bind_group, dispatch_args, 0);
    }
}
