// Grid update (docs/design.md § MPM step 2, rules fixed in src/mpm/config.rs):
// v_i = mv_i/m_i for m_i > 0 (else 0), v_i += dt·g, v_i *= exp(−damping·dt),
// then anchored nodes → 0, then the colliders in order (mpm/collider), then
// walls (sticky: 0; slip: the component into the wall zeroed). Writes v_i
// (4 f32 per node, the 4th unused).
#import common/dispatch
#import mpm/params
#import mpm/boundary
#import mpm/collider
#import mpm/node_box

@group(0) @binding(0) var<uniform> params: MpmParams;
// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
@group(0) @binding(2) var<storage, read> grid: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> grid_anchored: array<u32>;
@group(0) @binding(4) var<storage, read_write> grid_velocity: array<vec4<f32>>;
// params.collider_count records (at least one, unread when the count is 0).
@group(0) @binding(5) var<storage, read> colliders: array<Collider>;

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
        let anchored = grid_anchored[n] != 0u;
        let c = node_coords(n, res);
        if !anchored {
            let x = vec3<f32>(c) * params.dx;
            for (var k = 0u; k < params.collider_count; k++) {
                let collider = colliders[k];
                if collider_contains(collider, x) {
                    v = contact_velocity(collider, collider_normal(collider, x), v);
                }
            }
        }
        v *= boundary_mask(v, anchored, c, params);
    }
    grid_velocity[n] = vec4<f32>(v, 0.0);
}
