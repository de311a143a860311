// Adjoint of G2P, grid side (mirrors g2p.wgsl; equations in
// mpm/g2p_adjoint_particle.wgsl, docs/design.md § Adjoint): every non-anchored
// particle adds ∂L/∂v_i += w_ip h_i, h_i = gv'' + 4/dx²·gC''·(x_i − x_p),
// to its 27 nodes. The particle side of G2P* (gx, gF) is computed by
// p2g_adjoint.wgsl, which walks the same stencil.
//
// Entry points:
// - `main` (GPUs): one thread per particle, with f32 atomics per node and
//   component.
// - `main_cells` (CPU adapters, where every f32 atomic is a per-lane
//   compare-and-swap loop): walks the cell lists that P2G's binning built
//   for this substep (p2g_bin.wgsl: every particle by its stencil's base
//   cell at x_n, the stencil G2P* scatters over) as cell_scatter.wgsl
//   does for P2G: one invocation per (x, y) column of the box's base cells
//   sums its cells' particles in a window of nodes (mpm/cell_walk) and
//   adds each node's sum once. Each particle's terms (gv'', 4/dx²·gC'')
//   are computed here from its state and ∂L/∂(state n+1), so G2P* needs
//   no binning pass; anchored particles add nothing and are skipped.
#import common/dispatch
#import mpm/params
#import mpm/node_box
#import mpm/particle_state
#import mpm/stencil_node
#import mpm/cell_walk
#import mpm/cell_lists
#import mpm/g2p_adjoint_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> anchored: array<u32>;
@group(0) @binding(3) var<storage, read> state_grad_next: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> grid_velocity_grad: array<AtomicF32>;
#atomic_f32_ops grid_velocity_grad
// `main_cells` only: the active box and the substep's cell lists, only
// read: bindings 10–12, mpm/cell_lists.

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count || anchored[p] != 0u {
        return;
    }
    let o = p * STATE_QUADS;
    var state_record: array<vec4<f32>, STATE_QUADS>;
    var grad_next_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_record[k] = state[o + k];
        grad_next_record[k] = state_grad_next[o + k];
    }
    let ps = particle_state(state_record);
    let g = particle_state(grad_next_record);
    let carry = g2p_adjoint_carry(ps.f, g.x, g.v, g.c, g.f, false, params);
    let s = stencil(ps.x, params);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let node = stencil_node(s, vec3<u32>(i, j, l), params);
                let gvi = node.w * g2p_adjoint_h(carry, node.dpos);
                let n = node.node * GRID_STRIDE;
                grid_velocity_grad_atomic_add(n, gvi.x);
                grid_velocity_grad_atomic_add(n + 1u, gvi.y);
                grid_velocity_grad_atomic_add(n + 2u, gvi.z);
            }
        }
    }
}

// One invocation per (x, y) column of the active box's base cells
// (node_box.wgsl `base_cell_extent`; grid_box.wgsl
// COLUMN_WORKGROUP per workgroup).
@compute @workgroup_size(8)
fn main_cells(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
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
            if anchored[p] == 0u {
                window = window_add(window, cell_particle(p), base, 0.0, params);
            }
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

// Particle p as the walk sees it, from state n (x in quad 0 and F in
// quads 3..5 of its record, mpm/particle_state: v and C are not needed)
// and ∂L/∂(state n+1).
fn cell_particle(p: u32) -> CellParticle {
    let o = p * STATE_QUADS;
    var state_record: array<vec4<f32>, STATE_QUADS>;
    var grad_next_record: array<vec4<f32>, STATE_QUADS>;
    state_record[0] = state[o];
    for (var k = 3u; k < STATE_QUADS; k++) {
        state_record[k] = state[o + k];
    }
    for (var k = 0u; k < STATE_QUADS; k++) {
        grad_next_record[k] = state_grad_next[o + k];
    }
    let ps = particle_state(state_record);
    return g2p_adjoint_cell_particle(ps.x, ps.f, particle_state(grad_next_record), params);
}

// Adds the window's plane `l` (nodes at z = base.z + l; ∂L/∂v in .yzw) to
// ∂L/∂(grid velocity).
fn flush_plane(window: CellWindow, l: u32, base: vec3<f32>, res: u32) {
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            let a = window[(i * 3u + j) * 3u + l];
            if any(a.yzw != vec3<f32>(0.0)) {
                let n = cell_node_index(base, vec3<u32>(i, j, l), res) * GRID_STRIDE;
                grid_velocity_grad_atomic_add(n, a.y);
                grid_velocity_grad_atomic_add(n + 1u, a.z);
                grid_velocity_grad_atomic_add(n + 2u, a.w);
            }
        }
    }
}
