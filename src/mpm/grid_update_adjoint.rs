//! Adjoint of the grid update (shaders/mpm/grid_update_adjoint.wgsl): ∂L/∂v_i → (∂L/∂mv_i, ∂L/∂m_i), including the grid-mass path, through the colliders' contact rules, adding their ∂L/∂μ.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/grid_update_adjoint` dispatch, named.
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
    /// Collider records ([`crate::mpm_rules::collider::collider_records`]).
    pub colliders: &'a GpuBuffer,
    /// ∂L/∂μ per collider (f32), added to.
    pub collider_grad: &'a GpuBuffer,
}

impl<'a> GridUpdateAdjointBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 8] {
        named_buffers![
            self.uniforms => "params",
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
    /// Entry point `main` of shaders/mpm/grid_update_adjoint.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/grid_update_adjoint",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("node_box", 1),
            Binding::read("grid", 2),
            Binding::read("grid_anchored", 3),
            Binding::read_write("grid_velocity_grad", 4),
            Binding::read_write("grid_grad", 5),
            Binding::read("colliders", 6),
            Binding::read_write("collider_grad", 7),
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
    pub fn bind(&self, ctx: &GpuContext, b: &GridUpdateAdjointBuffers) -> wgpu::BindGroup {
        self.kernel.bind(ctx, &b.by_name())
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
