// Zeroes `words_per_node` u32 words of every node of the active box (the
// grid mass/momentum, the anchored flags, or ∂L/∂(grid velocity)). Nodes
// outside the box may hold stale values: no kernel reads them this substep.
#import common/dispatch
#import mpm/params
#import mpm/node_box

struct ClearParams {
    words_per_node: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<uniform> clear: ClearParams;
@group(0) @binding(2) var<storage, read> node_box: array<u32, 8>;
@group(0) @binding(3) var<storage, read_write> values: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let t = flat_thread_index(global_id, num_workgroups, 256u);
    if t >= node_box[6] {
        return;
    }
    let n = box_node(t, vec3<u32>(node_box[0], node_box[1], node_box[2]), vec3<u32>(node_box[3], node_box[4], node_box[5]), nodes_per_axis(params));
    for (var w = 0u; w < clear.words_per_node; w++) {
        values[n * clear.words_per_node + w] = 0u;
    }
}
