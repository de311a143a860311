//! Background grid of one substep and the grid update (src/mpm_rules/config.rs,
//! step 2): `v_i = mv_i/m_i`, `+ dt·gravity`, `·exp(−damping·dt)`, then
//! anchored nodes, then the colliders ([`super::collider`]), then walls.
//!
//! Nodes have global indices 0..=grid_res per axis (positions `i·dx`, so
//! the box `[0, 1]` has nodes on both faces and the wall rule "index < 3 or
//! index > grid_res − 3" marks 3 node layers at each side). The twin stores
//! only the bounding box of the nodes the particles touch.

use super::collider::after_colliders;
use super::mat3::Vec3;
use super::stencil::{offsets, Stencil};
use super::MpmSetup64;
use crate::mpm_rules::config::{WallMode, WALL_MARGIN_CELLS};

/// Grid mass and momentum after P2G, over a box of nodes.
#[derive(Clone, Debug)]
pub struct Grid64 {
    /// Global index of the box's lowest node.
    pub origin: [i64; 3],
    /// Nodes per axis in the box.
    pub dims: [usize; 3],
    /// `m_i`.
    pub mass: Vec<f64>,
    /// `mv_i` (mass times velocity, including the stress impulse).
    pub momentum: Vec<Vec3>,
    /// `m̂_i = Σ w m_p` over the free particles: the mass of the carried
    /// momentum (anchored particles carry no velocity of their own).
    pub carried_mass: Vec<f64>,
    /// `mv̂_i = Σ w m_p (v_p + C_p dᵢ)` over the free particles: the
    /// momentum they carry, without the stress impulse (FLIP's `v̂_i`,
    /// src/mpm_rules/config.rs).
    pub carried: Vec<Vec3>,
    /// Node held at zero velocity by the anchoring rule.
    pub anchored: Vec<bool>,
}

impl Grid64 {
    /// An empty grid over the nodes of `stencils`.
    ///
    /// # Panics
    /// If a stencil leaves the nodes 0..=grid_res (a particle left the box):
    /// the twin is a test oracle and such a state is a bug in the test.
    pub fn covering(stencils: &[Stencil], grid_res: u32) -> Self {
        let mut lo = [i64::MAX; 3];
        let mut hi = [i64::MIN; 3];
        for (p, s) in stencils.iter().enumerate() {
            for a in 0..3 {
                assert!(
                    s.base[a] >= 0 && s.base[a] + 2 <= grid_res as i64,
                    "particle {p} left the simulation box (base node {:?}, grid_res {grid_res})",
                    s.base
                );
                lo[a] = lo[a].min(s.base[a]);
                hi[a] = hi[a].max(s.base[a] + 2);
            }
        }
        if stencils.is_empty() {
            lo = [0; 3];
            hi = [-1; 3];
        }
        let dims: [usize; 3] = std::array::from_fn(|a| (hi[a] - lo[a] + 1) as usize);
        let n = dims[0] * dims[1] * dims[2];
        Grid64 {
            origin: lo,
            dims,
            mass: vec![0.0; n],
            momentum: vec![[0.0; 3]; n],
            carried_mass: vec![0.0; n],
            carried: vec![[0.0; 3]; n],
            anchored: vec![false; n],
        }
    }

    /// Whether global node `node` lies in the box.
    pub fn contains(&self, node: [i64; 3]) -> bool {
        (0..3).all(|a| node[a] >= self.origin[a] && node[a] < self.origin[a] + self.dims[a] as i64)
    }

    /// Storage index of global node `node`.
    pub fn index(&self, node: [i64; 3]) -> usize {
        let l: [usize; 3] = std::array::from_fn(|a| (node[a] - self.origin[a]) as usize);
        (l[0] * self.dims[1] + l[1]) * self.dims[2] + l[2]
    }

    /// Global node of storage index `index`.
    pub fn node(&self, index: usize) -> [i64; 3] {
        let l = [
            index / (self.dims[1] * self.dims[2]),
            (index / self.dims[2]) % self.dims[1],
            index % self.dims[2],
        ];
        std::array::from_fn(|a| self.origin[a] + l[a] as i64)
    }

    /// Position of the node at storage index `index`, normalised units.
    pub fn position(&self, index: usize, dx: f64) -> Vec3 {
        self.node(index).map(|c| c as f64 * dx)
    }

    /// Storage indices of a stencil's 27 nodes, in [`offsets`] order.
    pub fn stencil_indices(&self, s: &Stencil) -> [usize; 27] {
        let mut out = [0; 27];
        for (n, o) in offsets().enumerate() {
            out[n] = self.index(s.node(o));
        }
        out
    }
}

/// Grid velocities after the update, with the boundary-condition mask the
/// adjoint needs.
#[derive(Clone, Debug)]
pub struct GridVelocity64 {
    /// Updated `v_i` (zero where `m_i = 0`).
    pub velocity: Vec<Vec3>,
    /// Per component: true where the walls and anchors left it, false
    /// where they zeroed it (a zeroed component passes zero gradient).
    pub pass: Vec<[bool; 3]>,
    /// The damped velocity before the colliders (the adjoint replays them
    /// from it).
    pub before_colliders: Vec<Vec3>,
    /// `v̂_i = mv̂_i/m̂_i`, the velocity the free particles carried to the
    /// node (zero where `m̂_i = 0`): what FLIP's G2P subtracts.
    pub carried: Vec<Vec3>,
}

/// The grid update of src/mpm_rules/config.rs step 2.
pub fn grid_update(setup: &MpmSetup64, grid: &Grid64) -> GridVelocity64 {
    let config = &setup.config;
    let dt = config.dt();
    let decay = (-config.damping * dt).exp();
    let n = grid.mass.len();
    let mut velocity = vec![[0.0; 3]; n];
    let mut pass = vec![[true; 3]; n];
    let mut before_colliders = vec![[0.0; 3]; n];
    let mut carried = vec![[0.0; 3]; n];
    for i in 0..n {
        let carried_mass = grid.carried_mass[i];
        if carried_mass > 0.0 {
            carried[i] = grid.carried[i].map(|c| c / carried_mass);
        }
        let m = grid.mass[i];
        if m <= 0.0 {
            continue;
        }
        let u: Vec3 =
            std::array::from_fn(|a| (grid.momentum[i][a] / m + dt * config.gravity[a]) * decay);
        before_colliders[i] = u;
        let mut v = if grid.anchored[i] {
            u
        } else {
            let colliders = &config.colliders;
            after_colliders(
                colliders,
                &grid.position(i, config.dx()),
                &u,
                colliders.len(),
            )
        };
        let mask = boundary_mask(setup, grid, i, &v);
        for a in 0..3 {
            if !mask[a] {
                v[a] = 0.0;
            }
        }
        velocity[i] = v;
        pass[i] = mask;
    }
    GridVelocity64 {
        velocity,
        pass,
        before_colliders,
        carried,
    }
}

/// Which components of the velocity `v` of node `i` (damped, then through
/// the colliders) survive the other boundary conditions: anchored nodes
/// lose all; wall nodes lose all (sticky) or the component pointing into
/// the wall (slip).
fn boundary_mask(setup: &MpmSetup64, grid: &Grid64, i: usize, v: &Vec3) -> [bool; 3] {
    if grid.anchored[i] {
        return [false; 3];
    }
    let node = grid.node(i);
    let res = setup.config.grid_res as i64;
    let margin = WALL_MARGIN_CELLS as i64;
    let mut mask = [true; 3];
    for a in 0..3 {
        let low = node[a] < margin;
        let high = node[a] > res - margin;
        match setup.config.walls {
            WallMode::Sticky => {
                if low || high {
                    return [false; 3];
                }
            }
            WallMode::Slip => {
                if (low && v[a] < 0.0) || (high && v[a] > 0.0) {
                    mask[a] = false;
                }
            }
        }
    }
    mask
}
