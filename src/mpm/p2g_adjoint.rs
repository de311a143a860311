//! Adjoint of P2G (shaders/mpm/p2g_adjoint.wgsl): particles gather (∂L/∂mv_i, ∂L/∂m_i) and add to ∂L/∂(state n) and ∂L/∂E (stress, polar derivative, affine and mass paths).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/p2g_adjoint` dispatch, named, in binding order.
pub struct P2gAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Young's modulus per particle.
    pub youngs: &'a GpuBuffer,
    /// (∂L/∂mv, ∂L/∂m) per node from grid update*.
    pub grid_grad: &'a GpuBuffer,
    /// ∂L/∂(state n): the P2G part is added.
    pub state_grad: &'a GpuBuffer,
    /// ∂L/∂E per particle, accumulated over substeps.
    pub youngs_grad: &'a GpuBuffer,
}

impl<'a> P2gAdjointBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 6] {
        [
            self.uniforms,
            self.state,
            self.youngs,
            self.grid_grad,
            self.state_grad,
            self.youngs_grad,
        ]
    }
}

/// The `mpm/p2g_adjoint` kernel.
pub struct P2gAdjoint {
    kernel: ComputeKernel,
}

impl P2gAdjoint {
    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/p2g_adjoint",
                "main",
                &[
                    Uniform,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageReadWrite,
                    StorageReadWrite,
                ],
            )?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &P2gAdjointBuffers) -> wgpu::BindGroup {
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
