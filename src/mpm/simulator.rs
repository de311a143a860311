//! The GPU MLS-MPM simulator: its settings, buffers and kernels, Young's
//! moduli and particle states. What runs on it reads top to bottom as the
//! pipeline: [`super::substep`] encodes one substep forward (P2G → grid
//! update → G2P) and backward (G2P* → grid update* → P2G*),
//! [`super::rollout`] runs frames forward, and [`super::backward`] runs the
//! checkpointed backward pass, whose working memory
//! ([`super::BackwardWork`]) belongs to its caller.

use super::add_assign::{AddAssign, AddAssignUniforms};
use super::bind_group_cache::BindGroupCache;
use super::cell_scatter::CellScatter;
use super::error::MpmError;
use super::flip::FlipParts;
use super::g2p::G2p;
use super::g2p_adjoint::G2pAdjoint;
use super::grid_bounds::{GridBounds, EMPTY_BOUNDS};
use super::grid_box::GridBox;
use super::grid_clear::GridClear;
use super::grid_update::GridUpdate;
use super::grid_update_adjoint::GridUpdateAdjoint;
use super::lame::{check_poisson, lame_records};
use super::layout::{ParticleState, STATE_STRIDE};
use super::p2g::P2g;
use super::p2g_adjoint::P2gAdjoint;
use super::p2g_bin::P2gBin;
#[cfg(feature = "reference")]
use super::status::SimulationStatus;
use super::status::STATUS_WORDS;
use super::substep_grid::SubstepGrid;
use super::uniforms::MpmUniforms;
use crate::mpm_rules::collider::collider_records;
#[cfg(feature = "reference")]
use crate::mpm_rules::collider::ContactRule;
use crate::mpm_rules::config::{AnchorRule, MpmConfig, Transfer, WALL_MARGIN_CELLS};
use crate::mpm_rules::held_nodes::floor_nodes;
use crate::mpm_rules::stability::min_substeps_per_frame;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::gpu::{GpuBuffer, GpuContext};

/// Most bytes the backward pass spends on keeping the grids of a segment's
/// substeps (K grids of 36 B per node each; with binned scatters 40 B per
/// node + 4 B per particle: 7 × 9.9 MB for a 64³ grid at K = 7 on a GPU,
/// 7 × 11 MB on lavapipe, 28 × 9.9 MB at K = 28). Above it, each substep
/// adjoint recomputes its grid instead (P2G + grid update again, ~40% more
/// backward time on lavapipe). The default of
/// [`MpmOptions::kept_grids_budget`].
pub const KEPT_GRIDS_BUDGET_BYTES: u64 = 512 << 20;

/// Per-particle settings fixed for the simulator's lifetime, and the
/// initial Young's moduli.
#[derive(Clone, Debug)]
pub struct MpmSetup {
    /// Volume of every particle (normalised units; see
    /// [`crate::mpm_rules::config::particle_volume`]).
    pub particle_volume: f64,
    /// Anchored flag per particle: frozen, their nodes held at v = 0, under
    /// the `stencil` and `nearest` rules; under `splats` free material
    /// held through `held_points`.
    pub anchored: Vec<bool>,
    /// Under the `splats` anchoring rule ([`AnchorRule::Splats`]): the rest
    /// positions (normalised) of the scene's dense anchored points, its
    /// anchored splats and fill points, whose nodes at floor(x/dx) the
    /// grid holds at zero velocity ([`crate::mpm_rules::held_nodes`]).
    /// Ignored by the other rules, which hold the anchored particles' own
    /// nodes.
    pub held_points: Vec<[f32; 3]>,
    /// Young's modulus per particle (normalised units) to start with: one
    /// per particle, finite and positive (the time-step bound is checked
    /// for the larger of `youngs_max` and their maximum). Changed later
    /// with [`MpmSimulator::set_youngs`] or on the GPU through
    /// [`MpmSimulator::youngs_buffer_mut`].
    pub youngs: Vec<f32>,
    /// Largest Young's modulus the run may use: the explicit time-step bound
    /// is checked for it at construction (e.g. the top of the fit's range),
    /// so that an optimiser may move E anywhere below it on the GPU.
    pub youngs_max: f64,
}

/// How the two scatters, P2G and the adjoint of G2P, run. A released build
/// always runs [`ScatterMode::Auto`]; the tests that compare the two paths
/// choose them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(not(feature = "reference"), allow(dead_code))]
pub enum ScatterMode {
    /// Cell-binned on CPU adapters (lavapipe), atomic on GPUs.
    #[default]
    Auto,
    /// Cell-binned: [`super::p2g_bin`] then [`super::cell_scatter`], with
    /// G2P* and P2G* walking the same cell lists ([`super::g2p_adjoint`] and
    /// [`super::p2g_adjoint`] `main_cells`). Fastest on CPU adapters, whose
    /// float atomics are slow.
    Binned,
    /// One-kernel atomic scatters: [`super::p2g`], [`super::g2p_adjoint`],
    /// with the per-particle [`super::p2g_adjoint`]. Fastest on GPUs.
    Atomic,
}

/// Construction options of [`MpmSimulator::with_options`]; the defaults
/// suit every caller but tests that compare variants.
#[derive(Clone, Copy, Debug)]
pub struct MpmOptions {
    /// The scatter variant (fixed for the simulator's lifetime; the two give
    /// the same sums up to f32 summation order).
    pub scatters: ScatterMode,
    /// Bytes the backward pass may spend on kept segment grids (0 = every
    /// substep adjoint recomputes its grid).
    pub kept_grids_budget: u64,
    /// Check the explicit time-step bound for `youngs_max` at construction
    /// and for every [`MpmSimulator::set_youngs`]. Off only where a blow-up
    /// is wanted (tests of the breakdown detection): then the run is
    /// unstable and stops with [`MpmError::NonFinite`] or
    /// [`MpmError::LeftBox`].
    pub check_time_step: bool,
}

impl Default for MpmOptions {
    fn default() -> Self {
        Self {
            scatters: ScatterMode::Auto,
            kept_grids_budget: KEPT_GRIDS_BUDGET_BYTES,
            check_time_step: true,
        }
    }
}

pub(crate) struct Kernels {
    pub(crate) p2g: P2g,
    pub(crate) p2g_bin: P2gBin,
    pub(crate) cell_scatter: CellScatter,
    pub(crate) grid_update: GridUpdate,
    pub(crate) g2p: G2p,
    pub(crate) g2p_adjoint: G2pAdjoint,
    pub(crate) grid_update_adjoint: GridUpdateAdjoint,
    pub(crate) p2g_adjoint: P2gAdjoint,
    pub(crate) add_assign: AddAssign,
    pub(crate) grid_bounds: GridBounds,
    pub(crate) grid_box: GridBox,
    pub(crate) grid_clear: GridClear,
}

/// Source of simulator ids (rollouts and backward work name theirs).
static NEXT_SIMULATOR_ID: AtomicU64 = AtomicU64::new(1);

/// A GPU MPM simulation of a fixed particle set on a fixed grid.
pub struct MpmSimulator {
    pub(crate) config: MpmConfig,
    pub(crate) particle_count: u32,
    pub(crate) uniforms: GpuBuffer,
    pub(crate) youngs: GpuBuffer,
    /// Lamé record per particle, from its Poisson's ratio ([`super::lame`]).
    pub(crate) lame: GpuBuffer,
    /// ∂L/∂ν per particle, zeroed by each backward pass and added into by
    /// every substep's adjoint of P2G.
    pub(crate) poisson_grad: GpuBuffer,
    /// The largest Poisson's ratio of a particle (the time-step bound's ν),
    /// as f64 bits (set through `&self`, as E is).
    poisson_max: AtomicU64,
    /// The largest Young's modulus the run may use (checked at
    /// construction; [`MpmSimulator::set_poisson`] checks it again).
    youngs_max: f64,
    /// One word per particle: 1 where it is frozen (anchored, under a rule
    /// that freezes anchored particles).
    pub(crate) anchored: GpuBuffer,
    /// The anchored flag of every particle (frozen or not): what an impulse
    /// leaves alone, as the initial velocity does ([`super::forcing`]).
    pub(crate) anchored_particles: Vec<bool>,
    /// One word per node: 1 where the `splats` anchoring rule holds the
    /// node at every substep, 0 elsewhere (all 0 under the other rules,
    /// whose P2G marks the held nodes); what the grid clear writes into
    /// the anchored flags.
    pub(crate) held_nodes: GpuBuffer,
    pub(crate) grid: SubstepGrid,
    pub(crate) grid_velocity_grad: GpuBuffer,
    pub(crate) grid_grad: GpuBuffer,
    /// Collider records ([`crate::mpm_rules::collider`]), at least one.
    pub(crate) colliders: GpuBuffer,
    /// ∂L/∂μ per collider record, zeroed by each backward pass.
    pub(crate) collider_grad: GpuBuffer,
    pub(crate) status: GpuBuffer,
    /// [`super::status::SimulationStatus::CLEAR`], copied over `status` by
    /// [`MpmSimulator::encode_frame`] inside the caller's encoder.
    #[cfg(feature = "reference")]
    pub(crate) status_clear: GpuBuffer,
    pub(crate) add_uniforms: GpuBuffer,
    pub(crate) bounds: GpuBuffer,
    pub(crate) scratch: [GpuBuffer; 2],
    pub(crate) kernels: Kernels,
    pub(crate) bind_groups: BindGroupCache,
    binned: bool,
    /// Under the FLIP transfer, its kernels and gradient buffers.
    pub(crate) flip: Option<FlipParts>,
    options: MpmOptions,
    id: u64,
    /// Bumped by every change of E, of ν or of a collider's friction coefficient:
    /// a rollout records it, and a backward pass against a rollout run with
    /// other parameters is refused.
    youngs_version: AtomicU64,
}

/// Checks the explicit time-step bound for Young's modulus up to `youngs_max`
/// at the configuration's Poisson's ratio.
pub fn check_stability(config: &MpmConfig, youngs_max: f64) -> Result<(), MpmError> {
    check_stability_at(config, youngs_max, config.poisson)
}

/// Checks the explicit time-step bound for Young's modulus up to `youngs_max`
/// and Poisson's ratio up to `poisson_max` (the bound grows with both).
pub fn check_stability_at(
    config: &MpmConfig,
    youngs_max: f64,
    poisson_max: f64,
) -> Result<(), MpmError> {
    let needed = min_substeps_per_frame(
        config.fps,
        youngs_max,
        poisson_max,
        config.density,
        config.dx(),
    );
    if config.substeps_per_frame < needed {
        return Err(MpmError::TooFewSubsteps {
            substeps: config.substeps_per_frame,
            needed,
            youngs_max,
            poisson: poisson_max,
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
    if let Transfer::Flip { pic_time } = config.transfer {
        if pic_time.is_nan() || pic_time <= 0.0 {
            return bad(format!(
                "the FLIP transfer's PIC time τ = {pic_time} s must be positive (infinite: pure FLIP)"
            ));
        }
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
    for (i, collider) in config.colliders.iter().enumerate() {
        if let Some(problem) = collider.problem() {
            return bad(format!("collider {i}: {problem}"));
        }
    }
    Ok(())
}

impl MpmSimulator {
    /// Builds the simulator with the default [`MpmOptions`].
    pub fn new(ctx: &GpuContext, config: &MpmConfig, setup: &MpmSetup) -> Result<Self, MpmError> {
        Self::with_options(ctx, config, setup, &MpmOptions::default())
    }

    /// Builds the simulator after checking the configuration, the initial
    /// Young's moduli and (unless `options` says not to) the explicit
    /// time-step bound for `setup.youngs_max`.
    pub fn with_options(
        ctx: &GpuContext,
        config: &MpmConfig,
        setup: &MpmSetup,
        options: &MpmOptions,
    ) -> Result<Self, MpmError> {
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
        check_youngs(&setup.youngs, n)?;
        if config.anchoring == AnchorRule::Splats
            && setup.held_points.is_empty()
            && setup.anchored.contains(&true)
        {
            return Err(MpmError::InvalidInput(
                "anchoring \"splats\" holds the nodes of the anchored splats, and none were given \
                 (MpmSetup::held_points)"
                    .into(),
            ));
        }
        let initial_max = setup.youngs.iter().fold(0.0f32, |a, &b| a.max(b)) as f64;
        let youngs_max = setup.youngs_max.max(initial_max);
        if options.check_time_step {
            check_stability(config, youngs_max)?;
        }
        // Nodes 0..=grid_res per axis (both faces of the box), as the twin.
        let per_axis = config.grid_res as usize + 1;
        let nodes = per_axis * per_axis * per_axis;
        let uniforms = MpmUniforms::new(config, setup.particle_volume, n as u32);
        // The frozen particles: the anchored ones, unless the rule leaves
        // them free and holds nodes instead (`splats`).
        let freezes = config.anchoring.freezes_anchored_particles();
        let anchored: Vec<u32> = setup
            .anchored
            .iter()
            .map(|&a| (a && freezes) as u32)
            .collect();
        let held_nodes = held_node_flags(config, &setup.held_points, per_axis);
        let state_floats = n * STATE_STRIDE;
        let flip = matches!(config.transfer, Transfer::Flip { .. });
        let binned = match options.scatters {
            ScatterMode::Auto => ctx.adapter_info.device_type == wgpu::DeviceType::Cpu,
            ScatterMode::Binned => true,
            ScatterMode::Atomic => false,
        };
        Ok(Self {
            config: config.clone(),
            particle_count: n as u32,
            uniforms: ctx.uniform_buffer("mpm uniforms", &uniforms)?,
            youngs: ctx.storage_from_slice("mpm youngs", &setup.youngs)?,
            lame: ctx.storage_from_slice(
                "mpm lame per youngs",
                &lame_records(&vec![config.poisson; n]),
            )?,
            poisson_grad: ctx.storage_zeroed::<f32>("mpm poisson grad", n)?,
            poisson_max: AtomicU64::new(config.poisson.to_bits()),
            youngs_max,
            anchored: ctx.storage_from_slice("mpm frozen particles", &anchored)?,
            anchored_particles: setup.anchored.clone(),
            held_nodes: ctx.storage_from_slice("mpm held nodes", &held_nodes)?,
            grid: SubstepGrid::new(ctx, "mpm", nodes, n, binned, flip)?,
            grid_velocity_grad: ctx.storage_zeroed::<f32>("mpm grid velocity grad", nodes * 4)?,
            grid_grad: ctx.storage_zeroed::<f32>("mpm grid (mv, m) grad", nodes * 4)?,
            colliders: ctx
                .storage_from_slice("mpm colliders", &collider_records(&config.colliders))?,
            collider_grad: ctx.storage_zeroed::<f32>(
                "mpm collider friction grad",
                config.colliders.len().max(1),
            )?,
            status: ctx.storage_zeroed::<u32>("mpm status", STATUS_WORDS)?,
            #[cfg(feature = "reference")]
            status_clear: ctx.storage_from_slice("mpm status clear", &SimulationStatus::CLEAR)?,
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
            bind_groups: BindGroupCache::default(),
            binned,
            flip: match flip {
                true => Some(FlipParts::new(ctx, nodes)?),
                false => None,
            },
            options: *options,
            id: NEXT_SIMULATOR_ID.fetch_add(1, Ordering::Relaxed),
            youngs_version: AtomicU64::new(0),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &MpmConfig {
        &self.config
    }

    /// The construction options.
    #[cfg(feature = "reference")]
    pub fn options(&self) -> &MpmOptions {
        &self.options
    }

    /// Number of particles.
    pub fn particle_count(&self) -> usize {
        self.particle_count as usize
    }

    /// Unique per simulator (rollouts and backward work record theirs).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Whether the two scatters, P2G and the adjoint of G2P, run cell-binned
    /// ([`ScatterMode`]; fixed at construction).
    pub fn binned_scatters(&self) -> bool {
        self.binned
    }

    /// Bytes the backward pass may spend on kept segment grids.
    pub(crate) fn kept_grids_budget(&self) -> u64 {
        self.options.kept_grids_budget
    }

    /// Sets Young's modulus per particle after checking the values (finite,
    /// positive, one per particle) and, unless the simulator was built
    /// without it, the explicit time-step bound for their maximum. Rollouts
    /// run before this call can no longer be back-propagated
    /// ([`MpmError::StaleRollout`]).
    pub fn set_youngs(&self, ctx: &GpuContext, youngs: &[f32]) -> Result<(), MpmError> {
        check_youngs(youngs, self.particle_count())?;
        if self.options.check_time_step {
            let max = youngs.iter().fold(0.0f32, |a, &b| a.max(b));
            let poisson_max = f64::from_bits(self.poisson_max.load(Ordering::Relaxed));
            check_stability_at(&self.config, max as f64, poisson_max)?;
        }
        ctx.write(&self.youngs, youngs);
        self.youngs_version.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The per-particle Young's modulus buffer (f32), for a caller that
    /// reads or writes E on the GPU (an optimiser step). It is only handed
    /// out mutably, and marks the moduli as changed, so that rollouts run
    /// before can no longer be back-propagated ([`MpmError::StaleRollout`]):
    /// borrow it for every update, and submit the update before the next
    /// rollout (a rollout submitted between the recording and the
    /// submission of an update would run with the old E under the new
    /// version). Writes bypass [`MpmSimulator::set_youngs`]'s checks: keep E
    /// positive and within the `youngs_max` given at construction, whose
    /// time-step bound was checked (the fit clamps log10 E to its range
    /// after every step).
    #[cfg(feature = "reference")]
    pub fn youngs_buffer_mut(&mut self) -> &GpuBuffer {
        self.youngs_version.fetch_add(1, Ordering::Relaxed);
        &self.youngs
    }

    /// Sets Poisson's ratio per particle (each in `[0, 0.5)`; the
    /// configuration's `poisson` until then) after checking, unless the
    /// simulator was built without it, the explicit time-step bound for
    /// the construction's `youngs_max` at their maximum. Rollouts run
    /// before this call can no longer be back-propagated
    /// ([`MpmError::StaleRollout`]).
    pub fn set_poisson(&self, ctx: &GpuContext, poisson: &[f64]) -> Result<(), MpmError> {
        check_poisson(poisson, self.particle_count())?;
        let max = poisson.iter().fold(0.0f64, |a, &b| a.max(b));
        if self.options.check_time_step {
            check_stability_at(&self.config, self.youngs_max, max)?;
        }
        ctx.write(&self.lame, &lame_records(poisson));
        self.poisson_max.store(max.to_bits(), Ordering::Relaxed);
        self.youngs_version.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Sets the friction coefficient μ of collider `index`, a
    /// [`ContactRule::Friction`] one, after checking it (finite, ≥ 0).
    /// Rollouts run before this call can no longer be back-propagated
    /// ([`MpmError::StaleRollout`]).
    #[cfg(feature = "reference")]
    pub fn set_friction(
        &mut self,
        ctx: &GpuContext,
        index: usize,
        mu: f64,
    ) -> Result<(), MpmError> {
        let Some(collider) = self.config.colliders.get_mut(index) else {
            return Err(MpmError::InvalidInput(format!(
                "no collider {index}: the simulation has {}",
                self.config.colliders.len()
            )));
        };
        if collider.friction().is_none() {
            return Err(MpmError::InvalidInput(format!(
                "collider {index} has the {:?} rule, not friction",
                collider.contact
            )));
        }
        if !(mu.is_finite() && mu >= 0.0) {
            return Err(MpmError::InvalidInput(format!(
                "friction coefficient {mu} of collider {index} must be finite and ≥ 0"
            )));
        }
        collider.contact = ContactRule::Friction(mu);
        ctx.write(&self.colliders, &collider_records(&self.config.colliders));
        self.youngs_version.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// How many times E, ν or a friction coefficient has changed since
    /// construction (rollouts record it; [`MpmSimulator::backward`]
    /// compares).
    pub fn youngs_version(&self) -> u64 {
        self.youngs_version.load(Ordering::Relaxed)
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

    /// Nodes of the grid (grid_res + 1 per axis).
    pub(crate) fn node_count(&self) -> usize {
        let per_axis = self.config.grid_res as usize + 1;
        per_axis * per_axis * per_axis
    }

    /// Bytes a rollout of `frames` frames keeps with
    /// [`super::RolloutOptions::keep_every_substep`]: every substep's state
    /// and grid of every frame (the backward's replay slot included).
    pub fn kept_rollout_bytes(&self, frames: u32) -> u64 {
        u64::from(frames) * u64::from(self.config.substeps_per_frame) * self.kept_substep_bytes()
    }

    /// Bytes of one kept substep: its state and its grid.
    pub(crate) fn kept_substep_bytes(&self) -> u64 {
        (self.particle_count() * STATE_STRIDE * 4) as u64 + self.substep_grid_bytes()
    }

    /// Whether the grids of `every` substeps fit the kept-grids budget (a
    /// segment of that many keeps them).
    pub(crate) fn keeps_grids_for(&self, every: u32) -> bool {
        u64::from(every) * self.substep_grid_bytes() <= self.kept_grids_budget()
    }

    /// Whether a frame's S substep grids fit the kept-grids budget, which
    /// [`super::RolloutOptions::keep_every_substep`] needs (else it keeps
    /// checkpoints).
    pub fn keeps_whole_frames(&self) -> bool {
        self.keeps_grids_for(self.config.substeps_per_frame)
    }

    /// Bytes of one extra [`SubstepGrid`].
    pub(crate) fn substep_grid_bytes(&self) -> u64 {
        SubstepGrid::bytes(
            self.node_count(),
            self.particle_count(),
            self.binned,
            self.flip.is_some(),
        )
    }

    /// A substep grid of a kept segment ([`super::backward_work`]),
    /// labelled `label`.
    pub(crate) fn new_substep_grid(
        &self,
        ctx: &GpuContext,
        label: &str,
    ) -> Result<SubstepGrid, MpmError> {
        SubstepGrid::new(
            ctx,
            label,
            self.node_count(),
            self.particle_count(),
            self.binned,
            self.flip.is_some(),
        )
    }

    /// Drops the cached bind groups (and their hold on the buffers they bind).
    pub(crate) fn release_bind_groups(&self) {
        self.bind_groups.clear();
    }
}

/// The held-node flags of [`MpmSimulator::held_nodes`]: 1 at the node
/// floor(x/dx) of every held point under the `splats` rule, in the grid's
/// flat node order (x slowest, as `node_index` in shaders/mpm/params.wgsl);
/// all 0 under the other rules.
fn held_node_flags(config: &MpmConfig, points: &[[f32; 3]], per_axis: usize) -> Vec<u32> {
    let mut flags = vec![0u32; per_axis * per_axis * per_axis];
    if config.anchoring == AnchorRule::Splats {
        let points = points.iter().map(|p| p.map(f64::from));
        for [i, j, k] in floor_nodes(points, config.grid_res) {
            flags[(i as usize * per_axis + j as usize) * per_axis + k as usize] = 1;
        }
    }
    flags
}

/// Checks Young's moduli: one per particle, finite and positive.
fn check_youngs(youngs: &[f32], particles: usize) -> Result<(), MpmError> {
    if youngs.len() != particles {
        return Err(MpmError::InvalidInput(format!(
            "{} Young's moduli for {particles} particles",
            youngs.len(),
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
