//! Reverse mode of [`super::gaussian_motion`] per deformed Gaussian
//! (shaders/deform/gaussian_motion_adjoint.wgsl): from the rasterizer's
//! `∂L/∂means` and `∂L/∂(raw quaternion)`, each Gaussian's contribution to
//! `∂L/∂x_j` of each of its drivers, one slot per (Gaussian, driver place);
//! [`super::driver_gather`] sums them per driver (docs/design.md § Drivers and
//! the deformation of Gaussians, § Adjoint: the polar derivative).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct GaussianMotionAdjointBuffers<'a> {
    /// [`super::layout::DeformUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// The drivers' MPM state of the frame (the forward's input).
    pub state: &'a GpuBuffer,
    /// Rest position of each driver (`vec4<f32>`, w unused).
    pub rest_drivers: &'a GpuBuffer,
    /// One [`super::layout::GaussianRecord`] per deformed Gaussian.
    pub gaussians: &'a GpuBuffer,
    /// `∂L/∂means`, 3 f32 per splat ([`crate::splat::SplatGradients::means`]).
    pub grad_means: &'a GpuBuffer,
    /// `∂L/∂(raw quaternion)`, 4 f32 per splat
    /// ([`crate::splat::SplatGradients::rotations`]).
    pub grad_rotations: &'a GpuBuffer,
    /// Output: [`super::DRIVERS_PER_GAUSSIAN`] `vec4<f32>` per Gaussian.
    pub contributions: &'a GpuBuffer,
}

/// The `deform/gaussian_motion_adjoint` kernel.
pub struct GaussianMotionAdjoint {
    kernel: ComputeKernel,
}

impl GaussianMotionAdjoint {
    /// Entry point `main` of shaders/deform/gaussian_motion_adjoint.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "deform/gaussian_motion_adjoint",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("state", 1),
            Binding::read("rest_drivers", 2),
            Binding::read("gaussians", 3),
            Binding::read("grad_means", 4),
            Binding::read("grad_rotations", 5),
            Binding::read_write("contributions", 6),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the adjoint of `count` deformed Gaussians.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &GaussianMotionAdjointBuffers,
        count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms,
                b.state,
                b.rest_drivers,
                b.gaussians,
                b.grad_means,
                b.grad_rotations,
                b.contributions,
            ],
        );
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}
