// Zeroes the nodes of the active box before P2G, in one dispatch: the
// grid's mass/momentum and anchored flags (`clear_grid`; the flags start
// from the fixed held nodes of the `splats` anchoring rule, all 0 under
// the other rules, whose P2G marks the held nodes), and with binned
// scatters also the cell-list heads (`clear_grid_and_lists`: the lists are
// built by p2g_bin.wgsl and walked by cell_scatter.wgsl, g2p_adjoint.wgsl
// and p2g_adjoint.wgsl, which only read them). Nodes outside
// the box may hold stale values: no kernel reads them this substep (every
// particle's base cell is in the box, and the walkers walk the box's
// cells only). ∂L/∂(grid velocity) needs no clear: grid_update_adjoint.wgsl
// zeroes what it reads.
#import common/dispatch
#import mpm/params
#import mpm/node_box

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
// Four words per node: (m, mv).
@group(0) @binding(2) var<storage, read_write> nodes: array<vec4<f32>>;
// One word per node: the anchored flags.
@group(0) @binding(3) var<storage, read_write> flags: array<u32>;
// One word per node: the fixed held nodes (src/mpm/simulator.rs
// `held_node_flags`).
@group(0) @binding(4) var<storage, read> held: array<u32>;
// `clear_grid_and_lists` only: one word per node, the heads of the cell
// lists (0 = empty).
@group(0) @binding(5) var<storage, read_write> cell_head: array<u32>;

// Flat index of active-box node t, or none (0xffffffff) past the box.
fn box_thread_node(t: u32) -> u32 {
    if t >= node_box[6] {
        return 0xffffffffu;
    }
    return box_node(t, vec3<u32>(node_box[0], node_box[1], node_box[2]), vec3<u32>(node_box[3], node_box[4], node_box[5]), nodes_per_axis(params));
}

// Zeroes active-box node t's (m, mv) and sets its anchored flag to its
// held flag; its flat index, or none (0xffffffff) past the box.
fn clear_node(t: u32) -> u32 {
    let n = box_thread_node(t);
    if n != 0xffffffffu {
        nodes[n] = vec4<f32>(0.0);
        flags[n] = held[n];
    }
    return n;
}

@compute @workgroup_size(256)
fn clear_grid(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    clear_node(flat_thread_index(global_id, num_workgroups, 256u));
}

@compute @workgroup_size(256)
fn clear_grid_and_lists(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let n = clear_node(flat_thread_index(global_id, num_workgroups, 256u));
    if n != 0xffffffffu {
        cell_head[n] = 0u;
    }
}
