//! Final level of the loss reductions (shaders/loss/reduce_terms.wgsl): one
//! workgroup sums the partial sums in a fixed order (deterministic, no
//! atomics) and writes one slot of a [`super::LossTermsBuffer`].

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Buffers of one dispatch, named.
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
    /// Entry point `main` of shaders/loss/reduce_terms.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "loss/reduce_terms",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("partials", 1),
            Binding::read_write("terms", 2),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the reduction (one workgroup).
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &ReduceTermsBuffers,
    ) {
        let bind_group = self
            .kernel
            .bind(ctx, &named_buffers![b.uniforms, b.partials, b.terms,]);
        self.kernel.dispatch(encoder, &bind_group, [1, 1, 1]);
    }
}
