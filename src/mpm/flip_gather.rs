//! FLIP's part of G2P: every free particle's new velocity gets `α (v_p − Σ w v̂_i)`, after G2P under the FLIP transfer (shaders/mpm/flip_gather.wgsl, docs/design.md § MPM, "Transfer").

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/flip_gather` dispatch, named.
pub struct FlipGatherBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// `(m̂, mv̂)` per node ([`super::flip_scatter`]).
    pub carried: &'a GpuBuffer,
    /// Particle state at substep n+1, as G2P wrote it: its v gets the FLIP term.
    pub state_out: &'a GpuBuffer,
    /// Status words ([`super::status`]): a non-finite velocity is flagged.
    pub status: &'a GpuBuffer,
}

impl<'a> FlipGatherBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 6] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.anchored,
            self.carried,
            self.state_out,
            self.status,
        ]
    }
}

/// The `mpm/flip_gather` kernel.
pub struct FlipGather {
    kernel: ComputeKernel,
}

impl FlipGather {
    /// Entry point `main` of shaders/mpm/flip_gather.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/flip_gather",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("state", 1),
            Binding::read("anchored", 2),
            Binding::read("carried", 3),
            Binding::read_write("state_out", 4),
            Binding::read_write("status", 5),
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
    pub fn bind(&self, ctx: &GpuContext, b: &FlipGatherBuffers) -> wgpu::BindGroup {
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
