// Zeroes the FLIP transfer's carried (m̂, mv̂) over the substep's active
// box before flip_scatter.wgsl adds to it (as grid_clear.wgsl does for the
// grid's (m, mv)): every particle's stencil lies in the box, so no kernel
// reads a node outside it this substep.
#import common/dispatch
#import mpm/params
#import mpm/node_box

@group(0) @binding(0) var<uniform> params: MpmParams;
// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
@group(0) @binding(2) var<storage, read_write> carried: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let t = flat_thread_index(global_id, num_workgroups, 256u);
    if t >= node_box[6] {
        return;
    }
    let n = box_node(t, vec3<u32>(node_box[0], node_box[1], node_box[2]), vec3<u32>(node_box[3], node_box[4], node_box[5]), nodes_per_axis(params));
    carried[n] = vec4<f32>(0.0);
}
