// Uniforms shared by every MPM kernel (src/mpm/uniforms.rs, same layout)
// and the particle/grid layouts (src/mpm/layout.rs documents them):
// - particle state: AoS, 24 f32 per particle: x (3), v (3), C (9, row-major),
//   F (9, row-major);
// - grid: 4 f32 per node (m, mvx, mvy, mvz); nodes at positions
//   (i, j, k)·dx with i, j, k in [0, grid_res] (nodes on both faces of the
//   box, as the f64 twin), node (i, j, k) at (i·n + j)·n + k, n = grid_res + 1.

struct MpmParams {
    grid_res: u32,
    particle_count: u32,
    // 0 = sticky, 1 = slip (src/mpm/config.rs WallMode).
    wall_mode: u32,
    wall_margin: u32,
    dx: f32,
    inv_dx: f32,
    dt: f32,
    particle_volume: f32,
    particle_mass: f32,
    // exp(−damping·dt).
    damping_factor: f32,
    // μ/E and λ/E at the configuration's ν (Lamé parameters per unit
    // Young's modulus). The kernels read each particle's own from its
    // `lame` record instead (src/mpm/lame.rs: ν per particle).
    mu_per_youngs: f32,
    lambda_per_youngs: f32,
    gravity: vec3<f32>,
    // Records in the collider buffer (mpm/collider, src/mpm/collider.rs).
    collider_count: u32,
    // 0: an anchored particle holds every node its stencil reaches (w > 0);
    // 1: only its stencil's centre, the node nearest it; 2: no particle
    // marks a node, the grid clear writes the fixed held nodes of the
    // anchored splats (src/mpm_rules/config.rs AnchorRule).
    anchor_rule: u32,
    // The FLIP transfer's share α = exp(−dt/τ) of a particle's own velocity
    // kept past the grid; 0 for APIC (src/mpm_rules/config.rs Transfer).
    flip_share: f32,
    _pad1: u32,
    _pad2: u32,
}

// Whether an anchored particle holds stencil node `o` (offsets 0..2 per
// axis) of weight `w` under the scene's anchoring rule (never under
// `splats`, whose held nodes grid_clear.wgsl writes).
fn holds_node(o: vec3<u32>, w: f32, p: MpmParams) -> bool {
    if p.anchor_rule == 2u {
        return false;
    }
    if p.anchor_rule == 1u {
        return all(o == vec3<u32>(1u, 1u, 1u));
    }
    return w > 0.0;
}

// Whether an anchored particle holds every node its stencil reaches (the
// `stencil` rule): then its P2G terms land on held nodes only, whose
// velocity the grid update sets to 0 whatever their mass and momentum, and
// its adjoint reads ∂L/∂(m_i, mv_i) = 0 and v_i = 0 there, so it adds
// nothing to any free node or gradient: P2G and its adjoint skip its
// stress, its SVD and its 27 nodes (it still marks the nodes it holds).
fn holds_whole_stencil(p: MpmParams) -> bool {
    return p.anchor_rule == 0u;
}

// Nodes per axis: grid_res + 1 (indices 0..=grid_res).
fn nodes_per_axis(p: MpmParams) -> u32 {
    return p.grid_res + 1u;
}

const STATE_STRIDE: u32 = 24u;
const GRID_STRIDE: u32 = 4u;

// Status bits written by G2P (src/mpm/status.rs).
const STATUS_NON_FINITE: u32 = 1u;
const STATUS_LEFT_BOX: u32 = 2u;

// 3×3 matrix from its three rows.
fn mat3_from_rows(r0: vec3<f32>, r1: vec3<f32>, r2: vec3<f32>) -> mat3x3<f32> {
    return transpose(mat3x3<f32>(r0, r1, r2));
}

// Quadratic B-spline stencil of a particle (Hu et al. 2018): base node
// floor(x/dx − 0.5) (clamped into the grid; particles whose stencil would
// leave it are flagged by G2P), fractional offset fx = x/dx − base in
// [0.5, 1.5), weights w and their derivatives dw/dfx per axis.
struct Stencil {
    base: vec3<i32>,
    fx: vec3<f32>,
    w0: vec3<f32>,
    w1: vec3<f32>,
    w2: vec3<f32>,
    d0: vec3<f32>,
    d1: vec3<f32>,
    d2: vec3<f32>,
}

fn stencil(x: vec3<f32>, p: MpmParams) -> Stencil {
    let hi = i32(p.grid_res) - 2;
    let base = clamp(vec3<i32>(floor(x * p.inv_dx - 0.5)), vec3<i32>(0), vec3<i32>(hi));
    let fx = x * p.inv_dx - vec3<f32>(base);
    let a = 1.5 - fx;
    let b = fx - 1.0;
    let c = fx - 0.5;
    return Stencil(base, fx, 0.5 * a * a, 0.75 - b * b, 0.5 * c * c, -a, -2.0 * b, c);
}

fn stencil_w(s: Stencil, k: u32) -> vec3<f32> {
    return select(select(s.w2, s.w1, k == 1u), s.w0, k == 0u);
}

fn stencil_dw(s: Stencil, k: u32) -> vec3<f32> {
    return select(select(s.d2, s.d1, k == 1u), s.d0, k == 0u);
}

fn node_index(n: vec3<i32>, res: u32) -> u32 {
    let u = vec3<u32>(n);
    return (u.x * res + u.y) * res + u.z;
}

// True when the stencil of x lies inside the grid (see `stencil`).
fn inside_grid(x: vec3<f32>, p: MpmParams) -> bool {
    let g = x * p.inv_dx - 0.5;
    return all(g >= vec3<f32>(0.0)) && all(g < vec3<f32>(f32(p.grid_res) - 1.0));
}

fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}
