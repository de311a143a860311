// Second half of the cell-binned P2G (CPU adapters; the first half,
// p2g_bin.wgsl, links each particle into the list of its stencil's base
// cell): adds (m_i, mv_i) to the grid, node i of particle p getting
// mpm/cell_walk's (m_p·w_ip, w_ip (m_p v_p + A_p (x_i − x_p)))
// (p2g.wgsl), m_p v_p and A_p computed here from the particle's state and
// E (mpm/p2g_particle) as the walk reaches it (the adjoint of G2P walks
// the same lists the same way: g2p_adjoint.wgsl `main_cells`).
//
// One invocation per (x, y) column of the active box's base cells
// (node_box.wgsl `base_cell_extent`) walks its cells in z
// order. Each cell is the base cell of the particles on its list (all of
// them share the stencil's base node, so only the weights differ); their
// terms are summed into a window of the 3 × 3 × 3 nodes around the cell.
// Once a cell is done, the window's plane at the cell's own z is complete
// (the cells below it in z were walked before), so it is added to the
// nodes with one atomic per node and component, and the window moves up
// one plane: 9 nodes of atomics per cell instead of 27 (each node's sum of
// the three cells in z that reach it is added once). Nodes whose sum is
// zero are skipped. The lists are only read: grid_clear.wgsl empties them
// before the substep's binning, and G2P* and P2G* walk them again.
#import common/dispatch
#import mpm/params
#import mpm/node_box
#import mpm/particle_state
#import mpm/p2g_particle
#import mpm/cell_walk
#import mpm/cell_lists

@group(0) @binding(0) var<uniform> params: MpmParams;
// Particle state and Young's modulus per particle.
@group(0) @binding(2) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> youngs: array<f32>;
// (μ/E, λ/E, d(μ/E)/dν, d(λ/E)/dν) per particle (src/mpm/lame.rs).
@group(0) @binding(4) var<storage, read> lame: array<vec4<f32>>;
// Anchored flag per particle: one that holds its whole stencil adds
// nothing a free node sees (mpm/params `holds_whole_stencil`) and is
// skipped; p2g_bin.wgsl has marked the nodes it holds.
@group(0) @binding(5) var<storage, read> anchored: array<u32>;
// The active box and the lists: bindings 10–12, mpm/cell_lists.
// GRID_STRIDE words per node: (m, mv).
@group(0) @binding(6) var<storage, read_write> nodes: array<AtomicF32>;
#atomic_f32_ops nodes

@compute @workgroup_size(8)
fn p2g(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let t = flat_thread_index(global_id, num_workgroups, 8u);
    let walk = box_column(node_box, t);
    if !walk.has_column {
        return;
    }
    let res = nodes_per_axis(params);
    var window: CellWindow;
    var links = 0u;
    for (var dz = 0u; dz < walk.cells.z; dz++) {
        let base = column_cell(walk, dz);
        var cursor = list_start(node_index(vec3<i32>(base), res), links);
        for (; list_has_particle(cursor, params.particle_count); cursor = list_next(cursor)) {
            let p = list_particle(cursor);
            if anchored[p] != 0u && holds_whole_stencil(params) {
                continue;
            }
            let o = p * STATE_QUADS;
            var state_record: array<vec4<f32>, STATE_QUADS>;
            for (var k = 0u; k < STATE_QUADS; k++) {
                state_record[k] = state[o + k];
            }
            let ps = particle_state(state_record);
            let terms = p2g_particle(ps, youngs[p], lame[p], params);
            window = window_add(window, CellParticle(ps.x, terms.momentum, terms.affine), base, params.particle_mass, params);
        }
        links = cursor.links;
        flush_plane(window, 0u, base, res);
        window = window_slide(window);
    }
    // The two planes above the column's last cell.
    let top = column_cell(walk, walk.cells.z);
    flush_plane(window, 0u, top, res);
    flush_plane(window, 1u, top, res);
}

// Adds the window's plane `l` (nodes at z = base.z + l) to the nodes.
fn flush_plane(window: CellWindow, l: u32, base: vec3<f32>, res: u32) {
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            let a = window[(i * 3u + j) * 3u + l];
            if any(a != vec4<f32>(0.0)) {
                let n = cell_node_index(base, vec3<u32>(i, j, l), res) * GRID_STRIDE;
                nodes_atomic_add(n, a.x);
                nodes_atomic_add(n + 1u, a.y);
                nodes_atomic_add(n + 2u, a.z);
                nodes_atomic_add(n + 3u, a.w);
            }
        }
    }
}
