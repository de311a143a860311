//! Forward projection kernel (shaders/splat/project.wgsl): one thread per
//! splat; EWA 2D covariance, conic, opacity, SH colour, tile rectangle and
//! depth sort key; culls splats behind the near plane or with non-finite
//! inputs or outputs.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Bytes of one `ProjectedSplat` (three `vec4<f32>`).
pub const PROJECTED_SPLAT_BYTES: u64 = 48;

/// Buffers of one dispatch, named.
pub struct ProjectBuffers<'a> {
    /// [`super::uniforms::RasterUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Inputs, layouts of [`super::SplatBuffers`].
    pub means: &'a GpuBuffer,
    /// Raw quaternions.
    pub rotations: &'a GpuBuffer,
    /// Log-scales.
    pub log_scales: &'a GpuBuffer,
    /// Opacity logits.
    pub opacity_logits: &'a GpuBuffer,
    /// SH coefficients.
    pub sh: &'a GpuBuffer,
    /// Output `ProjectedSplat` per splat.
    pub projected: &'a GpuBuffer,
    /// Output `vec4<u32>` tile rectangle [min.xy, max.zw) per splat (empty when culled).
    pub tile_rects: &'a GpuBuffer,
    /// Output u32 depth key per splat (f32 bits of z; 0xffffffff when culled).
    pub depth_keys: &'a GpuBuffer,
    /// Output u32 identity order (the depth sort's values).
    pub depth_order: &'a GpuBuffer,
}

/// The projection kernel.
pub struct Project {
    kernel: ComputeKernel,
}

impl Project {
    /// Entry point `main` of shaders/splat/project.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "splat/project",
        entry: "main",
        bindings: &[
            Binding::uniform("u", 0),
            Binding::read("means", 1),
            Binding::read("rotations", 2),
            Binding::read("log_scales", 3),
            Binding::read("opacity_logits", 4),
            Binding::read("sh", 5),
            Binding::read_write("projected", 6),
            Binding::read_write("tile_rects", 7),
            Binding::read_write("depth_keys", 8),
            Binding::read_write("depth_order", 9),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the projection of `count` splats.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &ProjectBuffers,
        count: u32,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms => "u",
                b.means,
                b.rotations,
                b.log_scales,
                b.opacity_logits,
                b.sh,
                b.projected,
                b.tile_rects,
                b.depth_keys,
                b.depth_order,
            ],
        );
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}
