//! Settings of one MPM simulation, in the simulator's normalised units: the
//! simulation box is mapped to \[0,1\]^3, `dx = 1/grid_res`, time in seconds
//! (docs/design.md § Units and frames). Shared by the GPU simulator and its f64
//! CPU twin so both implement exactly the same rules, which are fixed here.
//!
//! Per substep (docs/design.md § MPM):
//! 1. P2G (MLS-MPM, APIC, quadratic B-splines).
//! 2. Grid: `v_i = mv_i / m_i` for `m_i > 0`; `v_i += dt·gravity`;
//!    `v_i *= exp(−damping·dt)`; then boundary conditions in this order:
//!    held nodes ([`AnchorRule`]) get `v_i = 0`; the colliders, in the order listed, change the
//!    velocity of the nodes inside or on them by their contact rules
//!    ([`super::collider`]); wall nodes (node index `< WALL_MARGIN_CELLS` or
//!    `> grid_res − WALL_MARGIN_CELLS` along an axis) get, for
//!    [`WallMode::Sticky`], `v_i = 0`, for [`WallMode::Slip`], the velocity
//!    component along that axis zeroed when it points into the wall
//!    (`v_a < 0` at the low wall, `v_a > 0` at the high wall).
//! 3. G2P: `v_p`, `C_p`, `F_p ← (I + dt C_p) F_p`, `x_p += dt v_p`;
//!    under the `stencil` and `nearest` rules anchored particles keep
//!    `x_p`, `F_p`, and have `v_p = 0`, `C_p = 0`.
//!    With [`Transfer::Flip`] the particle velocity keeps what the
//!    transfers would smooth away: `v_p ← Σ w v_i + α (v_p − Σ w v̂_i)`,
//!    `v̂_i = mv̂_i/m̂_i` the velocity the free particles carried to the
//!    node, without the stress impulse (`m̂_i = Σ w m_p`,
//!    `mv̂_i = Σ w m_p (v_p + C_p dᵢ)` over free particles), `α = exp(−dt/τ)`
//!    ([`Transfer::flip_share`]); C, F and x as in APIC.
//!
//! The scene's default anchored-node rule, [`AnchorRule::Splats`], is
//! PhysDreamer's: its code zeroes the node at `floor(x_p/dx)` of each
//! anchored particle, one per splat, and leaves the anchored particles
//! free; physfit takes those nodes from the scene's anchored splats and
//! fill points, so the held layer does not depend on how many drivers
//! there are. The older [`AnchorRule::Stencil`] zeroes every node an
//! anchored driver touches (all 27 of its stencil with `w_ip > 0`) and
//! freezes the driver: a thicker clamp, which on the fox alone leaves the
//! free motion about 10% smaller by frame 12 (docs/design.md § MPM,
//! "Anchored region"). Fitted E values carry over between the rules only
//! approximately near anchors.

use super::collider::Collider;

/// Cells of margin kept from every wall (docs/design.md § Units and frames).
pub const WALL_MARGIN_CELLS: u32 = 3;

/// Smallest grid the simulator accepts: the wall margin on each side plus
/// room for a quadratic B-spline stencil.
pub const MIN_GRID_RES: u32 = 2 * WALL_MARGIN_CELLS + 4;

/// Wall boundary condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WallMode {
    /// Wall nodes have zero velocity.
    Sticky,
    /// Wall nodes lose the velocity component pointing into the wall.
    Slip,
}

/// Which grid nodes an anchored particle holds at zero velocity
/// (`simulation.anchoring`; docs/design.md § MPM, "Anchored region").
///
/// No `Default`: the scene's default is [`AnchorRule::Splats`]
/// (`SimulationConfig`), which needs the scene's anchored points, so a
/// simulation set up without a scene names its rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnchorRule {
    /// Every node the particle's quadratic stencil reaches (`w > 0`, 27
    /// nodes): a held layer about 1.5 cells beyond the anchored particles,
    /// so its thickness changes with the grid.
    Stencil,
    /// The node nearest the particle (its stencil's centre): a held layer
    /// at most half a cell beyond the anchored particles, so a coarse grid
    /// holds nearly what a fine one holds.
    Nearest,
    /// PhysDreamer's rule over the scene's dense points: the node at
    /// `floor(x/dx)` of every anchored splat and fill point at rest, fixed
    /// for the run ([`super::held_nodes::floor_nodes`]); the anchored
    /// particles themselves are not frozen
    /// ([`AnchorRule::freezes_anchored_particles`]). Anchored splats are far denser
    /// than the drivers, so the held layer has no gaps however few drivers
    /// there are; it lies within one cell below the anchored points on each
    /// axis, and tends to the anchored region as the grid refines. The
    /// scene's default: closed like the stencil, thin like `nearest`, and
    /// the rule the other engines' frames were made with.
    Splats,
}

/// How G2P sets the particle velocity (`simulation.transfer`; docs/design.md
/// § MPM, "Transfer"). APIC's particle→grid→particle round trip keeps
/// what each particle's affine `(v_p, C_p)` represents over its stencil
/// and smooths the rest away at every substep, whatever the substep's
/// length, so on a fixed grid its damping per unit time grows with the
/// substeps and the motion does not converge as dt shrinks
/// (docs/benchmarks.md, "The simulator against its own time step").
/// FLIP adds back the particle's own velocity less the part the grid
/// carried, so only a share `1 − α` per substep is smoothed, with
/// `α = exp(−dt/τ)`: a smoothing per unit of time, which converges in dt.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Transfer {
    /// `v_p ← Σ w v_i` (APIC: the PIC velocity with the affine C).
    #[default]
    Apic,
    /// `v_p ← Σ w v_i + α (v_p − Σ w v̂_i)` with `α = exp(−dt/τ)`,
    /// `τ = pic_time` seconds (infinite: pure FLIP, `α = 1`).
    Flip {
        /// τ, seconds: the time over which the PIC share smooths.
        pic_time: f64,
    },
}

impl Transfer {
    /// The scene's word for the transfer (`simulation.transfer`).
    pub fn word(self) -> &'static str {
        match self {
            Transfer::Apic => "apic",
            Transfer::Flip { .. } => "flip",
        }
    }

    /// τ, seconds, under FLIP (infinite: pure FLIP); none under APIC.
    pub fn pic_time(self) -> Option<f64> {
        match self {
            Transfer::Apic => None,
            Transfer::Flip { pic_time } => Some(pic_time),
        }
    }

    /// The FLIP share α of a substep of `dt` seconds: 0 for APIC,
    /// `exp(−dt/τ)` for FLIP (1 when τ is infinite).
    pub fn flip_share(self, dt: f64) -> f64 {
        match self {
            Transfer::Apic => 0.0,
            Transfer::Flip { pic_time } => (-dt / pic_time).exp(),
        }
    }
}

impl AnchorRule {
    /// The scene's word for the rule.
    pub fn word(self) -> &'static str {
        match self {
            AnchorRule::Stencil => "stencil",
            AnchorRule::Nearest => "nearest",
            AnchorRule::Splats => "splats",
        }
    }

    /// Whether anchored particles are frozen (keep x and F, v = 0): under
    /// `stencil` and `nearest` they are, and hold nodes by where they sit.
    /// Under `splats` they are not: they are material like the rest,
    /// moved and strained by the grid, and only the held nodes hold them,
    /// as in PhysDreamer's simulator. Frozen, the anchored base exerts no
    /// elastic force on the free nodes above its held layer (its F stays
    /// the identity), so the object it holds swings more loosely than the
    /// same material held PhysDreamer's way (docs/benchmarks.md, "The
    /// anchored splats' rule").
    pub fn freezes_anchored_particles(self) -> bool {
        self != AnchorRule::Splats
    }

    /// Every rule, in the order the scene's documentation lists them.
    pub const ALL: [AnchorRule; 3] = [AnchorRule::Stencil, AnchorRule::Nearest, AnchorRule::Splats];

    /// The rule named `word` ([`AnchorRule::word`]).
    pub fn from_word(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.word() == word)
    }
}

/// Physical and numerical settings of a simulation (normalised units).
#[derive(Clone, Debug, PartialEq)]
pub struct MpmConfig {
    /// Grid nodes per unit length (`dx = 1/grid_res`).
    pub grid_res: u32,
    /// Frames per second of the reference video.
    pub fps: f64,
    /// Substeps per frame (`dt = 1/(fps·substeps)`).
    pub substeps_per_frame: u32,
    /// Gravity in normalised units (box lengths / s²).
    pub gravity: [f64; 3],
    /// Grid-velocity damping rate in 1/s (`v *= exp(−damping·dt)` per substep).
    pub damping: f64,
    /// Density ρ (kg/m³ in normalised units, PhysDreamer uses 2000).
    pub density: f64,
    /// Poisson's ratio ν, in [0, 0.5).
    pub poisson: f64,
    /// Wall condition.
    pub walls: WallMode,
    /// Static colliders ([`super::collider`]), applied in this order.
    pub colliders: Vec<Collider>,
    /// Which nodes an anchored particle holds.
    pub anchoring: AnchorRule,
    /// How G2P sets the particle velocity.
    pub transfer: Transfer,
}

impl MpmConfig {
    /// Grid spacing `dx = 1/grid_res`.
    pub fn dx(&self) -> f64 {
        1.0 / self.grid_res as f64
    }

    /// Substep length `dt = 1/(fps·substeps)`.
    pub fn dt(&self) -> f64 {
        1.0 / (self.fps * self.substeps_per_frame as f64)
    }

    /// Lamé parameters `(μ, λ)` for Young's modulus `e` (docs/design.md § MPM):
    /// `μ = E/(2(1+ν))`, `λ = Eν/((1+ν)(1−2ν))`.
    pub fn lame(&self, e: f64) -> (f64, f64) {
        lame(e, self.poisson)
    }
}

/// Lamé parameters `(μ, λ)` from Young's modulus and Poisson's ratio.
pub fn lame(e: f64, poisson: f64) -> (f64, f64) {
    let mu = e / (2.0 * (1.0 + poisson));
    let lambda = e * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson));
    (mu, lambda)
}

/// `(dμ̂/dν, dλ̂/dν)` of the Lamé parameters per unit Young's modulus
/// `μ̂ = 1/(2(1+ν))`, `λ̂ = ν/((1+ν)(1−2ν))` ([`lame`] at E = 1):
/// `−1/(2(1+ν)²)` and `(1 + 2ν²)/((1+ν)(1−2ν))²`. The chain rule from a
/// stress's ∂L/∂μ̂, ∂L/∂λ̂ to ∂L/∂ν (the GPU adjoint and the CPU twin).
pub fn lame_per_youngs_poisson_derivative(poisson: f64) -> (f64, f64) {
    let d = (1.0 + poisson) * (1.0 - 2.0 * poisson);
    (
        -0.5 / ((1.0 + poisson) * (1.0 + poisson)),
        (1.0 + 2.0 * poisson * poisson) / (d * d),
    )
}

/// The occupied volume of a point set (normalised units): the number of
/// cells of a grid of spacing `dx/2` that hold at least one point, times
/// the cell volume `(dx/2)³`. Half-cell voxels resolve thin parts of an
/// object without counting the gaps between sparse points as solid.
/// Positions are in normalised units; those outside [0,1)³ are ignored.
pub fn occupied_volume(positions: &[[f64; 3]], grid_res: u32) -> f64 {
    let n = (grid_res * 2) as i64;
    let mut occupied = std::collections::HashSet::new();
    for p in positions {
        let cell = [
            (p[0] * n as f64).floor() as i64,
            (p[1] * n as f64).floor() as i64,
            (p[2] * n as f64).floor() as i64,
        ];
        if cell.iter().all(|&c| (0..n).contains(&c)) {
            occupied.insert(cell);
        }
    }
    let voxel = (1.0 / n as f64).powi(3);
    occupied.len() as f64 * voxel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lame_matches_textbook_values() {
        let (mu, lambda) = lame(1.0e6, 0.25);
        assert!((mu - 4.0e5).abs() < 1e-6);
        assert!((lambda - 4.0e5).abs() < 1e-6);
    }

    #[test]
    fn occupied_volume_of_a_filled_block() {
        // 8 particles per half-cell voxel over a 4×4×4 block of voxels.
        let grid_res = 16;
        let h = 1.0 / 32.0;
        let mut pts = Vec::new();
        for i in 0..8 {
            for j in 0..8 {
                for k in 0..8 {
                    pts.push([
                        0.25 + (i as f64 + 0.5) * h / 2.0,
                        0.25 + (j as f64 + 0.5) * h / 2.0,
                        0.25 + (k as f64 + 0.5) * h / 2.0,
                    ]);
                }
            }
        }
        // The 4×4×4 half-cell voxels of side h = dx/2 they occupy.
        let occupied = occupied_volume(&pts, grid_res);
        assert!((occupied - 64.0 * h * h * h).abs() < 1e-15, "{occupied}");
    }
}
