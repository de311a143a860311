//! Zeroes FLIP's carried `(m̂, mv̂)` over the substep's active box before its scatter (shaders/mpm/flip_clear.wgsl, docs/design.md § MPM, "Transfer").

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/flip_clear` dispatch, named.
pub struct FlipClearBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// The substep's active box ([`super::grid_box`]).
    pub node_box: &'a GpuBuffer,
    /// `(m̂, mv̂)` per node: zeroed over the box.
    pub carried: &'a GpuBuffer,
}

impl<'a> FlipClearBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 3] {
        named_buffers![
            self.uniforms => "params",
            self.node_box,
            self.carried,
        ]
    }
}

/// The `mpm/flip_clear` kernel.
pub struct FlipClear {
    kernel: ComputeKernel,
}

impl FlipClear {
    /// Entry point `main` of shaders/mpm/flip_clear.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/flip_clear",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("node_box", 1),
            Binding::read_write("carried", 2),
        ],
    };

    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &FlipClearBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.by_name())
    }

    /// Records one dispatch over the active box; `dispatch_args` holds the
    /// workgroup counts written by [`super::grid_box`].
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
