//! Adjoint of FLIP's carried velocity `v̂_i = mv̂_i/m̂_i`, per active-box node: `(∂L/∂m̂, ∂L/∂mv̂)` from `∂L/∂v̂`, which it zeroes (shaders/mpm/flip_grid_adjoint.wgsl, docs/design.md § MPM, "Transfer").

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/flip_grid_adjoint` dispatch, named.
pub struct FlipGridAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// The substep's active box ([`super::grid_box`]).
    pub node_box: &'a GpuBuffer,
    /// `(m̂, mv̂)` per node ([`super::flip_scatter`]).
    pub carried: &'a GpuBuffer,
    /// ∂L/∂v̂ per node: read, then zeroed.
    pub carried_velocity_grad: &'a GpuBuffer,
    /// Output: `(∂L/∂m̂, ∂L/∂mv̂)` per node.
    pub carried_grad: &'a GpuBuffer,
}

impl<'a> FlipGridAdjointBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 5] {
        named_buffers![
            self.uniforms => "params",
            self.node_box,
            self.carried,
            self.carried_velocity_grad,
            self.carried_grad,
        ]
    }
}

/// The `mpm/flip_grid_adjoint` kernel.
pub struct FlipGridAdjoint {
    kernel: ComputeKernel,
}

impl FlipGridAdjoint {
    /// Entry point `main` of shaders/mpm/flip_grid_adjoint.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/flip_grid_adjoint",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("node_box", 1),
            Binding::read("carried", 2),
            Binding::read_write("carried_velocity_grad", 3),
            Binding::read_write("carried_grad", 4),
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
    pub fn bind(&self, ctx: &GpuContext, b: &FlipGridAdjointBuffers) -> wgpu::BindGroup {
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
