// First half of the cell-binned P2G (src/mpm/p2g_bin.rs explains when it
// replaces p2g.wgsl): each particle pushed onto the list of its stencil's
// base cell (`cell_head[base node]` holds p + 1, 0 = empty;
// `particle_next[p]` the previous head); anchored particles mark the nodes
// they hold as p2g.wgsl does. Only x is read: cell_scatter.wgsl (`p2g`)
// computes each particle's P2G terms as it walks the lists and sums each
// cell's particles in registers, one atomic per node and component per
// cell instead of per particle. The lists are the substep grid's:
// grid_clear.wgsl empties them (over the active box, which holds every
// base cell) before this kernel, and the substep's adjoint walks them
// again (g2p_adjoint.wgsl and p2g_adjoint.wgsl, `main_cells`).
#import common/dispatch
#import mpm/params
#import mpm/particle_state

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> anchored: array<u32>;
@group(0) @binding(3) var<storage, read_write> cell_head: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> particle_next: array<u32>;
@group(0) @binding(5) var<storage, read_write> grid_anchored: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
        return;
    }
    let x = state[p * STATE_QUADS].xyz;
    let s = stencil(x, params);
    let res = nodes_per_axis(params);
    particle_next[p] = atomicExchange(&cell_head[node_index(s.base, res)], p + 1u);
    if anchored[p] != 0u {
        for (var i = 0u; i < 3u; i++) {
            for (var j = 0u; j < 3u; j++) {
                for (var l = 0u; l < 3u; l++) {
                    let w = stencil_w(s, i).x * stencil_w(s, j).y * stencil_w(s, l).z;
                    if holds_node(vec3<u32>(i, j, l), w, params) {
                        atomicStore(&grid_anchored[node_index(s.base + vec3<i32>(vec3<u32>(i, j, l)), res)], 1u);
                    }
                }
            }
        }
    }
}
