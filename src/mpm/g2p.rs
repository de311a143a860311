//! G2P: particles gather velocity and its affine part, update F and x; flags non-finite values and particles leaving the grid (shaders/mpm/g2p.wgsl, docs/design.md § MPM step 3).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/g2p` dispatch, named.
pub struct G2pBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Velocity per node from the grid update.
    pub grid_velocity: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// Output: particle state at substep n+1.
    pub state_out: &'a GpuBuffer,
    /// Status words ([`super::status`]): bits, first bad particle.
    pub status: &'a GpuBuffer,
}

impl<'a> G2pBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 6] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.grid_velocity,
            self.anchored,
            self.state_out,
            self.status,
        ]
    }
}

/// The `mpm/g2p` kernel.
pub struct G2p {
    kernel: ComputeKernel,
}

impl G2p {
    /// Entry point `main` of shaders/mpm/g2p.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/g2p",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("state", 1),
            Binding::read("grid_velocity", 2),
            Binding::read("anchored", 3),
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
    pub fn bind(&self, ctx: &GpuContext, b: &G2pBuffers) -> wgpu::BindGroup {
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
