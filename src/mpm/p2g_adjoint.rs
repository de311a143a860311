//! Particle side of a substep's adjoint, one thread per particle
//! (shaders/mpm/p2g_adjoint.wgsl; GPUs, CPU adapters run
//! [`super::p2g_adjoint_cells`]): particles gather (∂L/∂mv_i, ∂L/∂m_i)
//! and v_i from their 27 nodes and write ∂L/∂(state n), the adjoint of P2G (stress, polar derivative,
//! affine and mass paths) plus the particle terms of the adjoint of G2P,
//! and add to ∂L/∂E.

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/p2g_adjoint` dispatch, named, in binding order.
pub struct P2gAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Particle state at substep n+1, as G2P wrote it from `state` (its v
    /// and C are read instead of summed again).
    pub state_next: &'a GpuBuffer,
    /// Young's modulus per particle.
    pub youngs: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// ∂L/∂(state n+1), 24 f32 per particle.
    pub state_grad_next: &'a GpuBuffer,
    /// (∂L/∂mv, ∂L/∂m) per node from grid update*.
    pub grid_grad: &'a GpuBuffer,
    /// Grid velocity of substep n.
    pub grid_velocity: &'a GpuBuffer,
    /// Output: ∂L/∂(state n) (overwritten).
    pub state_grad: &'a GpuBuffer,
    /// ∂L/∂E per particle, accumulated over substeps.
    pub youngs_grad: &'a GpuBuffer,
}

impl<'a> P2gAdjointBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 10] {
        [
            self.uniforms,
            self.state,
            self.state_next,
            self.youngs,
            self.anchored,
            self.state_grad_next,
            self.grid_grad,
            self.grid_velocity,
            self.state_grad,
            self.youngs_grad,
        ]
    }
}

/// The `mpm/p2g_adjoint` kernel (GPUs; CPU adapters run
/// [`super::p2g_adjoint_cells`]).
pub struct P2gAdjoint {
    kernel: ComputeKernel,
}

impl P2gAdjoint {
    /// Compiles the kernel.
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
                    StorageRead,
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

    /// Records one `main` dispatch over `count` particles.
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        count: u32,
    ) {
        self.kernel.dispatch_threads(encoder, bind_group, count);
    }
}
