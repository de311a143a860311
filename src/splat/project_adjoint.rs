//! Backward projection kernel (shaders/splat/project_adjoint.wgsl): one
//! thread per splat, from the 2D gradients of the blend to the parameters
//! (means, raw quaternions, log-scales, opacity logits, SH coefficients).

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
pub struct ProjectAdjointBuffers<'a> {
    /// [`super::uniforms::RasterUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Splat means.
    pub means: &'a GpuBuffer,
    /// Raw quaternions.
    pub rotations: &'a GpuBuffer,
    /// Log-scales.
    pub log_scales: &'a GpuBuffer,
    /// Opacity logits.
    pub opacity_logits: &'a GpuBuffer,
    /// SH coefficients.
    pub sh: &'a GpuBuffer,
    /// Tile rectangles from the forward (empty = culled → zero gradient).
    pub tile_rects: &'a GpuBuffer,
    /// 2D gradients from [`super::blend_adjoint::BlendAdjoint`].
    pub grad_2d: &'a GpuBuffer,
    /// Output gradients (overwritten), layouts of [`super::SplatBuffers`].
    pub grad_means: &'a GpuBuffer,
    /// dL/d raw quaternions.
    pub grad_rotations: &'a GpuBuffer,
    /// dL/d log-scales.
    pub grad_log_scales: &'a GpuBuffer,
    /// dL/d opacity logits.
    pub grad_opacity_logits: &'a GpuBuffer,
    /// dL/d SH coefficients.
    pub grad_sh: &'a GpuBuffer,
}

/// The backward projection kernel.
pub struct ProjectAdjoint {
    kernel: ComputeKernel,
}

impl ProjectAdjoint {
    /// Entry point `main` of shaders/splat/project_adjoint.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "splat/project_adjoint",
        entry: "main",
        bindings: &[
            Binding::uniform("u", 0),
            Binding::read("means", 1),
            Binding::read("rotations", 2),
            Binding::read("log_scales", 3),
            Binding::read("opacity_logits", 4),
            Binding::read("sh", 5),
            Binding::read("tile_rects", 6),
            Binding::read("grad_2d", 7),
            Binding::read_write("grad_means", 8),
            Binding::read_write("grad_rotations", 9),
            Binding::read_write("grad_log_scales", 10),
            Binding::read_write("grad_opacity_logits", 11),
            Binding::read_write("grad_sh", 12),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the backward projection of `count` splats.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &ProjectAdjointBuffers,
        count: u32,
    ) {
        let bg = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms => "u",
                b.means,
                b.rotations,
                b.log_scales,
                b.opacity_logits,
                b.sh,
                b.tile_rects,
                b.grad_2d,
                b.grad_means,
                b.grad_rotations,
                b.grad_log_scales,
                b.grad_opacity_logits,
                b.grad_sh,
            ],
        );
        self.kernel.dispatch_threads(encoder, &bg, count);
    }
}
