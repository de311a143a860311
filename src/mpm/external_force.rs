//! External force of impulses: a per-particle scatter of `w_ip·m_p·Δv_p`
//! into the grid momentum between P2G and the grid update
//! (shaders/mpm/external_force.wgsl; why a kernel of its own:
//! [`super::forcing`]).

use bytemuck::{Pod, Zeroable};

use crate::gpu::binding_table::named_buffers;
use crate::gpu::wgsl_layout::wgsl_mirror;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Most impulses one run holds: the bits of a particle's `u32` mask
/// (`MAX_IMPULSES` in the shader).
pub const MAX_IMPULSES: usize = 32;

/// `ImpulseTable` of the shader: each impulse's velocity change this
/// substep (normalised units / s, the 4th float unused).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ImpulseTable {
    /// Per impulse `[dvx, dvy, dvz, 0]`.
    pub dv: [[f32; 4]; MAX_IMPULSES],
}

wgsl_mirror!(ImpulseTable => "ImpulseTable" in ["mpm/external_force"] {
    dv,
});

/// Buffers of one `mpm/external_force` dispatch, named.
pub struct ExternalForceBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// This substep's [`ImpulseTable`].
    pub table: &'a GpuBuffer,
    /// Particle state at substep n (its x places the stencil, as in P2G).
    pub state: &'a GpuBuffer,
    /// Per particle: bit k set when impulse k holds it.
    pub members: &'a GpuBuffer,
    /// Grid (m, mv) per node after P2G; its momentum is added to.
    pub grid: &'a GpuBuffer,
}

impl<'a> ExternalForceBuffers<'a> {
    /// The buffers by name (the bind group and its cache key).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 5] {
        named_buffers![
            self.uniforms => "params",
            self.table,
            self.state,
            self.members,
            self.grid,
        ]
    }
}

/// The `mpm/external_force` kernel.
pub struct ExternalForce {
    kernel: ComputeKernel,
}

impl ExternalForce {
    /// Entry point `main` of shaders/mpm/external_force.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/external_force",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::uniform("table", 1),
            Binding::read("state", 2),
            Binding::read("members", 3),
            Binding::read_write("grid", 4),
        ],
    };

    /// Compiles the kernel for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Bind group for `b`.
    pub fn bind(&self, ctx: &GpuContext, b: &ExternalForceBuffers) -> wgpu::BindGroup {
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
