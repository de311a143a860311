//! Zeroes the active box's nodes before a scatter
//! (shaders/mpm/grid_clear.wgsl): the grid's (m, mv) and anchored flags
//! before P2G in one dispatch, ∂L/∂(grid velocity) before G2P*. Cheaper
//! than clearing whole grid buffers when the object is small, and one
//! dispatch fewer per substep than clearing each buffer on its own (each
//! costs ~0.15 ms of CPU on lavapipe).

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Buffers of one `clear_grid` dispatch, in binding order.
pub struct GridClearBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Grid (m, mv): four words per node, zeroed.
    pub mass_momentum: &'a GpuBuffer,
    /// Anchored flags: one word per node, zeroed.
    pub anchored: &'a GpuBuffer,
}

impl<'a> GridClearBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 4] {
        [
            self.uniforms,
            self.node_box,
            self.mass_momentum,
            self.anchored,
        ]
    }
}

/// Buffers of one `clear_nodes` dispatch, in binding order.
pub struct NodeClearBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Four words per node, zeroed (∂L/∂(grid velocity)).
    pub nodes: &'a GpuBuffer,
}

impl<'a> NodeClearBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 3] {
        [self.uniforms, self.node_box, self.nodes]
    }
}

/// The two entry points of `mpm/grid_clear`.
pub struct GridClear {
    grid: ComputeKernel,
    nodes: ComputeKernel,
}

impl GridClear {
    /// Compiles both entry points.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            grid: ComputeKernel::new(
                ctx,
                "mpm/grid_clear",
                "clear_grid",
                &[Uniform, StorageRead, StorageReadWrite, StorageReadWrite],
            )?,
            nodes: ComputeKernel::new(
                ctx,
                "mpm/grid_clear",
                "clear_nodes",
                &[Uniform, StorageRead, StorageReadWrite],
            )?,
        })
    }

    /// Bind group of a `clear_grid` dispatch.
    pub fn bind_grid(&self, ctx: &GpuContext, b: &GridClearBuffers) -> wgpu::BindGroup {
        self.grid.bind(ctx, &b.in_binding_order())
    }

    /// Bind group of a `clear_nodes` dispatch.
    pub fn bind_nodes(&self, ctx: &GpuContext, b: &NodeClearBuffers) -> wgpu::BindGroup {
        self.nodes.bind(ctx, &b.in_binding_order())
    }

    /// Records `clear_grid` over the active box (indirect arguments from
    /// [`super::grid_box`]).
    pub fn dispatch_grid(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        dispatch_args: &GpuBuffer,
    ) {
        self.grid
            .dispatch_indirect(encoder, bind_group, dispatch_args, 0);
    }

    /// Records `clear_nodes` over the active box.
    pub fn dispatch_nodes(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        bind_group: &wgpu::BindGroup,
        dispatch_args: &GpuBuffer,
    ) {
        self.nodes
            .dispatch_indirect(encoder, bind_group, dispatch_args, 0);
    }
}
