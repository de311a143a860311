//! FLIP's carried mass and momentum: every free particle scatters `w·m_p` and `w·m_p (v_p + C_p (x_i − x_p))` to `(m̂_i, mv̂_i)`, after P2G under the FLIP transfer (shaders/mpm/flip_scatter.wgsl, docs/design.md § MPM, "Transfer").

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{
    Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec, NamedBuffer,
};

/// Buffers of one `mpm/flip_scatter` dispatch, named.
pub struct FlipScatterBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Particle state at substep n.
    pub state: &'a GpuBuffer,
    /// Anchored flag per particle (anchored ones carry nothing).
    pub anchored: &'a GpuBuffer,
    /// Output: `(m̂, mv̂)` per node (atomic f32, 4 words), zeroed before.
    pub carried: &'a GpuBuffer,
}

impl<'a> FlipScatterBuffers<'a> {
    /// The buffers by name: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn by_name(&self) -> [NamedBuffer<'a>; 4] {
        named_buffers![
            self.uniforms => "params",
            self.state,
            self.anchored,
            self.carried,
        ]
    }
}

/// The `mpm/flip_scatter` kernel.
pub struct FlipScatter {
    kernel: ComputeKernel,
}

impl FlipScatter {
    /// Entry point `main` of shaders/mpm/flip_scatter.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "mpm/flip_scatter",
        entry: "main",
        bindings: &[
            Binding::uniform("params", 0),
            Binding::read("state", 1),
            Binding::read("anchored", 2),
            Binding::read_write("carried", 3),
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
    pub fn bind(&self, ctx: &GpuContext, b: &FlipScatterBuffers) -> wgpu::BindGroup {
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
