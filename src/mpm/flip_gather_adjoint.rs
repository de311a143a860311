//! Adjoint of FLIP's part of G2P, grid side: every free particle scatters `−α w ∂L/∂v_p'` into `∂L/∂v̂_i` (shaders/mpm/flip_gather_adjoint.wgsl, docs/design.md § MPM, "Transfer").

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/flip_gather_adjoint` dispatch, named.
pub struct FlipGatherAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// ∂L/∂(state n+1).
    pub state_grad_next: &'a GpuBuffer,
    /// ∂L/∂v̂ per node (atomic f32, 4 words, the vector in words 1–3), zero over the box before.
    pub carried_velocity_grad: &'a GpuBuffer,
}

impl<'a> FlipGatherAdjointBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 5] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.anchored,
            self.state_grad_next,
            self.carried_velocity_grad,
        ]
    }
}

/// The `mpm/flip_gather_adjoint` kernel.
pub struct FlipGatherAdjoint {
    kernel: ComputeKernel,
}

impl FlipGatherAdjoint {
    /// Entry point `main` of shaders/mpm/flip_gather_adjoint.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/flip_gather_adjoint",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("state", 1),
            Binding::read("anchored", 2),
            Binding::read("state_grad_next", 3),
            Binding::read_write("carried_velocity_grad", 4),
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
    pub fn bind(&self, ctx: &GpuContext, b: &FlipGatherAdjointBuffers) -> wgpu::BindGroup {
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
