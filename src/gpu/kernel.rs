//! One compute kernel = one WGSL entry point + its bind-group layout + its
//! workgroup size (read from the shader itself, so Rust and WGSL can never
//! disagree). Typed wrappers (one Rust type per kernel, e.g.
//! [`crate::mpm::p2g::P2g`]) own a `ComputeKernel` and expose one
//! `dispatch` taking a struct of named buffers, so call sites never spell
//! binding indices: the wrapper declares its bindings once, in a
//! [`KernelSpec`] table, and binds its buffers by name through it.

use super::binding_table::{binding_of, Binding, KernelSpec, NamedBuffer};
use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::error::GpuError;
use super::shader::{parse_and_validate, workgroup_size};

/// The runtime checks wgpu adds to physfit's shaders: all of them (buffer
/// bounds checks included) except `force_loop_bounding`.
///
/// Why: wgpu's loop bounding adds a hidden 64-bit counter and an exit test
/// to every WGSL loop so that a driver cannot assume a loop terminates. The
/// counter also stops LLVM from fully unrolling the constant-bound loops
/// over the 27 stencil nodes and the particle records, so the per-node
/// register arrays of the MPM kernels spill to memory. On lavapipe, dropping
/// it cut the CPU time of a case-(a) MPM frame from ~0.6 s to ~0.35 s
/// (docs/benchmarks.md).
///
/// The contract (wgpu's: no shader may contain an infinite loop) holds for
/// every shader under shaders/: `for` loops count up to bounds that cannot
/// wrap (constants, uniforms, or data-dependent counts clamped so that a
/// corrupt range walks nothing), the cell-list walks of the binned MPM
/// scatters stop after `particle_count` links even on a corrupt list, and
/// the compare-and-swap loops of the `#atomic_f32_ops` emulation and the
/// rasterizer's workgroup reductions are lock-free (an exchange fails only
/// because another lane's succeeded, or spuriously for the weak form). A
/// new shader must keep it.
pub fn physfit_runtime_checks() -> wgpu::ShaderRuntimeChecks {
    let mut checks = wgpu::ShaderRuntimeChecks::checked();
    // SAFETY: see above; every loop in physfit's shaders terminates.
    checks.force_loop_bounding = false;
    checks
}

/// A compiled compute pipeline with its layout and workgroup size.
#[derive(Debug)]
pub struct ComputeKernel {
    label: String,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    bindings: &'static [Binding],
    workgroup_size: [u32; 3],
    max_workgroups_per_dim: u32,
}

impl ComputeKernel {
    /// Builds the kernel `spec.entry` of shader `spec.shader` (name under
    /// shaders/, e.g. `"mpm/p2g"`), whose group 0 is laid out by
    /// `spec.bindings`.
    pub fn new(ctx: &GpuContext, spec: &KernelSpec) -> Result<Self, GpuError> {
        let KernelSpec {
            shader,
            entry,
            bindings,
        } = *spec;
        let label = format!("{shader}::{entry}");
        let (source, module) = parse_and_validate(shader, &ctx.shader_options)?;
        let workgroup_size = workgroup_size(&module, entry).ok_or_else(|| GpuError::Shader {
            name: shader.to_string(),
            message: format!("no entry point '{entry}'"),
        })?;
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        // SAFETY: `physfit_runtime_checks` only drops the loop bounding,
        // whose contract (no infinite loops) every physfit shader keeps; see
        // its doc comment.
        let shader_module = unsafe {
            ctx.device.create_shader_module_trusted(
                wgpu::ShaderModuleDescriptor {
                    label: Some(&label),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                },
                physfit_runtime_checks(),
            )
        };
        let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
            .iter()
            .map(|b| wgpu::BindGroupLayoutEntry {
                binding: b.binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: b.kind.buffer_binding_type(),
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = ctx
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(&label),
                entries: &entries,
            });
        let pipeline_layout = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(&label),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&label),
                layout: Some(&pipeline_layout),
                module: &shader_module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Validation {
                context: format!("building kernel '{label}'"),
                message: e.to_string(),
            });
        }
        Ok(Self {
            label,
            pipeline,
            layout,
            bindings,
            workgroup_size,
            max_workgroups_per_dim: ctx.limits.max_compute_workgroups_per_dimension,
        })
    }

    /// The workgroup size declared in WGSL.
    pub fn workgroup_size(&self) -> [u32; 3] {
        self.workgroup_size
    }

    /// `shader::entry`, used as the label of everything this kernel creates.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Binds each of `buffers` to group 0 at the binding of its name in
    /// the kernel's table. Panics unless every row is bound exactly once:
    /// that is a bug in the typed wrapper, caught by its tests.
    pub fn bind(&self, ctx: &GpuContext, buffers: &[NamedBuffer]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .map(|(name, buffer)| wgpu::BindGroupEntry {
                binding: binding_of(self.bindings, name).unwrap_or_else(|| {
                    panic!("kernel {} has no binding named '{name}'", self.label)
                }),
                resource: buffer.binding(),
            })
            .collect();
        for row in self.bindings {
            let bound = buffers.iter().filter(|(name, _)| *name == row.name).count();
            assert_eq!(
                bound, 1,
                "kernel {} binds '{}' {bound} times, not once",
                self.label, row.name
            );
        }
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&self.label),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// Records a dispatch of exactly `workgroups` workgroups.
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        workgroups: [u32; 3],
    ) {
        if workgroups.contains(&0) {
            return;
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(&self.label),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
    }

    /// Workgroup counts covering `threads` 1-D invocations: a 1-D grid, folded
    /// into 2-D past the per-dimension limit. Shaders recover the index with
    /// `flat_thread_index` from `common/dispatch.wgsl`.
    pub fn workgroups_for(&self, threads: u32) -> [u32; 3] {
        let groups = threads.div_ceil(self.workgroup_size[0]);
        if groups <= self.max_workgroups_per_dim {
            [groups, 1, 1]
        } else {
            let x = self.max_workgroups_per_dim;
            [x, groups.div_ceil(x), 1]
        }
    }

    /// Records a 1-D dispatch covering `threads` invocations.
    pub fn dispatch_threads(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        threads: u32,
    ) {
        self.dispatch(encoder, bind_group, self.workgroups_for(threads));
    }

    /// Records a dispatch whose workgroup counts the GPU wrote into
    /// `indirect` at byte `offset` (three u32; each at most the
    /// per-dimension limit, which the writing kernel must respect).
    pub fn dispatch_indirect(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        indirect: &GpuBuffer,
        offset: u64,
    ) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(&self.label),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind_group, &[]);
        pass.dispatch_workgroups_indirect(indirect, offset);
    }
}
