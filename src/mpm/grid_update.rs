//! Grid update: momentum to velocity, gravity, damping, anchored nodes, colliders and walls (shaders/mpm/grid_update.wgsl, src/mpm_rules/config.rs and src/mpm_rules/collider.rs rules).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/grid_update` dispatch, named.
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
    /// Collider records ([`crate::mpm_rules::collider::collider_records`]).
    pub colliders: &'a GpuBuffer,
}

impl<'a> GridUpdateBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 6] {
        named_buffers![
            self.uniforms => "params",
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
    /// Entry point `main` of shaders/mpm/grid_update.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/grid_update",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("node_box", 1),
            Binding::read("grid", 2),
            Binding::read("grid_anchored", 3),
            Binding::read_write("grid_velocity", 4),
            Binding::read("colliders", 5),
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
    pub fn bind(&self, ctx: &GpuContext, b: &GridUpdateBuffers) -> wgpu::BindGroup {
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
