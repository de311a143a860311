//! The GPU MLS-MPM simulator: buffers, kernels and the encoding of one
//! substep forward (P2G → grid update → G2P) and backward (G2P* → grid
//! update* → P2G*, on the substep's grid kept from the replay of its
//! segment, or after recomputing it). Rollouts over frames and the backward
//! pass with checkpointing are in [`super::rollout`].

use super::add_assign::{AddAssign, AddAssignBuffers, AddAssignUniforms};
use super::bind_group_cache::BindGroupCache;
use super::cell_scatter::{CellScatter, CellScatterBuffers};
use super::config::{MpmConfig, WALL_MARGIN_CELLS};
use super::error::MpmError;
use super::g2p::{G2p, G2pBuffers};
use super::g2p_adjoint::{G2pAdjoint, G2pAdjointBuffers, G2pAdjointCellsBuffers};
use super::grid_bounds::{GridBounds, GridBoundsBuffers, EMPTY_BOUNDS};
use super::grid_box::{GridBox, GridBoxBuffers};
use super::grid_clear::{GridClear, GridClearBuffers};
use super::grid_update::{GridUpdate, GridUpdateBuffers};
use super::grid_update_adjoint::{GridUpdateAdjoint, GridUpdateAdjointBuffers};
use super::layout::{ParticleState, STATE_STRIDE};
use super::p2g::{P2g, P2gBuffers};
use super::p2g_adjoint::{P2gAdjoint, P2gAdjointBuffers, P2gAdjointCellsBuffers};
use super::p2g_bin::{CellLists, P2gBin, P2gBinBuffers};
use super::rollout::{segment_span, FrameWork, KeptThrough};
use super::stability::min_substeps_per_frame;
use super::status::{SimulationStatus, STATUS_WORDS};
use super::uniforms::MpmUniforms;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::gpu::{GpuBuffer, GpuContext};

/// One stage of a substep, in the order the kernels run. Exposed so that
/// benchmarks can submit and time each kernel separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubstepStage {
    /// Active box of the substep's stencils ([`super::grid_box`]).
    ActiveBox,
    /// Zero the grid mass/momentum and the anchored-node flags, and with
    /// binned scatters empty the cell lists (active box).
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
    /// adjoints run in reverse order (DESIGN.md § Adjoint).
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

/// Per-particle settings fixed for the simulator's lifetime.
#[derive(Clone, Debug)]
pub struct MpmSetup {
    /// Volume of every particle (normalised units; see
    /// [`super::config::particle_volume`]).
    pub particle_volume: f64,
    /// Anchored flag per particle (frozen particles; their nodes get v = 0).
    pub anchored: Vec<bool>,
    /// Largest Young's modulus the run may use: the explicit time-step bound
    /// is checked for it at construction (e.g. the top of the fit's range).
    pub youngs_max: f64,
}

/// The grid of one substep: what P2G and the grid update produce and the
/// adjoint kernels read (grid mass/momentum, anchored-node flags, grid
/// velocity, and with binned scatters the cell lists of P2G's binning) and
/// the substep's active box. The simulator owns one; the
/// backward pass keeps one per substep of a segment so that the substep
/// adjoints need not recompute them ([`super::rollout`]).
pub(crate) struct SubstepGrid {
    mass_momentum: GpuBuffer,
    anchored: GpuBuffer,
    velocity: GpuBuffer,
    node_box: GpuBuffer,
    dispatch_args: GpuBuffer,
    /// With binned scatters: the cell lists of P2G's binning (allocated
    /// when the grid is made in that mode, or on the switch to it:
    /// [`MpmSimulator::set_binned_scatters_for_tests`]).
    lists: OnceLock<GridCellLists>,
}

/// The cell lists a [`SubstepGrid`] holds with binned scatters
/// ([`CellLists`]).
struct GridCellLists {
    /// Per node (as base cell): the head of its particle list.
    cell_head: GpuBuffer,
    /// Per particle: the link of its cell's list.
    particle_next: GpuBuffer,
}

impl GridCellLists {
    fn new(
        ctx: &GpuContext,
        label: &str,
        nodes: usize,
        particles: usize,
    ) -> Result<Self, MpmError> {
        Ok(Self {
            cell_head: ctx.storage_zeroed::<u32>(&format!("{label} cell list heads"), nodes)?,
            particle_next: ctx
                .storage_zeroed::<u32>(&format!("{label} cell list links"), particles)?,
        })
    }
}

impl SubstepGrid {
    /// Bytes per node of the three per-node buffers (4 + 1 + 4 words).
    const BYTES_PER_NODE: u64 = 9 * 4;
    /// Bytes per node and per particle of the cell lists (one word each).
    const LIST_BYTES_PER_NODE: u64 = 4;
    const LIST_BYTES_PER_PARTICLE: u64 = 4;

    /// Bytes of one grid of `nodes` nodes for `particles` particles, with
    /// cell lists if `binned`.
    fn bytes(nodes: usize, particles: usize, binned: bool) -> u64 {
        let lists = if binned {
            nodes as u64 * Self::LIST_BYTES_PER_NODE
                + particles as u64 * Self::LIST_BYTES_PER_PARTICLE
        } else {
            0
        };
        nodes as u64 * Self::BYTES_PER_NODE + lists
    }

    fn new(
        ctx: &GpuContext,
        label: &str,
        nodes: usize,
        particles: usize,
        binned: bool,
    ) -> Result<Self, MpmError> {
        let lists = OnceLock::new();
        if binned {
            let _ = lists.set(GridCellLists::new(ctx, label, nodes, particles)?);
        }
        Ok(Self {
            lists,
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

    /// The cell lists: present whenever the scatters run binned.
    fn cell_lists(&self) -> &GridCellLists {
        self.lists
            .get()
            .expect("a grid has cell lists whenever the scatters run binned")
    }

    /// The active box and cell lists, for the kernels that walk them.
    fn lists(&self) -> CellLists<'_> {
        let lists = self.cell_lists();
        CellLists {
            node_box: &self.node_box,
            cell_head: &lists.cell_head,
            particle_next: &lists.particle_next,
        }
    }
}

struct Kernels {
    p2g: P2g,
    p2g_bin: P2gBin,
    cell_scatter: CellScatter,
    grid_update: GridUpdate,
    g2p: G2p,
    g2p_adjoint: G2pAdjoint,
    grid_update_adjoint: GridUpdateAdjoint,
    p2g_adjoint: P2gAdjoint,
    add_assign: AddAssign,
    grid_bounds: GridBounds,
    grid_box: GridBox,
    grid_clear: GridClear,
}

/// A GPU MPM simulation of a fixed particle set on a fixed grid.
pub struct MpmSimulator {
    config: MpmConfig,
    particle_count: u32,
    uniforms: GpuBuffer,
    youngs: GpuBuffer,
    anchored: GpuBuffer,
    grid: SubstepGrid,
    grid_velocity_grad: GpuBuffer,
    grid_grad: GpuBuffer,
    status: GpuBuffer,
    add_uniforms: GpuBuffer,
    bounds: GpuBuffer,
    scratch: [GpuBuffer; 2],
    kernels: Kernels,
    kept_grids_budget: AtomicU64,
    binned_scatters: AtomicBool,
    bind_groups: BindGroupCache,
    frame_work: Mutex<Option<FrameWork>>,
}

/// Checks the explicit time-step bound for Young's modulus up to `youngs_max`.
pub fn check_stability(config: &MpmConfig, youngs_max: f64) -> Result<(), MpmError> {
    let needed = min_substeps_per_frame(
        config.fps,
        youngs_max,
        config.poisson,
        config.density,
        config.dx(),
    );
    if config.substeps_per_frame < needed {
        return Err(MpmError::TooFewSubsteps {
            substeps: config.substeps_per_frame,
            needed,
            youngs_max,
            poisson: config.poisson,
            density: config.density,
            grid_res: config.grid_res,
            fps: config.fps,
        });
    }
    Ok(())
}

fn validate_config(config: &MpmConfig) -> Result<(), MpmError> {
    let bad = |m: String| Err(MpmError::InvalidInput(m));
    let min_res = 2 * WALL_MARGIN_CELLS + 4;
    if config.grid_res < min_res {
        return bad(format!(
            "grid_res = {} is too small: at least {min_res} (3 wall cells on each side plus a stencil)",
            config.grid_res
        ));
    }
    if !(config.fps.is_finite() && config.fps > 0.0) {
        return bad(format!("fps = {} must be positive", config.fps));
    }
    if config.substeps_per_frame == 0 {
        return bad("substeps_per_frame must be at least 1".into());
    }
    if !(config.density.is_finite() && config.density > 0.0) {
        return bad(format!("density = {} must be positive", config.density));
    }
    if !(0.0..0.5).contains(&config.poisson) {
        return bad(format!("poisson = {} must be in [0, 0.5)", config.poisson));
    }
    if !(config.damping.is_finite() && config.damping >= 0.0) {
        return bad(format!("damping = {} must be ≥ 0", config.damping));
    }
    if config.gravity.iter().any(|g| !g.is_finite()) {
        return bad("gravity must be finite".into());
    }
    Ok(())
}

impl MpmSimulator {
    /// Builds the simulator after checking the configuration and the
    /// explicit time-step bound for `setup.youngs_max`. Young's moduli start
    /// at `setup.youngs_max`; set them with [`MpmSimulator::set_youngs`].
    pub fn new(ctx: &GpuContext, config: &MpmConfig, setup: &MpmSetup) -> Result<Self, MpmError> {
        validate_config(config)?;
        let n = setup.anchored.len();
        if n == 0 {
            return Err(MpmError::InvalidInput("no particles to simulate".into()));
        }
        if !(setup.particle_volume.is_finite() && setup.particle_volume > 0.0) {
            return Err(MpmError::InvalidInput(format!(
                "particle volume {} must be positive",
                setup.particle_volume
            )));
        }
        if !(setup.youngs_max.is_finite() && setup.youngs_max > 0.0) {
            return Err(MpmError::InvalidInput(format!(
                "largest Young's modulus {} must be positive",
                setup.youngs_max
            )));
        }
        check_stability(config, setup.youngs_max)?;
        // Nodes 0..=grid_res per axis (both faces of the box), as the twin.
        let per_axis = config.grid_res as usize + 1;
        let nodes = per_axis * per_axis * per_axis;
        let uniforms = MpmUniforms::new(config, setup.particle_volume, n as u32);
        let anchored: Vec<u32> = setup.anchored.iter().map(|&a| a as u32).collect();
        let state_floats = n * STATE_STRIDE;
        let binned = ctx.adapter_info.device_type == wgpu::DeviceType::Cpu;
        Ok(Self {
            config: config.clone(),
            particle_count: n as u32,
            uniforms: ctx.uniform_buffer("mpm uniforms", &uniforms)?,
            youngs: ctx.storage_from_slice("mpm youngs", &vec![setup.youngs_max as f32; n])?,
            anchored: ctx.storage_from_slice("mpm anchored particles", &anchored)?,
            grid: SubstepGrid::new(ctx, "mpm", nodes, n, binned)?,
            grid_velocity_grad: ctx.storage_zeroed::<f32>("mpm grid velocity grad", nodes * 4)?,
            grid_grad: ctx.storage_zeroed::<f32>("mpm grid (mv, m) grad", nodes * 4)?,
            status: ctx.storage_zeroed::<u32>("mpm status", STATUS_WORDS)?,
            add_uniforms: ctx.uniform_buffer(
                "mpm add_assign uniforms",
                &AddAssignUniforms {
                    count: state_floats as u32,
                    _pad: [0; 3],
                },
            )?,
            bounds: ctx.storage_from_slice("mpm active-box bounds", &EMPTY_BOUNDS)?,
            scratch: [
                ctx.storage_zeroed::<f32>("mpm substep state A", state_floats)?,
                ctx.storage_zeroed::<f32>("mpm substep state B", state_floats)?,
            ],
            kernels: Kernels {
                p2g: P2g::new(ctx)?,
                p2g_bin: P2gBin::new(ctx)?,
                cell_scatter: CellScatter::new(ctx)?,
                grid_update: GridUpdate::new(ctx)?,
                g2p: G2p::new(ctx)?,
                g2p_adjoint: G2pAdjoint::new(ctx)?,
                grid_update_adjoint: GridUpdateAdjoint::new(ctx)?,
                p2g_adjoint: P2gAdjoint::new(ctx)?,
                add_assign: AddAssign::new(ctx)?,
                grid_bounds: GridBounds::new(ctx)?,
                grid_box: GridBox::new(ctx)?,
                grid_clear: GridClear::new(ctx)?,
            },
            kept_grids_budget: AtomicU64::new(super::rollout::KEPT_GRIDS_BUDGET_BYTES),
            binned_scatters: AtomicBool::new(binned),
            bind_groups: BindGroupCache::default(),
            frame_work: Mutex::new(None),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &MpmConfig {
        &self.config
    }

    /// Number of particles.
    pub fn particle_count(&self) -> usize {
        self.particle_count as usize
    }

    /// Sets Young's modulus per particle after checking the values (finite,
    /// positive) and the explicit time-step bound for their maximum.
    pub fn set_youngs(&self, ctx: &GpuContext, youngs: &[f32]) -> Result<(), MpmError> {
        self.check_youngs(youngs)?;
        let max = youngs.iter().fold(0.0f32, |a, &b| a.max(b));
        check_stability(&self.config, max as f64)?;
        ctx.write(&self.youngs, youngs);
        Ok(())
    }

    /// [`MpmSimulator::set_youngs`] without the time-step check: only for
    /// tests that must provoke a blow-up.
    #[doc(hidden)]
    pub fn set_youngs_unchecked_for_tests(
        &self,
        ctx: &GpuContext,
        youngs: &[f32],
    ) -> Result<(), MpmError> {
        self.check_youngs(youngs)?;
        ctx.write(&self.youngs, youngs);
        Ok(())
    }

    fn check_youngs(&self, youngs: &[f32]) -> Result<(), MpmError> {
        if youngs.len() != self.particle_count() {
            return Err(MpmError::InvalidInput(format!(
                "{} Young's moduli for {} particles",
                youngs.len(),
                self.particle_count
            )));
        }
        if let Some(i) = youngs.iter().position(|e| !(e.is_finite() && *e > 0.0)) {
            return Err(MpmError::InvalidInput(format!(
                "Young's modulus of particle {i} is {}; it must be positive and finite",
                youngs[i]
            )));
        }
        Ok(())
    }

    /// The per-particle Young's modulus buffer (f32), for callers that
    /// update E on the GPU (e.g. an optimiser step). Writing it bypasses
    /// [`MpmSimulator::set_youngs`]'s checks: keep E within the `youngs_max`
    /// given at construction, whose time-step bound was checked.
    pub fn youngs_buffer(&self) -> &GpuBuffer {
        &self.youngs
    }

    /// A zeroed state-sized buffer (24 f32 per particle).
    pub fn state_buffer(&self, ctx: &GpuContext, label: &str) -> Result<GpuBuffer, MpmError> {
        Ok(ctx.storage_zeroed::<f32>(label, self.particle_count() * STATE_STRIDE)?)
    }

    /// Uploads a state after checking its size and that it is finite and
    /// inside the grid.
    pub fn upload_state(
        &self,
        ctx: &GpuContext,
        label: &str,
        state: &ParticleState,
    ) -> Result<GpuBuffer, MpmError> {
        if state.len() != self.particle_count()
            || state.v.len() != state.len()
            || state.c.len() != state.len()
            || state.f.len() != state.len()
        {
            return Err(MpmError::InvalidInput(format!(
                "state '{label}' has {} particles, the simulator {}",
                state.len(),
                self.particle_count
            )));
        }
        let packed = state.to_packed();
        if let Some(i) = packed.iter().position(|v| !v.is_finite()) {
            return Err(MpmError::InvalidInput(format!(
                "state '{label}': particle {} has a non-finite value",
                i / STATE_STRIDE
            )));
        }
        let res = self.config.grid_res as f32;
        if let Some(p) = state.x.iter().position(|x| {
            x.iter()
                .any(|&c| !(c * res - 0.5 >= 0.0 && c * res - 0.5 < res - 1.0))
        }) {
            return Err(MpmError::InvalidInput(format!(
                "state '{label}': particle {p} at {:?} is outside the simulation box \
                 (normalised coordinates must lie in [0.5·dx, 1 − 0.5·dx))",
                state.x[p]
            )));
        }
        Ok(ctx.storage_from_slice(label, &packed)?)
    }

    /// Reads a state (or state adjoint) buffer back.
    pub fn read_state(
        &self,
        ctx: &GpuContext,
        buffer: &GpuBuffer,
    ) -> Result<ParticleState, MpmError> {
        Ok(ParticleState::from_packed(&ctx.read_buffer::<f32>(buffer)?))
    }

    /// Records one stage of a substep (forward or adjoint) on `b`, with the
    /// simulator's own grid. [`SubstepStage::G2pAdjoint`] adds into
    /// ∂L/∂(grid velocity), which must be zero over the substep's active box
    /// beforehand; [`SubstepStage::GridUpdateAdjoint`] zeroes the box after
    /// reading it (the buffer starts zeroed, and
    /// [`MpmSimulator::backward`] zeroes it whole at its start). With binned
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
        // Every key is all the buffers its bind group binds, in binding order.
        match stage {
            SubstepStage::ActiveBox => {
                let bounds = GridBoundsBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    bounds: &self.bounds,
                };
                let bounds_group = cache.get("grid_bounds", &bounds.in_binding_order(), || {
                    k.grid_bounds.bind(ctx, &bounds)
                });
                let node_box = GridBoxBuffers {
                    uniforms: &self.uniforms,
                    bounds: &self.bounds,
                    node_box: &grid.node_box,
                    dispatch_args: &grid.dispatch_args,
                };
                let box_group = cache.get("grid_box", &node_box.in_binding_order(), || {
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
                    cell_head: self.binned_scatters().then(|| &grid.cell_lists().cell_head),
                };
                let name = match b.cell_head {
                    Some(_) => "clear_grid_and_lists",
                    None => "clear_grid",
                };
                let bg = cache.get(name, &b.in_binding_order(), || {
                    k.grid_clear.bind_grid(ctx, &b)
                });
                k.grid_clear
                    .dispatch_grid(encoder, &b, &bg, &grid.dispatch_args);
            }
            SubstepStage::P2g if self.binned_scatters() => {
                let bin = P2gBinBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    anchored: &self.anchored,
                    cell_head: &grid.cell_lists().cell_head,
                    particle_next: &grid.cell_lists().particle_next,
                    grid_anchored: &grid.anchored,
                };
                let bin_group = cache.get("p2g_bin", &bin.in_binding_order(), || {
                    k.p2g_bin.bind(ctx, &bin)
                });
                k.p2g_bin.dispatch(encoder, &bin_group, self.particle_count);
                let scatter = CellScatterBuffers {
                    uniforms: &self.uniforms,
                    state: b.state,
                    youngs: &self.youngs,
                    lists: grid.lists(),
                    nodes: &grid.mass_momentum,
                };
                let scatter_group = cache.get("cell_scatter", &scatter.in_binding_order(), || {
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
                };
                let bg = cache.get("p2g", &p2g.in_binding_order(), || k.p2g.bind(ctx, &p2g));
                k.p2g.dispatch(encoder, &bg, self.particle_count);
            }
            SubstepStage::GridUpdate => {
                let update = GridUpdateBuffers {
                    uniforms: &self.uniforms,
                    node_box: &grid.node_box,
                    grid: &grid.mass_momentum,
                    grid_anchored: &grid.anchored,
                    grid_velocity: &grid.velocity,
                };
                let bg = cache.get("grid_update", &update.in_binding_order(), || {
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
                let bg = cache.get("g2p", &g2p.in_binding_order(), || k.g2p.bind(ctx, &g2p));
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
                    let bg = cache.get("g2p_adjoint cells", &cells.in_binding_order(), || {
                        k.g2p_adjoint.bind_cells(ctx, &cells)
                    });
                    k.g2p_adjoint
                        .dispatch_cells(encoder, &bg, &grid.dispatch_args);
                } else {
                    let bg = cache.get("g2p_adjoint", &adjoint.in_binding_order(), || {
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
                };
                let bg = cache.get("grid_update_adjoint", &adj.in_binding_order(), || {
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
                };
                if self.binned_scatters() {
                    let cells = P2gAdjointCellsBuffers {
                        adjoint,
                        lists: grid.lists(),
                    };
                    let bg = cache.get("p2g_adjoint cells", &cells.in_binding_order(), || {
                        k.p2g_adjoint.bind_cells(ctx, &cells)
                    });
                    k.p2g_adjoint
                        .dispatch_cells(encoder, &bg, &grid.dispatch_args);
                } else {
                    let bg = cache.get("p2g_adjoint", &adjoint.in_binding_order(), || {
                        k.p2g_adjoint.bind(ctx, &adjoint)
                    });
                    k.p2g_adjoint.dispatch(encoder, &bg, self.particle_count);
                }
            }
        }
    }

    /// Records one forward substep `from → to` (distinct buffers).
    pub fn encode_substep(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        from: &GpuBuffer,
        to: &GpuBuffer,
    ) {
        let b = StageBuffers {
            state: from,
            next: to,
            grad_next: to,
            grad: to,
            youngs_grad: to,
        };
        for stage in SubstepStage::FORWARD {
            self.encode_stage(ctx, encoder, stage, &b);
        }
    }

    /// Records the adjoint of the substep `state → next` (`next` as the
    /// forward substep wrote it from `state`): from `grad_next = ∂L/∂(state
    /// n+1)` writes `grad = ∂L/∂(state n)` and adds this substep's `∂L/∂E`
    /// to `youngs_grad`. Recomputes the substep's grid first (the backward
    /// pass of [`super::rollout`] keeps each segment substep's grid from its
    /// replay instead, unless they exceed
    /// [`super::rollout::KEPT_GRIDS_BUDGET_BYTES`]). Leaves ∂L/∂(grid
    /// velocity) zero over the box, as it needs it on entry (see
    /// [`MpmSimulator::encode_stage`]).
    #[allow(clippy::too_many_arguments)]
    pub fn encode_substep_adjoint(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        state: &GpuBuffer,
        next: &GpuBuffer,
        grad_next: &GpuBuffer,
        grad: &GpuBuffer,
        youngs_grad: &GpuBuffer,
    ) {
        let b = StageBuffers {
            state,
            next,
            grad_next,
            grad,
            youngs_grad,
        };
        self.encode_substep_adjoint_with(ctx, encoder, &b, None);
    }

    /// Nodes of the grid (grid_res + 1 per axis).
    fn node_count(&self) -> usize {
        let per_axis = self.config.grid_res as usize + 1;
        per_axis * per_axis * per_axis
    }

    /// Bytes the backward pass may spend on kept segment grids
    /// ([`super::rollout::KEPT_GRIDS_BUDGET_BYTES`] unless changed).
    pub(crate) fn kept_grids_budget(&self) -> u64 {
        self.kept_grids_budget.load(Ordering::Relaxed)
    }

    /// Changes the kept-grids budget: only for tests that compare the
    /// backward pass with and without kept grids (0 = always recompute).
    #[doc(hidden)]
    pub fn set_kept_grids_budget_for_tests(&self, bytes: u64) {
        self.kept_grids_budget.store(bytes, Ordering::Relaxed);
    }

    /// Whether the two scatters, P2G and the adjoint of G2P, run cell-binned
    /// (the default on CPU adapters: [`super::p2g_bin`] then
    /// [`super::cell_scatter`], with G2P* and P2G* walking the same cell
    /// lists, [`super::g2p_adjoint`] and [`super::p2g_adjoint`] `main_cells`)
    /// or as one-kernel atomic scatters (the default on GPUs:
    /// [`super::p2g`], [`super::g2p_adjoint`], with the per-particle
    /// [`super::p2g_adjoint`]).
    pub fn binned_scatters(&self) -> bool {
        self.binned_scatters.load(Ordering::Relaxed)
    }

    /// Chooses the scatter variant: only for tests that compare the two
    /// (both give the same sums up to f32 summation order). Allocates the
    /// simulator grid's cell lists on first use; a change of variant drops the
    /// backward's kept buffers ([`MpmSimulator::release_backward_buffers`]).
    #[doc(hidden)]
    pub fn set_binned_scatters_for_tests(
        &self,
        ctx: &GpuContext,
        binned: bool,
    ) -> Result<(), MpmError> {
        if binned && self.grid.lists.get().is_none() {
            let lists = GridCellLists::new(ctx, "mpm", self.node_count(), self.particle_count())?;
            let _ = self.grid.lists.set(lists);
        }
        if self.binned_scatters.swap(binned, Ordering::Relaxed) != binned {
            // A segment a forward kept in the other mode has no cell lists
            // (atomic scatters build none), or lists the atomic adjoint
            // ignores: the next backward must replay it in this mode.
            self.release_backward_buffers();
        }
        Ok(())
    }

    /// The backward pass's buffers from the previous call when they fit
    /// `every` (and the kept-grids budget), else new ones.
    pub(crate) fn take_frame_work(
        &self,
        ctx: &GpuContext,
        every: u32,
    ) -> Result<FrameWork, MpmError> {
        let kept = self
            .frame_work
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match kept {
            Some(work) if work.fits(self, every) => Ok(work),
            other => {
                drop(other); // free the old buffers before allocating
                FrameWork::new(ctx, self, every)
            }
        }
    }

    /// Keeps the backward pass's buffers for the next call.
    pub(crate) fn keep_frame_work(&self, work: FrameWork) {
        *self.frame_work.lock().unwrap_or_else(|e| e.into_inner()) = Some(work);
    }

    /// Frees the buffers that [`MpmSimulator::backward`] keeps between calls
    /// (checkpoint and segment states, kept grids; reallocated on the next
    /// call).
    pub fn release_backward_buffers(&self) {
        self.frame_work
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    /// Bytes of one extra [`SubstepGrid`].
    pub(crate) fn substep_grid_bytes(&self) -> u64 {
        SubstepGrid::bytes(
            self.node_count(),
            self.particle_count(),
            self.binned_scatters(),
        )
    }

    /// The grid of substep `index` of a kept segment ([`super::rollout`]).
    pub(crate) fn new_substep_grid(
        &self,
        ctx: &GpuContext,
        index: usize,
    ) -> Result<SubstepGrid, MpmError> {
        SubstepGrid::new(
            ctx,
            &format!("mpm segment {index}"),
            self.node_count(),
            self.particle_count(),
            self.binned_scatters(),
        )
    }

    /// Zeroes ∂L/∂(grid velocity) whole. The substep adjoints keep it zero
    /// between them (grid update* zeroes the box nodes it reads); a
    /// backward pass starts with this so that nothing left by an earlier,
    /// failed one can leak in.
    pub(crate) fn encode_clear_grid_velocity_grad(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.clear_buffer(self.grid_velocity_grad.raw(), 0, None);
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

    /// The substep adjoint on buffers `b`: with `kept = Some(grid)` on the
    /// substep's grid already in `grid` (from
    /// [`MpmSimulator::encode_substep_keeping_grid`] on `b.state`), running
    /// only [`SubstepStage::ADJOINT_ON_KEPT_GRID`]; with `None` as
    /// [`MpmSimulator::encode_substep_adjoint`].
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
            self.encode_substep(ctx, encoder, from, to);
        }
    }

    /// Runs one frame (all substeps) `start → end` and checks the status
    /// words once at its end. `frame` (1-based) is only for the error.
    /// On a failure, replays the frame substep by substep to name the
    /// substep where it started.
    pub fn run_frame(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        end: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        self.run_frame_through(ctx, start, None, end, frame)
    }

    /// [`MpmSimulator::run_frame`] writing the states at the segment starts
    /// (every K substeps, [`super::rollout::segment_span`]) into the
    /// ⌈S/K⌉ − 1 buffers of `through.checkpoints` on the way (`checkpoint_buffers` makes them) and, with `through.last_segment`,
    /// keeping the states and grids of the frame's last segment there for
    /// the backward pass.
    pub(crate) fn run_frame_through(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        through: Option<KeptThrough>,
        end: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        let result = self.run_frame_checked(ctx, start, through, end, frame);
        // The frame's bind groups hold `start` and `end`: let them go.
        self.release_bind_groups();
        result
    }

    /// Drops the cached bind groups (and their hold on the buffers they bind).
    pub(crate) fn release_bind_groups(&self) {
        self.bind_groups.clear();
    }

    fn run_frame_checked(
        &self,
        ctx: &GpuContext,
        start: &GpuBuffer,
        through: Option<KeptThrough>,
        end: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        let substeps = self.config.substeps_per_frame;
        SimulationStatus::reset(ctx, &self.status);
        let mut encoder = crate::gpu::encoder(ctx, "mpm frame");
        // Segments between checkpoints (one segment when none are kept;
        // `segment_span` says where each starts).
        let (every, checkpoints, last_segment) = match through {
            Some(t) => (t.every, t.checkpoints, t.last_segment),
            None => (substeps, &[][..], None),
        };
        let segments = substeps.div_ceil(every);
        debug_assert_eq!(checkpoints.len() as u32 + 1, segments);
        for j in 0..segments {
            let from = if j == 0 {
                start
            } else {
                &checkpoints[j as usize - 1]
            };
            let to = if j + 1 == segments {
                end
            } else {
                &checkpoints[j as usize]
            };
            let (_, len) = segment_span(substeps, every, j);
            match last_segment {
                Some(work) if j + 1 == segments => {
                    let kept = self.encode_segment_keeping_grids(
                        ctx,
                        &mut encoder,
                        work,
                        from,
                        len as usize,
                        true,
                    );
                    if let Some(kept) = kept {
                        encoder.copy_buffer_to_buffer(kept.raw(), 0, to.raw(), 0, None);
                    }
                }
                _ => self.encode_substeps(ctx, &mut encoder, from, to, len),
            }
        }
        ctx.queue.submit([encoder.finish()]);
        let status = SimulationStatus::read(ctx, &self.status)?;
        if status.is_ok() {
            return Ok(());
        }
        // Locate the first failing substep (rare path): replay the frame
        // once from its start, one substep per submission, and read the
        // status after each; stop at the first bad one. O(S) substeps.
        let mut from = start;
        for s in 0..substeps {
            let to = &self.scratch[(s % 2) as usize];
            SimulationStatus::reset(ctx, &self.status);
            let mut encoder = crate::gpu::encoder(ctx, "mpm frame replay");
            self.encode_substep(ctx, &mut encoder, from, to);
            ctx.queue.submit([encoder.finish()]);
            let replay = SimulationStatus::read(ctx, &self.status)?;
            if !replay.is_ok() {
                return Err(replay.error(frame, s));
            }
            from = to;
        }
        Err(status.error(frame, substeps - 1))
    }
}
