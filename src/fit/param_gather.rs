//! `Mᵀ` of a [`ParamMap`] on the GPU (shaders/fit/param_gather.wgsl): per
//! parameter, `out_i = init_i + Σ_e w_e · src[s_e] · scale[d_e]`, so the
//! gradients of a fit stay on the GPU (docs/design.md § Loss, parameters, fit):
//! only the small per-parameter result is read back.
//!
//! The rows (one per parameter, entries in the map's order) are a CSR list
//! built once per map; one thread per parameter sums its row in a fixed
//! order, without atomics, so the result is deterministic. A global
//! parameter's thread sums every driver: at a few thousand drivers that is
//! microseconds.

use bytemuck::{Pod, Zeroable};

use super::params::ParamMap;
use crate::gpu::binding_table::named_buffers;
use crate::gpu::wgsl_layout::wgsl_mirror;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// `Uniforms` of shaders/fit/param_gather.wgsl: parameters, and whether
/// entries are multiplied by `scale`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct GatherUniforms {
    param_count: u32,
    use_scale: u32,
    _pad: [u32; 2],
}

wgsl_mirror!(GatherUniforms => "Uniforms" in ["fit/param_gather"] {
    param_count,
    use_scale,
    _pad,
});

/// `Entry` of shaders/fit/param_gather.wgsl: one term `weight · src[src] ·
/// scale[scale]` of a parameter's row.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct GatherEntry {
    src: u32,
    scale: u32,
    weight: f32,
    _pad: u32,
}

wgsl_mirror!(GatherEntry => "Entry" in ["fit/param_gather"] {
    src,
    scale,
    weight,
    _pad,
});

/// Where a map's per-driver gradient lives in its source buffer: component
/// `a` of driver `d` is `src[d·stride + offset + a]`, multiplied by
/// `factor` (a unit change: `ln 10`, `1/side`).
#[derive(Clone, Copy, Debug)]
pub struct SourceLayout {
    /// Floats per driver in the source buffer.
    pub stride: u32,
    /// Offset of component 0.
    pub offset: u32,
    /// Constant factor on every entry.
    pub factor: f64,
    /// Multiply each entry by `scale[d]` (a per-driver buffer).
    pub scaled: bool,
}

/// A [`ParamMap`]'s transpose uploaded for [`ParamGather::dispatch`].
pub struct GatherPlan {
    uniforms: GpuBuffer,
    offsets: GpuBuffer,
    entries: GpuBuffer,
    params: u32,
}

impl GatherPlan {
    /// Builds the CSR rows of `map` for a source of layout `layout`.
    pub fn new(
        ctx: &GpuContext,
        label: &str,
        map: &ParamMap,
        layout: SourceLayout,
    ) -> Result<Self, GpuError> {
        Self::joined(ctx, label, &[(map, layout)])
    }

    /// The CSR rows of the sum of the transposes of `parts`, maps of the
    /// same parameters each reading its own part of the source (the
    /// initial velocity and its gradient, [`ParamMap::velocity_gradient`],
    /// both in the state gradient): one dispatch gathers both. Each row
    /// lists the first part's entries, then the next part's.
    pub fn joined(
        ctx: &GpuContext,
        label: &str,
        parts: &[(&ParamMap, SourceLayout)],
    ) -> Result<Self, GpuError> {
        let params = parts.first().map_or(0, |(m, _)| m.params);
        assert!(
            parts.iter().all(|(m, _)| m.params == params),
            "joined maps of different parameters"
        );
        let mut counts = vec![0u32; params + 1];
        for (map, _) in parts {
            for e in &map.entries {
                counts[e.param as usize + 1] += 1;
            }
        }
        for i in 0..params {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        let total: usize = parts.iter().map(|(m, _)| m.entries.len()).sum();
        let mut entries = vec![GatherEntry::zeroed(); total.max(1)];
        for (map, layout) in parts {
            for e in &map.entries {
                let slot = &mut fill[e.param as usize];
                entries[*slot as usize] = GatherEntry {
                    src: e.driver * layout.stride + layout.offset + e.component,
                    scale: e.driver,
                    weight: (e.weight * layout.factor) as f32,
                    _pad: 0,
                };
                *slot += 1;
            }
        }
        let scaled = parts.iter().any(|(_, l)| l.scaled);
        assert!(
            parts.iter().all(|(_, l)| l.scaled == scaled),
            "joined maps scaled differently"
        );
        Ok(Self {
            uniforms: ctx.uniform_buffer(
                &format!("{label} gather uniforms"),
                &GatherUniforms {
                    param_count: params as u32,
                    use_scale: u32::from(scaled),
                    _pad: [0; 2],
                },
            )?,
            offsets: ctx.storage_from_slice(&format!("{label} gather offsets"), &counts)?,
            entries: ctx.storage_from_slice(&format!("{label} gather entries"), &entries)?,
            params: params as u32,
        })
    }

    /// Number of parameters (outputs).
    #[cfg(feature = "reference")]
    pub fn params(&self) -> u32 {
        self.params
    }
}

/// Buffers of one dispatch.
pub struct GatherBuffers<'a> {
    /// Per-driver gradients.
    pub src: &'a GpuBuffer,
    /// Per-driver scale (ignored unless the plan is scaled; any buffer).
    pub scale: &'a GpuBuffer,
    /// Added to every output (one f32 per parameter).
    pub init: &'a GpuBuffer,
    /// One f32 per parameter, written in full.
    pub out: &'a GpuBuffer,
}

/// The `fit/param_gather` kernel.
pub struct ParamGather {
    kernel: ComputeKernel,
}

impl ParamGather {
    /// Entry point `main` of shaders/fit/param_gather.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "fit/param_gather",
        entry: "main",
        bindings: &[
            Binding::uniform("uniforms", 0),
            Binding::read("offsets", 1),
            Binding::read("entries", 2),
            Binding::read("src", 3),
            Binding::read("scale", 4),
            Binding::read("init", 5),
            Binding::read_write("out", 6),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records `out = init + Mᵀ·src` for `plan`.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        plan: &GatherPlan,
        b: &GatherBuffers,
    ) {
        let bind_group = self.kernel.bind(
            ctx,
            &named_buffers![
                &plan.uniforms,
                &plan.offsets,
                &plan.entries,
                b.src,
                b.scale,
                b.init,
                b.out,
            ],
        );
        self.kernel
            .dispatch_threads(encoder, &bind_group, plan.params.max(1));
    }
}
