//! Adjoint of G2P, grid side (shaders/mpm/g2p_adjoint.wgsl): each
//! non-anchored particle scatter-adds its ∂L/∂(grid velocity) terms with
//! f32 atomics (GPUs; CPU adapters bin: [`super::g2p_adjoint_bin`]). The
//! particle side of G2P* is in [`super::p2g_adjoint`].

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/g2p_adjoint` dispatch, named, in binding order.
pub struct G2pAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// ∂L/∂(state n+1), 24 f32 per particle.
    pub state_grad_next: &'a GpuBuffer,
    /// ∂L/∂(grid velocity), zero before the dispatch (atomic f32).
    pub grid_velocity_grad: &'a GpuBuffer,
}

impl<'a> G2pAdjointBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 5] {
        [
            self.uniforms,
            self.state,
            self.anchored,
            self.state_grad_next,
            self.grid_velocity_grad,
        ]
    }
}

/// The `mpm/g2p_adjoint` kernel.
pub struct G2pAdjoint {
    kernel: ComputeKernel,
}

impl G2pAdjoint {
    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/g2p_adjoint",
                "main",
                &[
                    Uniform,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageReadWrite,
                ],
            )?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &G2pAdjointBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.in_binding_order())
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
