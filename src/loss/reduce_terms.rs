//! Final level of the loss reductions (shaders/loss/reduce_terms.wgsl): one
//! workgroup sums the partial sums in a fixed order (deterministic, no
//! atomics) and writes one slot of a [`super::LossTermsBuffer`].

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one dispatch, named, in binding order.
pub struct ReduceTermsBuffers<'a> {
    /// [`super::uniforms::ReduceUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// vec4 partial sums.
    pub partials: &'a GpuBuffer,
    /// Output: vec4 per slot.
    pub terms: &'a GpuBuffer,
}

/// The `loss/reduce_terms` kernel.
pub struct ReduceTerms {
    kernel: ComputeKernel,
}

impl ReduceTerms {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "loss/reduce_terms",
                "main",
                &[Uniform, StorageRead, StorageReadWrite],
            )?,
        })
    }

    /// Records the reduction (one workgroup).
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &ReduceTermsBuffers,
    ) {
        let bind_group = self.kernel.bind(ctx, &[b.uniforms, b.partials, b.terms]);
        self.kernel.dispatch(encoder, &bind_group, [1, 1, 1]);
    }
}
