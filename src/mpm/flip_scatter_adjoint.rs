//! The FLIP transfer's particle-side adjoint: the carried scatter's paths and FLIP's G2P particle terms, added to the ∂L/∂(state n) that P2G* wrote (shaders/mpm/flip_scatter_adjoint.wgsl, docs/design.md § MPM, "Transfer").

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/flip_scatter_adjoint` dispatch, named.
pub struct FlipScatterAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// ∂L/∂(state n+1).
    pub state_grad_next: &'a GpuBuffer,
    /// `(m̂, mv̂)` per node ([`super::flip_scatter`]).
    pub carried: &'a GpuBuffer,
    /// `(∂L/∂m̂, ∂L/∂mv̂)` per node ([`super::flip_grid_adjoint`]).
    pub carried_grad: &'a GpuBuffer,
    /// ∂L/∂(state n), as P2G* wrote it: the FLIP terms are added.
    pub state_grad: &'a GpuBuffer,
}

impl<'a> FlipScatterAdjointBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 7] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.anchored,
            self.state_grad_next,
            self.carried,
            self.carried_grad,
            self.state_grad,
        ]
    }
}

/// The `mpm/flip_scatter_adjoint` kernel.
pub struct FlipScatterAdjoint {
    kernel: ComputeKernel,
}

impl FlipScatterAdjoint {
    /// Entry point `main` of shaders/mpm/flip_scatter_adjoint.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/flip_scatter_adjoint",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("state", 1),
            Binding::read("anchored", 2),
            Binding::read("state_grad_next", 3),
            Binding::read("carried", 4),
            Binding::read("carried_grad", 5),
            Binding::read_write("state_grad", 6),
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
    pub fn bind(&self, ctx: &GpuContext, b: &FlipScatterAdjointBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.by_name())
    }

    /// Records one dispatch over `count` particles.
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        count: u32,
    ) {
        self.kernel.dispatch_threads(encoder, bind_group, count);
    }
}
