//! Adjoint of the grid update (shaders/mpm/grid_update_adjoint.wgsl): ∂L/∂v_i → (∂L/∂mv_i, ∂L/∂m_i), including the grid-mass path, through the colliders' contact rules, adding their ∂L/∂μ.

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/grid_update_adjoint` dispatch, named, in binding order.
pub struct GridUpdateAdjointBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box `[origin xyz, dims xyz, count, 0]` from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Grid (m, mv) of substep n (recomputed forward).
    pub grid: &'a GpuBuffer,
    /// Anchored flag per node.
    pub grid_anchored: &'a GpuBuffer,
    /// ∂L/∂(grid velocity) from G2P*; zeroed at every box node once read.
    pub grid_velocity_grad: &'a GpuBuffer,
    /// Output: (∂L/∂mv, ∂L/∂m) per node.
    pub grid_grad: &'a GpuBuffer,
    /// Collider records ([`super::collider::collider_records`]).
    pub colliders: &'a GpuBuffer,
    /// ∂L/∂μ per collider (f32), added to.
    pub collider_grad: &'a GpuBuffer,
}

impl<'a> GridUpdateAdjointBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 8] {
        [
            self.uniforms,
            self.node_box,
            self.grid,
            self.grid_anchored,
            self.grid_velocity_grad,
            self.grid_grad,
            self.colliders,
            self.collider_grad,
        ]
    }
}

/// The `mpm/grid_update_adjoint` kernel.
pub struct GridUpdateAdjoint {
    kernel: ComputeKernel,
}

impl GridUpdateAdjoint {
    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/grid_update_adjoint",
                "main",
                &[
                    Uniform,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageReadWrite,
                    StorageReadWrite,
                    StorageRead,
                    StorageReadWrite,
                ],
            )?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &GridUpdateAdjointBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.in_binding_order())
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
