//! Second half of the two cell-binned scatters (shaders/mpm/cell_scatter.wgsl;
//! [`super::p2g_bin`] explains the binning): per (x, y) column of the
//! active box, walks its cells in z order, sums each cell's particles'
//! terms over a sliding 3 × 3 × 3 window of nodes and adds each node's
//! complete sum with one atomic per component. Entry point `p2g` adds the
//! grid's (m, mv) after [`super::p2g_bin`]; `g2p_adjoint` adds ∂L/∂(grid
//! velocity) after [`super::g2p_adjoint_bin`], leaving the lists to
//! [`super::p2g_adjoint`] (`main_cells`), which walks them again.

use crate::gpu::{BindingKind, ComputeKernel, GpuBuffer, GpuContext, GpuError};

/// Which scatter a [`CellScatter`] dispatch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellScatterKind {
    /// P2G: (m_i, mv_i) into the grid.
    P2g,
    /// The adjoint of G2P: ∂L/∂v_i into the grid-velocity gradient.
    G2pAdjoint,
}

/// Buffers of one `mpm/cell_scatter` dispatch, named, in binding order.
pub struct CellScatterBuffers<'a> {
    /// [`super::uniforms::MpmUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// Active box `[origin xyz, dims xyz, count, 0]` from [`super::grid_box`].
    pub node_box: &'a GpuBuffer,
    /// Per-particle records from the binning.
    pub binned: &'a GpuBuffer,
    /// List heads per base cell from the binning; `p2g` resets them to 0
    /// as it walks them, `g2p_adjoint` leaves them to
    /// [`super::p2g_adjoint`] (`main_cells`), which does (all zero between
    /// substeps).
    pub cell_head: &'a GpuBuffer,
    /// List links per particle from the binning.
    pub particle_next: &'a GpuBuffer,
    /// The nodes added to (atomic f32, 4 words per node): the grid (m, mv)
    /// for [`CellScatterKind::P2g`], ∂L/∂(grid velocity) for
    /// [`CellScatterKind::G2pAdjoint`]; zero over the box before.
    pub nodes: &'a GpuBuffer,
}

impl<'a> CellScatterBuffers<'a> {
    /// The buffers in binding order: what the bind group binds, and the
    /// simulator's bind-group cache key ([`super::bind_group_cache`]).
    pub fn in_binding_order(&self) -> [&'a GpuBuffer; 6] {
        [
            self.uniforms,
            self.node_box,
            self.binned,
            self.cell_head,
            self.particle_next,
            self.nodes,
        ]
    }
}

/// The two entry points of `mpm/cell_scatter`.
pub struct CellScatter {
    p2g: ComputeKernel,
    g2p_adjoint: ComputeKernel,
}

impl CellScatter {
    /// Compiles both entry points for this context's atomic mode.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        let bindings = [
            Uniform,
            StorageRead,
            StorageRead,
            StorageReadWrite,
            StorageRead,
            StorageReadWrite,
        ];
        Ok(Self {
            p2g: ComputeKernel::new(ctx, "mpm/cell_scatter", "p2g", &bindings)?,
            g2p_adjoint: ComputeKernel::new(ctx, "mpm/cell_scatter", "g2p_adjoint", &bindings)?,
        })
    }

    fn kernel(&self, kind: CellScatterKind) -> &ComputeKernel {
        match kind {
            CellScatterKind::P2g => &self.p2g,
            CellScatterKind::G2pAdjoint => &self.g2p_adjoint,
        }
    }

    /// Bind group of a `kind` dispatch on `b`.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        kind: CellScatterKind,
        b: &CellScatterBuffers,
    ) -> wgpu::BindGroup {
        self.kernel(kind).bind(ctx, &b.in_binding_order())
    }

    /// Records one `kind` dispatch over the (x, y) columns of the active
    /// box (`dispatch_args` from [`super::grid_box`]).
    pub fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        kind: CellScatterKind,
        bind_group: &wgpu::BindGroup,
        dispatch_args: &GpuBuffer,
    ) {
        self.kernel(kind).dispatch_indirect(
            encoder,
            bind_group,
            dispatch_args,
            super::grid_box::COLUMN_DISPATCH_OFFSET,
        );
    }
}
