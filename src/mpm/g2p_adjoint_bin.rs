//! Cell-binned adjoint of G2P, grid side, first half
//! (shaders/mpm/g2p_adjoint_bin.wgsl): each particle's ∂L/∂(grid
//! velocity) terms as a record (zero for anchored particles) and its
//! cell-list link, so that [`super::cell_scatter`] scatters one atomic per
//! node and component per cell (CPU adapters; [`super::p2g_bin`] explains
//! why) and [`super::p2g_adjoint`] (`main_cells`), the particle side of G2P* with
//! P2G*, then walks the same lists.

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/g2p_adjoint_bin` dispatch, named, in binding order.
pub struct G2pAdjointBinBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Anchored flag per particle.
    pub anchored: &'a GpuBuffer,
    /// ∂L/∂(state n+1), 24 f32 per particle.
    pub state_grad_next: &'a GpuBuffer,
    /// Output: [`super::p2g_bin::BINNED_STRIDE`] f32 per particle: x,
    /// gv'', 4/dx²·gC'' (row-major).
    pub binned: &'a GpuBuffer,
    /// List heads per base cell (p + 1, 0 = empty), all zero before the
    /// dispatch ([`super::p2g_adjoint`] (`main_cells`) resets each list it walks).
    pub cell_head: &'a GpuBuffer,
    /// Output: list links per particle.
    pub particle_next: &'a GpuBuffer,
}

impl<'a> G2pAdjointBinBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 7] {
        [
            self.uniforms,
            self.state,
            self.anchored,
            self.state_grad_next,
            self.binned,
            self.cell_head,
            self.particle_next,
        ]
    }
}

/// The `mpm/g2p_adjoint_bin` kernel.
pub struct G2pAdjointBin {
    kernel: ComputeKernel,
}

impl G2pAdjointBin {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/g2p_adjoint_bin",
                "main",
                &[
                    Uniform,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageReadWrite,
                    StorageReadWrite,
                    StorageReadWrite,
                ],
            )?,
        })
    }

    /// Bind group for `b`.
    pub fn bind(&self, ctx: &GpuContext, b: &G2pAdjointBinBuffers) -> wgpu::BindGroup {
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
