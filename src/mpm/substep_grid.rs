//! The grid of one substep: what P2G and the grid update produce and the
//! adjoint kernels read. The simulator owns one; a backward pass keeps one
//! per substep of a segment so that the substep adjoints need not recompute
//! them ([`super::backward_work`]).

use super::error::MpmError;
use super::p2g_bin::CellLists;
use crate::gpu::{GpuBuffer, GpuContext};

/// Grid mass/momentum, anchored-node flags, grid velocity, and with binned
/// scatters the cell lists of P2G's binning, plus the substep's active box
/// and its indirect dispatch arguments.
pub(crate) struct SubstepGrid {
    pub(crate) mass_momentum: GpuBuffer,
    pub(crate) anchored: GpuBuffer,
    pub(crate) velocity: GpuBuffer,
    pub(crate) node_box: GpuBuffer,
    pub(crate) dispatch_args: GpuBuffer,
    /// Under the FLIP transfer: the free particles' carried `(m̂, mv̂)`
    /// per node ([`super::flip_scatter`]).
    pub(crate) carried: Option<GpuBuffer>,
    /// With binned scatters: the cell lists of P2G's binning (a simulator's
    /// scatter variant is fixed at construction, so a grid has them exactly
    /// when its simulator's scatters are binned).
    lists: Option<GridCellLists>,
}

/// The cell lists a [`SubstepGrid`] holds with binned scatters
/// ([`CellLists`]).
struct GridCellLists {
    /// Per node (as base cell): the head of its particle list.
    cell_head: GpuBuffer,
    /// Per particle: the link of its cell's list.
    particle_next: GpuBuffer,
}

impl SubstepGrid {
    /// Bytes per node of the three per-node buffers (4 + 1 + 4 words).
    const BYTES_PER_NODE: u64 = 9 * 4;
    /// Bytes per node of the FLIP transfer's carried `(m̂, mv̂)`.
    const CARRIED_BYTES_PER_NODE: u64 = 4 * 4;
    /// Bytes per node and per particle of the cell lists (one word each).
    const LIST_BYTES_PER_NODE: u64 = 4;
    const LIST_BYTES_PER_PARTICLE: u64 = 4;

    /// Bytes of one grid of `nodes` nodes for `particles` particles, with
    /// cell lists if `binned` and the carried momentum if `flip`.
    pub(crate) fn bytes(nodes: usize, particles: usize, binned: bool, flip: bool) -> u64 {
        let carried = match flip {
            true => nodes as u64 * Self::CARRIED_BYTES_PER_NODE,
            false => 0,
        };
        let lists = if binned {
            nodes as u64 * Self::LIST_BYTES_PER_NODE
                + particles as u64 * Self::LIST_BYTES_PER_PARTICLE
        } else {
            0
        };
        nodes as u64 * Self::BYTES_PER_NODE + lists + carried
    }

    pub(crate) fn new(
        ctx: &GpuContext,
        label: &str,
        nodes: usize,
        particles: usize,
        binned: bool,
        flip: bool,
    ) -> Result<Self, MpmError> {
        let carried = match flip {
            true => Some(ctx.storage_zeroed::<f32>(&format!("{label} grid carried (m̂, mv̂)"), nodes * 4)?),
            false => None,
        };
        let lists = if binned {
            Some(GridCellLists {
                cell_head: ctx.storage_zeroed::<u32>(&format!("{label} cell list heads"), nodes)?,
                particle_next: ctx
                    .storage_zeroed::<u32>(&format!("{label} cell list links"), particles)?,
            })
        } else {
            None
        };
        Ok(Self {
            lists,
            carried,
            mass_momentum: ctx
                .storage_zeroed::<f32>(&format!("{label} grid (m, mv)"), nodes * 4)?,
            anchored: ctx.storage_zeroed::<u32>(&format!("{label} grid anchored"), nodes)?,
            velocity: ctx.storage_zeroed::<f32>(&format!("{label} grid velocity"), nodes * 4)?,
            node_box: ctx.storage_zeroed::<u32>(&format!("{label} active box"), 8)?,
            dispatch_args: ctx.buffer_from_slice(
                &format!("{label} active-box dispatch"),
                &[0u32; 6],
                crate::gpu::STORAGE | wgpu::BufferUsages::INDIRECT,
            )?,
        })
    }

    fn cell_lists(&self) -> &GridCellLists {
        self.lists
            .as_ref()
            .expect("a grid has cell lists whenever its simulator's scatters are binned")
    }

    /// The cell-list heads (binned scatters only).
    pub(crate) fn cell_head(&self) -> &GpuBuffer {
        &self.cell_lists().cell_head
    }

    /// The per-particle list links (binned scatters only).
    pub(crate) fn particle_next(&self) -> &GpuBuffer {
        &self.cell_lists().particle_next
    }

    /// The active box and cell lists, for the kernels that walk them.
    pub(crate) fn lists(&self) -> CellLists<'_> {
        let lists = self.cell_lists();
        CellLists {
            node_box: &self.node_box,
            cell_head: &lists.cell_head,
            particle_next: &lists.particle_next,
        }
    }
}
