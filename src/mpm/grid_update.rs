//! Grid update: momentum to velocity, gravity, damping, anchored nodes, colliders and walls (shaders/mpm/grid_update.wgsl, src/mpm/config.rs and src/mpm/collider.rs rules).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `mpm/grid_update` dispatch, named, in binding order.
pub struct GridUpdateBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box `[origin xyz, dims xyz, count, 0]` from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Grid (m, mv) per node from P2G.
    pub grid: &'a GpuBuffer,
    /// Anchored flag per node.
    pub grid_anchored: &'a GpuBuffer,
    /// Output: velocity per node (4 f32, the 4th unused).
    pub grid_velocity: &'a GpuBuffer,
    /// Collider records ([`super::collider::collider_records`]).
    pub colliders: &'a GpuBuffer,
}

impl<'a> GridUpdateBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 6] {
        [
            self.uniforms,
            self.node_box,
            self.grid,
            self.grid_anchored,
            self.grid_velocity,
            self.colliders,
        ]
    }
}

/// The `mpm/grid_update` kernel.
pub struct GridUpdate {
    kernel: ComputeKernel,
}

impl GridUpdate {
    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "mpm/grid_update",
                "main",
                &[
                    Uniform,
                    StorageRead,
                    StorageRead,
                    StorageRead,
                    StorageReadWrite,
                    StorageRead,
                ],
            )?,
        })
    }

    /// Bind group for `b` (the simulator caches it per set of bound buffers:
    /// [`super::bind_group_cache`]).
    pub fn bind(&self, ctx: &GpuContext, b: &GridUpdateBuffers) -> wgpu::BindGroup {
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
