// Grid update (docs/design.md § MPM step 2, rules fixed in src/mpm/config.rs):
// v_i = mv_i/m_i for m_i > 0 (else 0), v_i += dt·g, v_i *= exp(−damping·dt),
// then anchored nodes → 0, then walls (sticky: 0; slip: the component into
// the wall zeroed). Writes v_i (4 f32 per node, the 4th unused).
#import common/dispatch
#import mpm/params
#import mpm/boundary
#import mpm/node_box

@group(0) @binding(0) var<uniform> params: MpmParams;
// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
@group(0) @binding(2) var<storage, read> grid: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> grid_anchored: array<u32>;
@group(0) @binding(4) var<storage, read_write> grid_velocity: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let t = flat_thread_index(global_id, num_workgroups, 256u);
    if t >= node_box[6] {
        return;
    }
    let res = nodes_per_axis(params);
    let n = box_node(t, vec3<u32>(node_box[0], node_box[1], node_box[2]), vec3<u32>(node_box[3], node_box[4], node_box[5]), res);
    let node = grid[n];
    let m = node.x;
    var v = vec3<f32>(0.0);
    if m > 0.0 {
        v = node.yzw / m;
        v = (v + params.dt * params.gravity) * params.damping_factor;
        v *= boundary_mask(v, grid_anchored[n] != 0u, node_coords(n, res), params);
    }
    grid_velocity[n] = vec4<f32>(v, 0.0);
}
