//! Backward projection kernel (shaders/splat/project_backward.wgsl): one
//! thread per splat, from the 2D gradients of the blend to the parameters
//! (means, raw quaternions, log-scales, opacity logits, SH coefficients).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one dispatch, named.
pub struct ProjectBackwardBuffers<'a> {
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
    /// 2D gradients from [`super::blend_backward::BlendBackward`].
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
pub struct ProjectBackward {
    kernel: ComputeKernel,
}

impl ProjectBackward {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        let mut bindings = vec![Uniform];
        bindings.extend([StorageRead; 7]);
        bindings.extend([StorageReadWrite; 5]);
        Ok(Self {
            kernel: ComputeKernel::new(ctx, "splat/project_backward", "main", &bindings)?,
        })
    }

    /// Records the backward projection of `count` splats.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &ProjectBackwardBuffers,
        count: u32,
    ) {
        let bg = self.kernel.bind(
            ctx,
            &[
                b.uniforms,
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
