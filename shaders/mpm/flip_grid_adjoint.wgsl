// Adjoint of v̂_i = mv̂_i/m̂_i (docs/design.md § MPM, "Transfer"; the f64
// twin's grid_adjoint.rs), one thread per active-box node: from ∂L/∂v̂_i
// (flip_gather_adjoint.wgsl), ∂L/∂mv̂_i = ∂L/∂v̂_i / m̂_i and the carried
// mass's ∂L/∂m̂_i = −∂L/∂v̂_i·v̂_i / m̂_i, written as (∂L/∂m̂, ∂L/∂mv̂) for
// flip_scatter_adjoint.wgsl; then ∂L/∂v̂_i is zeroed, so that the next
// substep adjoint's scatter starts from zero (as grid_update_adjoint.wgsl
// does for ∂L/∂v).
#import common/dispatch
#import mpm/params
#import mpm/node_box
#import mpm/flip_carried

@group(0) @binding(0) var<uniform> params: MpmParams;
// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
// (m̂, mv̂) per node (flip_scatter.wgsl).
@group(0) @binding(2) var<storage, read> carried: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> carried_velocity_grad: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> carried_grad: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let t = flat_thread_index(global_id, num_workgroups, 256u);
    if t >= node_box[6] {
        return;
    }
    let res = nodes_per_axis(params);
    let n = box_node(t, vec3<u32>(node_box[0], node_box[1], node_box[2]), vec3<u32>(node_box[3], node_box[4], node_box[5]), res);
    let node = carried[n];
    let g = carried_velocity_grad[n].yzw;
    var out = vec4<f32>(0.0);
    if node.x > 0.0 {
        out = vec4<f32>(-dot(g, carried_velocity(node)) / node.x, g / node.x);
    }
    carried_grad[n] = out;
    carried_velocity_grad[n] = vec4<f32>(0.0);
}
