//! One substep on the GPU, forward (P2G → grid update → G2P, docs/design.md
//! § MPM) and backward (G2P* → grid update* → P2G*, docs/design.md § Adjoint):
//! the stages in the order the kernels run and their encoding into a
//! command encoder, on the simulator's own grid or on a
//! `SubstepGrid` kept by the backward pass. Nothing here submits: callers
//! record stages, substeps and state additions into their own encoders
//! ([`super::rollout`] and [`super::backward`] submit once per frame).
//! Under the FLIP transfer a stage also records its FLIP kernel after its
//! APIC ones ([`MpmSimulator::encode_flip_stage`], [`super::flip`]).

use super::add_assign::AddAssignBuffers;
use super::cell_scatter::CellScatterBuffers;
use super::flip_clear::FlipClearBuffers;
use super::flip_gather::FlipGatherBuffers;
use super::flip_gather_adjoint::FlipGatherAdjointBuffers;
use super::flip_grid_adjoint::FlipGridAdjointBuffers;
use super::flip_scatter::FlipScatterBuffers;
use super::flip_scatter_adjoint::FlipScatterAdjointBuffers;
use super::g2p::G2pBuffers;
use super::g2p_adjoint::{G2pAdjointBuffers, G2pAdjointCellsBuffers};
use super::grid_bounds::GridBoundsBuffers;
use super::grid_box::GridBoxBuffers;
use super::grid_clear::GridClearBuffers;
use super::grid_update::GridUpdateBuffers;
use super::grid_update_adjoint::GridUpdateAdjointBuffers;
use super::layout::STATE_STRIDE;
use super::p2g::P2gBuffers;
use super::p2g_adjoint::{P2gAdjointBuffers, P2gAdjointCellsBuffers};
use super::p2g_bin::P2gBinBuffers;
use super::simulator::MpmSimulator;
use super::substep_grid::SubstepGrid;
use crate::gpu::{GpuBuffer, GpuContext};

/// One stage of a substep, in the order the kernels run. Exposed so that
/// benchmarks can submit and time each kernel separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubstepStage {
    /// Active box of the substep's stencils ([`super::grid_box`]).
    ActiveBox,
    /// Zero the grid mass/momentum and the anchored-node flags, with
    /// binned scatters empty the cell lists, and under FLIP zero the
    /// carried (m̂, mv̂) (active box).
    ClearGrid,
    /// Particle-to-grid scatter. With binned scatters (CPU adapters) it
    /// also builds the substep's cell lists, which G2P* and P2G* walk
    /// again and [`SubstepStage::ClearGrid`] empties: like the grid's
    /// (m, mv), they are only right after a ClearGrid.
    P2g,
    /// Grid velocity update with boundary conditions.
    GridUpdate,
    /// Grid-to-particle gather and particle update.
    G2p,
    /// Adjoint of G2P, grid side: the scatter of ∂L/∂(grid velocity).
    /// With binned scatters it walks the cell lists of the substep's
    /// [`SubstepStage::P2g`].
    G2pAdjoint,
    /// Adjoint of the grid update.
    GridUpdateAdjoint,
    /// Adjoint of P2G and the particle side of the adjoint of G2P:
    /// ∂L/∂(state n). With binned scatters it walks the cell lists of the
    /// substep's [`SubstepStage::P2g`].
    P2gAdjoint,
}

impl SubstepStage {
    /// A forward substep.
    pub const FORWARD: [SubstepStage; 5] = [
        Self::ActiveBox,
        Self::ClearGrid,
        Self::P2g,
        Self::GridUpdate,
        Self::G2p,
    ];
    /// A backward substep: the grid of the substep is recomputed, then the
    /// adjoints run in reverse order (docs/design.md § Adjoint).
    pub const ADJOINT: [SubstepStage; 7] = [
        Self::ActiveBox,
        Self::ClearGrid,
        Self::P2g,
        Self::GridUpdate,
        Self::G2pAdjoint,
        Self::GridUpdateAdjoint,
        Self::P2gAdjoint,
    ];
    /// A backward substep whose grid was kept from the forward replay of
    /// its segment: the last three stages of [`SubstepStage::ADJOINT`].
    pub const ADJOINT_ON_KEPT_GRID: [SubstepStage; 3] =
        [Self::G2pAdjoint, Self::GridUpdateAdjoint, Self::P2gAdjoint];

    /// Short name (benchmark output).
    pub fn name(self) -> &'static str {
        match self {
            Self::ActiveBox => "active_box",
            Self::ClearGrid => "clear_grid",
            Self::P2g => "p2g",
            Self::GridUpdate => "grid_update",
            Self::G2p => "g2p",
            Self::G2pAdjoint => "g2p_adjoint",
            Self::GridUpdateAdjoint => "grid_update_adjoint",
            Self::P2gAdjoint => "p2g_adjoint",
        }
    }
}

/// Particle-side buffers a stage may use (unused ones are ignored).
pub struct StageBuffers<'a> {
    /// State at substep n.
    pub state: &'a GpuBuffer,
    /// State at substep n+1: G2P writes it; P2G* (with G2P*'s particle
    /// side) reads its v and C.
    pub next: &'a GpuBuffer,
    /// ∂L/∂(state n+1).
    pub grad_next: &'a GpuBuffer,
    /// ∂L/∂(state n) (P2G*, with the particle side of G2P*, writes it).
    pub grad: &'a GpuBuffer,
    /// ∂L/∂E accumulator.
    pub youngs_grad: &'a GpuBuffer,
}

impl<'a> StageBuffers<'a> {
    /// The buffers of a forward substep `from` → `to` (the forward stages
    /// read no gradient; those slots are filled with `to`).
    pub fn forward(from: &'a GpuBuffer, to: &'a GpuBuffer) -> Self {
        Self {
            state: from,
            next: to,
            grad_next: to,
            grad: to,
            youngs_grad: to,
        }
    }
}

impl MpmSimulator {
    /// Records one stage of a substep (forward or adjoint) on `b`, with the
    /// simulator's own grid. [`SubstepStage::G2pAdjoint`] adds into
    /// ∂L/∂(grid velocity), which must be zero over the substep's active box
    /// beforehand; [`SubstepStage::GridUpdateAdjoint`] zeroes the box after
    /// reading it (the buffer starts zeroed, and
    /// [`MpmSimulator::backward`](super::MpmSimulator::backward) zeroes it whole at its start). With binned
    /// scatters (CPU adapters), G2P* and P2G* walk the cell lists of the
    /// substep's [`SubstepStage::P2g`], which must follow a
    /// [`SubstepStage::ClearGrid`] (as in [`SubstepStage::ADJOINT`]).
    pub fn encode_stage(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        stage: SubstepStage,
        b: &StageBuffers,
    ) {
        self.encode_stage_on(ctx, encoder, stage, b, &self.grid);
    }

    /// [`MpmSimulator::encode_stage`] with the grid-side buffers of `grid`.
    pub(crate) fn encode_stage_on(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        stage: SubstepStage,
        b: &StageBuffers,
        grid: &SubstepGrid,
    ) {
        let k = &self.kernels;
        let cache = &self.bind_groups;
        // Every key is all the buffers its bind group binds.
        match stage {
            SubstepStage::ActiveBox => {
                let bounds = GridBoundsBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    bounds: &self.bounds,
                };
                let bounds_group = cache.get("grid_bounds", &bounds.by_name(), || {
                    k.grid_bounds.bind(ctx, &bounds)
                });
                let node_box = GridBoxBuffers {
                    uniforms: &self.uniforms,
                    bounds: &self.bounds,
                    node_box: &grid.node_box,
                    dispatch_args: &grid.dispatch_args,
                };
                let box_group = cache.get("grid_box", &node_box.by_name(), || {
                    k.grid_box.bind(ctx, &node_box)
                });
                k.grid_bounds
                    .dispatch(encoder, &bounds_group, self.particle_count);
                k.grid_box.dispatch(encoder, &box_group);
            }
            SubstepStage::ClearGrid => {
                let b = GridClearBuffers {
                    uniforms: &self.uniforms,
                    node_box: &grid.node_box,
                    mass_momentum: &grid.mass_momentum,
                    anchored: &grid.anchored,
                    held: &self.held_nodes,
                    cell_head: self.binned_scatters().then(|| grid.cell_head()),
                };
                let name = match b.cell_head {
                    Some(_) => "clear_grid_and_lists",
                    None => "clear_grid",
                };
                let bg = cache.get(name, &b.by_name(), || k.grid_clear.bind_grid(ctx, &b));
                k.grid_clear
                    .dispatch_grid(encoder, &b, &bg, &grid.dispatch_args);
            }
            SubstepStage::P2g if self.binned_scatters() => {
                let bin = P2gBinBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    cell_head: grid.cell_head(),
                    particle_next: grid.particle_next(),
                    grid_anchored: &grid.anchored,
                };
                let bin_group = cache.get("p2g_bin", &bin.by_name(), || k.p2g_bin.bind(ctx, &bin));
                k.p2g_bin.dispatch(encoder, &bin_group, self.particle_count);
                let scatter = CellScatterBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    youngs: &self.youngs,
                    lame: &self.lame,
                    anchored: &self.anchored,
                    lists: grid.lists(),
                    nodes: &grid.mass_momentum,
                };
                let scatter_group = cache.get("cell_scatter", &scatter.by_name(), || {
                    k.cell_scatter.bind(ctx, &scatter)
                });
                k.cell_scatter
                    .dispatch(encoder, &scatter_group, &grid.dispatch_args);
            }
            SubstepStage::P2g => {
                let p2g = P2gBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    youngs: &self.youngs,
                    anchored: &self.anchored,
                    grid: &grid.mass_momentum,
                    grid_anchored: &grid.anchored,
                    lame: &self.lame,
                };
                let bg = cache.get("p2g", &p2g.by_name(), || k.p2g.bind(ctx, &p2g));
                k.p2g.dispatch(encoder, &bg, self.particle_count);
            }
            SubstepStage::GridUpdate => {
                let update = GridUpdateBuffers {
                    uniforms: &self.uniforms,
                    node_box: &grid.node_box,
                    grid: &grid.mass_momentum,
                    grid_anchored: &grid.anchored,
                    grid_velocity: &grid.velocity,
                    colliders: &self.colliders,
                };
                let bg = cache.get("grid_update", &update.by_name(), || {
                    k.grid_update.bind(ctx, &update)
                });
                k.grid_update.dispatch(encoder, &bg, &grid.dispatch_args);
            }
            SubstepStage::G2p => {
                let g2p = G2pBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    grid_velocity: &grid.velocity,
                    anchored: &self.anchored,
                    state_out: b.next,
                    status: &self.status,
                };
                let bg = cache.get("g2p", &g2p.by_name(), || k.g2p.bind(ctx, &g2p));
                k.g2p.dispatch(encoder, &bg, self.particle_count);
            }
            SubstepStage::G2pAdjoint => {
                let adjoint = G2pAdjointBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    state_grad_next: b.grad_next,
                    grid_velocity_grad: &self.grid_velocity_grad,
                };
                if self.binned_scatters() {
                    let cells = G2pAdjointCellsBuffers {
                        adjoint,
                        lists: grid.lists(),
                    };
                    let bg = cache.get("g2p_adjoint cells", &cells.by_name(), || {
                        k.g2p_adjoint.bind_cells(ctx, &cells)
                    });
                    k.g2p_adjoint
                        .dispatch_cells(encoder, &bg, &grid.dispatch_args);
                } else {
                    let bg = cache.get("g2p_adjoint", &adjoint.by_name(), || {
                        k.g2p_adjoint.bind(ctx, &adjoint)
                    });
                    k.g2p_adjoint.dispatch(encoder, &bg, self.particle_count);
                }
            }
            SubstepStage::GridUpdateAdjoint => {
                let adj = GridUpdateAdjointBuffers {
                    uniforms: &self.uniforms,
                    node_box: &grid.node_box,
                    grid: &grid.mass_momentum,
                    grid_anchored: &grid.anchored,
                    grid_velocity_grad: &self.grid_velocity_grad,
                    grid_grad: &self.grid_grad,
                    colliders: &self.colliders,
                    collider_grad: &self.collider_grad,
                };
                let bg = cache.get("grid_update_adjoint", &adj.by_name(), || {
                    k.grid_update_adjoint.bind(ctx, &adj)
                });
                k.grid_update_adjoint
                    .dispatch(encoder, &bg, &grid.dispatch_args);
            }
            SubstepStage::P2gAdjoint => {
                let adjoint = P2gAdjointBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    state_next: b.next,
                    youngs: &self.youngs,
                    anchored: &self.anchored,
                    state_grad_next: b.grad_next,
                    grid_grad: &self.grid_grad,
                    grid_velocity: &grid.velocity,
                    state_grad: b.grad,
                    youngs_grad: b.youngs_grad,
                    lame: &self.lame,
                    poisson_grad: &self.poisson_grad,
                };
                if self.binned_scatters() {
                    let cells = P2gAdjointCellsBuffers {
                        adjoint,
                        lists: grid.lists(),
                    };
                    let bg = cache.get("p2g_adjoint cells", &cells.by_name(), || {
                        k.p2g_adjoint.bind_cells(ctx, &cells)
                    });
                    k.p2g_adjoint
                        .dispatch_cells(encoder, &bg, &grid.dispatch_args);
                } else {
                    let bg = cache.get("p2g_adjoint", &adjoint.by_name(), || {
                        k.p2g_adjoint.bind(ctx, &adjoint)
                    });
                    k.p2g_adjoint.dispatch(encoder, &bg, self.particle_count);
                }
            }
        }
        self.encode_flip_stage(ctx, encoder, stage, b, grid);
    }

    /// Records one forward substep `from → to` (distinct buffers).
    pub fn encode_substep(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        from: &GpuBuffer,
        to: &GpuBuffer,
    ) {
        let b = StageBuffers::forward(from, to);
        for stage in SubstepStage::FORWARD {
            self.encode_stage(ctx, encoder, stage, &b);
        }
    }

    /// Zeroes ∂L/∂(grid velocity), and under FLIP ∂L/∂v̂, whole. The
    /// substep adjoints keep them zero between them (grid update* and
    /// FLIP's grid adjoint zero the box nodes they read); a backward pass
    /// starts with this so that nothing left by an earlier, failed one can
    /// leak in.
    pub(crate) fn encode_clear_grid_velocity_grad(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.clear_buffer(self.grid_velocity_grad.raw(), 0, None);
        if let Some(flip) = &self.flip {
            encoder.clear_buffer(flip.carried_velocity_grad.raw(), 0, None);
        }
    }

    /// Records a forward substep from `from` that leaves its grid in `grid`
    /// for [`MpmSimulator::encode_substep_adjoint_with`]; runs G2P into `to`
    /// only when the next state is wanted.
    pub(crate) fn encode_substep_keeping_grid(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        from: &GpuBuffer,
        to: Option<&GpuBuffer>,
        grid: &SubstepGrid,
    ) {
        let b = StageBuffers {
            state: from,
            next: to.unwrap_or(from),
            grad_next: from,
            grad: from,
            youngs_grad: from,
        };
        let stages = if to.is_some() {
            &SubstepStage::FORWARD[..]
        } else {
            &SubstepStage::FORWARD[..SubstepStage::FORWARD.len() - 1]
        };
        for &stage in stages {
            self.encode_stage_on(ctx, encoder, stage, &b, grid);
        }
    }

    /// Records the adjoint of the substep `b.state → b.next` (`next` as the
    /// forward substep wrote it from `state`): from `b.grad_next =
    /// ∂L/∂(state n+1)` writes `b.grad = ∂L/∂(state n)` and adds this
    /// substep's `∂L/∂E` to `b.youngs_grad`. With `kept = Some(grid)` it
    /// runs on the substep's grid already in `grid` (from
    /// [`MpmSimulator::encode_substep_keeping_grid`] on `b.state`), only
    /// [`SubstepStage::ADJOINT_ON_KEPT_GRID`]; with `None` it recomputes the
    /// grid first (the backward pass of [`super::backward`] keeps each
    /// segment substep's grid from its replay instead, unless they exceed
    /// [`super::MpmOptions::kept_grids_budget`]). Leaves ∂L/∂(grid
    /// velocity) zero over the box, as it needs it on entry (see
    /// [`MpmSimulator::encode_stage`]).
    pub(crate) fn encode_substep_adjoint_with(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &StageBuffers,
        kept: Option<&SubstepGrid>,
    ) {
        match kept {
            Some(grid) => {
                for stage in SubstepStage::ADJOINT_ON_KEPT_GRID {
                    self.encode_stage_on(ctx, encoder, stage, b, grid);
                }
            }
            None => {
                for stage in SubstepStage::ADJOINT {
                    self.encode_stage(ctx, encoder, stage, b);
                }
            }
        }
    }

    /// Records `dst += src` over state-sized buffers.
    pub fn encode_add_state(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        src: &GpuBuffer,
        dst: &GpuBuffer,
    ) {
        self.kernels.add_assign.dispatch(
            ctx,
            encoder,
            &AddAssignBuffers {
                uniforms: &self.add_uniforms,
                src,
                dst,
            },
            self.particle_count * STATE_STRIDE as u32,
        );
    }

    /// Records `count` substeps from `start`, the last one writing `end`
    /// (intermediate states ping-pong in the simulator's scratch buffers).
    pub(crate) fn encode_substeps(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        start: &GpuBuffer,
        end: &GpuBuffer,
        count: u32,
    ) {
        for i in 0..count {
            let (from, to) = self.substep_states(i, count, start, end);
            self.encode_substep(ctx, encoder, from, to);
        }
    }

    /// The (from, to) states of substep `i` of `count` that run `start` to
    /// `end`: through the two scratch states in turn in between.
    pub(crate) fn substep_states<'a>(
        &'a self,
        i: u32,
        count: u32,
        start: &'a GpuBuffer,
        end: &'a GpuBuffer,
    ) -> (&'a GpuBuffer, &'a GpuBuffer) {
        let from = if i == 0 {
            start
        } else {
            &self.scratch[((i - 1) % 2) as usize]
        };
        let to = if i + 1 == count {
            end
        } else {
            &self.scratch[(i % 2) as usize]
        };
        (from, to)
    }
}

impl MpmSimulator {
    /// Records the FLIP transfer's part of `stage` (module doc) on `b` and
    /// `grid`, after the stage's APIC kernels; nothing under APIC.
    pub(crate) fn encode_flip_stage(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        stage: SubstepStage,
        b: &StageBuffers,
        grid: &SubstepGrid,
    ) {
        debug_assert_eq!(
            self.flip.is_some(),
            grid.carried.is_some(),
            "a FLIP simulator's grids carry (m̂, mv̂), and only its"
        );
        let (Some(flip), Some(carried)) = (&self.flip, &grid.carried) else {
            return;
        };
        let cache = &self.bind_groups;
        let particles = self.particle_count;
        match stage {
            SubstepStage::ClearGrid => {
                let c = FlipClearBuffers {
                    uniforms: &self.uniforms,
                    node_box: &grid.node_box,
                    carried,
                };
                let bg = cache.get("flip_clear", &c.by_name(), || flip.clear.bind(ctx, &c));
                flip.clear.dispatch(encoder, &bg, &grid.dispatch_args);
            }
            SubstepStage::P2g => {
                let s = FlipScatterBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    carried,
                };
                let bg = cache.get("flip_scatter", &s.by_name(), || flip.scatter.bind(ctx, &s));
                flip.scatter.dispatch(encoder, &bg, particles);
            }
            SubstepStage::G2p => {
                let g = FlipGatherBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    carried,
                    state_out: b.next,
                    status: &self.status,
                };
                let bg = cache.get("flip_gather", &g.by_name(), || flip.gather.bind(ctx, &g));
                flip.gather.dispatch(encoder, &bg, particles);
            }
            SubstepStage::G2pAdjoint => {
                let g = FlipGatherAdjointBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    state_grad_next: b.grad_next,
                    carried_velocity_grad: &flip.carried_velocity_grad,
                };
                let bg = cache.get("flip_gather_adjoint", &g.by_name(), || {
                    flip.gather_adjoint.bind(ctx, &g)
                });
                flip.gather_adjoint.dispatch(encoder, &bg, particles);
            }
            SubstepStage::GridUpdateAdjoint => {
                let g = FlipGridAdjointBuffers {
                    uniforms: &self.uniforms,
                    node_box: &grid.node_box,
                    carried,
                    carried_velocity_grad: &flip.carried_velocity_grad,
                    carried_grad: &flip.carried_grad,
                };
                let bg = cache.get("flip_grid_adjoint", &g.by_name(), || {
                    flip.grid_adjoint.bind(ctx, &g)
                });
                flip.grid_adjoint
                    .dispatch(encoder, &bg, &grid.dispatch_args);
            }
            SubstepStage::P2gAdjoint => {
                let s = FlipScatterAdjointBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    state_grad_next: b.grad_next,
                    carried,
                    carried_grad: &flip.carried_grad,
                    state_grad: b.grad,
                };
                let bg = cache.get("flip_scatter_adjoint", &s.by_name(), || {
                    flip.scatter_adjoint.bind(ctx, &s)
                });
                flip.scatter_adjoint.dispatch(encoder, &bg, particles);
            }
            SubstepStage::ActiveBox | SubstepStage::GridUpdate => {}
        }
    }
}
