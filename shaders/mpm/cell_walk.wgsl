// What the two cell-list scatters share: the particle's terms, the
// per-cell stencil and the node window of a column walk. The walks,
// cell_scatter.wgsl (P2G) and g2p_adjoint.wgsl `main_cells` (G2P*), sum a
// cell's particles' contributions to the 27 stencil nodes, each particle's
// terms computed from its state as the walk reaches it. Both send a node
// w_ip·(u_p + M_p (x_i − x_p)) (P2G: u = m v, M = A_p; G2P*: u = gv'',
// M = 4/dx²·gC''), so one particle form, one node term and one window
// serve both. Functions take and return values (naga takes no storage
// pointers as function parameters); the kernels keep their own loads and
// writes.
#import mpm/params

// A particle at x as a cell walk sees it: the u_p and M_p of its node
// terms.
struct CellParticle {
    x: vec3<f32>,
    u: vec3<f32>,
    m: mat3x3<f32>,
}

// Quadratic B-spline weights of a particle in the cell whose base node is
// `base` (every particle on a cell's list shares it; see params.wgsl
// `stencil`): fx = x/dx − base and the per-axis weights.
struct CellWeights {
    fx: vec3<f32>,
    w0: vec3<f32>,
    w1: vec3<f32>,
    w2: vec3<f32>,
}

fn cell_weights(x: vec3<f32>, base: vec3<f32>, params: MpmParams) -> CellWeights {
    let fx = x * params.inv_dx - base;
    let wa = 1.5 - fx;
    let wb = fx - 1.0;
    let wc = fx - 0.5;
    return CellWeights(fx, 0.5 * wa * wa, 0.75 - wb * wb, 0.5 * wc * wc);
}

// Node `o` (0..2 per axis) of the cell's stencil: (w_ip, w_ip·(u_p + M_p (x_i − x_p))).
fn cell_node_term(particle: CellParticle, cw: CellWeights, o: vec3<u32>, params: MpmParams) -> vec4<f32> {
    let w3 = select(select(cw.w2, cw.w1, o == vec3<u32>(1u)), cw.w0, o == vec3<u32>(0u));
    let w = w3.x * w3.y * w3.z;
    let dpos = (vec3<f32>(o) - cw.fx) * params.dx;
    return vec4<f32>(w, w * (particle.u + particle.m * dpos));
}

// Flat index of node `o` of the cell with base node `base`.
fn cell_node_index(base: vec3<f32>, o: vec3<u32>, res: u32) -> u32 {
    return node_index(vec3<i32>(base) + vec3<i32>(o), res);
}

// A column walk's window: per stencil node (i, j, l) of the current cell,
// at index (i·3 + j)·3 + l, the sums (m, u-term) over the cells walked so
// far. Indexed by constants only (loops of constant trip count), so the
// compiler keeps it in registers.
alias CellWindow = array<vec4<f32>, 27>;

// Adds a particle of the cell with base node `base` to the window: node
// i gets (mass·w_ip, w_ip (u_p + M_p (x_i − x_p))) (`mass` = m_p for P2G,
// 0 for G2P*).
fn window_add(window: CellWindow, particle: CellParticle, base: vec3<f32>, mass: f32, params: MpmParams) -> CellWindow {
    var sums = window;
    let cw = cell_weights(particle.x, base, params);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let term = cell_node_term(particle, cw, vec3<u32>(i, j, l), params);
                sums[(i * 3u + j) * 3u + l] += vec4<f32>(mass * term.x, term.yzw);
            }
        }
    }
    return sums;
}

// The window one cell up in z, once its plane l = 0 is added to the nodes:
// planes 1 and 2 move down, plane 2 starts at zero.
fn window_slide(window: CellWindow) -> CellWindow {
    var moved = window;
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            let n = (i * 3u + j) * 3u;
            moved[n] = moved[n + 1u];
            moved[n + 1u] = moved[n + 2u];
            moved[n + 2u] = vec4<f32>(0.0);
        }
    }
    return moved;
}
