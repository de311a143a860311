//! Differentiable MLS-MPM (docs/design.md § MPM, § Adjoint).
//!
//! One kernel, one file pair: `p2g`, `grid_update`, `g2p` and their adjoints
//! `g2p_adjoint`, `grid_update_adjoint`, `p2g_adjoint` (shaders/mpm/*.wgsl).
//! On CPU adapters P2G runs cell-binned instead (`p2g_bin`, then
//! `cell_scatter`; see [`p2g_bin`]), and the adjoint of the substep walks
//! the same cell lists per column (`g2p_adjoint` and `p2g_adjoint`, entry
//! points `main_cells`).
//! The per-node kernels run over the active box that `grid_bounds` +
//! `grid_box` compute on the GPU (indirect dispatch).
//! Shader files without a kernel are `#import` modules of shared math
//! (values in, values out): `params`, `boundary`, `collider`, `corotated`, `node_box`,
//! `particle_state` (state record), `stencil_node` (w, ∇w, x_i − x_p),
//! `p2g_particle` (p2g ↔ cell_scatter), `g2p_adjoint_particle` (the adjoint of
//! G2P, shared by its grid side `g2p_adjoint` and its
//! particle side, which P2G* computes in the same walk over the 27 nodes of
//! x_n as the adjoint of P2G), `p2g_adjoint_particle` (that walk's math,
//! shared by `p2g_adjoint`'s two entry points), `cell_walk` (the node
//! terms and window of the cell-list scatters).
//! Impulses (forward only, for `physfit render --params`) add
//! `external_force` between P2G and the grid update of the substeps they act
//! in ([`forcing`]).
//! The host side reads top to bottom as the pipeline: [`simulator`] (the
//! [`MpmSimulator`]: settings, buffers, kernels, E and states) →
//! [`substep`] (one substep's stages, forward and adjoint, recorded into a
//! command encoder, reusing bind groups per set of bound buffers:
//! [`bind_group_cache`]) → [`rollout`] (frames forward) → [`backward`] (the
//! checkpointed backward pass, on the caller's [`BackwardWork`]:
//! [`backward_work`]; the truncated pass run frame by frame, each frame's
//! adjoint right after its forward: [`truncated_pass`]).
//! On the CPU, in [`crate::mpm_rules`] (shared with the scene loader):
//! [`config`](crate::mpm_rules::config), [`stability`](crate::mpm_rules::stability)
//! (the explicit time-step bound) and [`voxel`](crate::mpm_rules::voxel)
//! (the grid cells the material occupies, and the interior fill of closed
//! objects).

pub mod add_assign;
pub mod backward;
pub mod backward_work;
pub mod bind_group_cache;
pub mod cell_scatter;
pub mod error;
pub mod external_force;
pub mod forcing;
pub mod flip;
pub mod flip_clear;
pub mod flip_gather;
pub mod flip_gather_adjoint;
pub mod flip_grid_adjoint;
pub mod flip_scatter;
pub mod flip_scatter_adjoint;
pub mod g2p;
pub mod g2p_adjoint;
pub mod grid_bounds;
pub mod grid_box;
pub mod grid_clear;
pub mod grid_update;
pub mod grid_update_adjoint;
pub mod lame;
pub mod layout;
pub mod p2g;
pub mod p2g_adjoint;
pub mod p2g_bin;
pub mod rollout;
pub mod simulator;
pub mod status;
pub mod substep;
pub mod substep_grid;
pub mod truncated_pass;
pub mod uniforms;

/// The simulator's configuration and collider types, defined with the CPU
/// rules the scene loader shares ([`crate::mpm_rules`]).
pub use crate::mpm_rules::{MpmConfig, WallMode};
#[cfg(feature = "reference")]
pub use crate::mpm_rules::{Collider, ColliderShape, ContactRule};
pub use backward::{BackwardOptions, FrameGradient, GradientFlow, MpmGradients};
#[cfg(feature = "reference")]
pub use backward::HostMpmGradients;
pub use backward_work::BackwardWork;
pub use error::MpmError;
pub use forcing::{ForcedRun, ImpulseForce};
pub use layout::ParticleState;
pub use rollout::{Rollout, RolloutOptions};
pub use simulator::{MpmSetup, MpmSimulator};
#[cfg(feature = "reference")]
pub use simulator::{MpmOptions, ScatterMode, KEPT_GRIDS_BUDGET_BYTES};
pub use substep::{StageBuffers, SubstepStage};
pub use truncated_pass::TruncatedPass;
