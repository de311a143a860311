//! The forward deformation on the GPU (shaders/deform/gaussian_motion.wgsl):
//! each deformed Gaussian's centre and rotation follow the rigid motion of
//! its drivers, written into the splat buffers (docs/design.md § Drivers and the
//! deformation of Gaussians; equations in `crate::reference::deform`).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct GaussianMotionBuffers<'a> {
    /// [`super::layout::DeformUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// The drivers' MPM state (24 f32 per driver, [`crate::mpm::layout`]).
    pub state: &'a GpuBuffer,
    /// Rest position of each driver (`vec4<f32>`, w unused).
    pub rest_drivers: &'a GpuBuffer,
    /// One [`super::layout::GaussianRecord`] per deformed Gaussian.
    pub gaussians: &'a GpuBuffer,
    /// Splat centres, 3 f32 per splat ([`crate::splat::SplatBuffers::means`]).
    pub means: &'a GpuBuffer,
    /// Splat rotations, 4 f32 per splat
    /// ([`crate::splat::SplatBuffers::rotations`]).
    pub rotations: &'a GpuBuffer,
}

/// The `deform/gaussian_motion` kernel.
pub struct GaussianMotion {
    kernel: ComputeKernel,
}

impl GaussianMotion {
    /// Entry point `main` of shaders/deform/gaussian_motion.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "deform/gaussian_motion",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("state", 1),
            Binding::read("rest_drivers", 2),
            Binding::read("gaussians", 3),
            Binding::read_write("means", 4),
            Binding::read_write("rotations", 5),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the motion of `count` deformed Gaussians.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &GaussianMotionBuffers,
        count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms,
                b.state,
                b.rest_drivers,
                b.gaussians,
                b.means,
                b.rotations,
            ],
        );
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}
