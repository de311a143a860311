// Adjoint of the grid update (mirrors grid_update.wgsl). With
// v̂ = mv/m, v = mask·(v̂ + dt·g)·d (d = exp(−damping·dt), mask from the
// boundary rules evaluated on the forward's pre-boundary velocity):
//   ∂L/∂v̂ = d·mask·∂L/∂v,  ∂L/∂mv = ∂L/∂v̂ / m,  ∂L/∂m = −∂L/∂v̂ · mv / m².
// The ∂L/∂m term is the grid-mass path that PhysDreamer's gradients drop
// (docs/design.md § Adjoint). Writes (∂L/∂mv, ∂L/∂m) per node; one thread per
// node, no atomics. Zeroes ∂L/∂v at every box node once read: G2P* of the
// next substep adjoint scatters into it only inside that substep's box, so
// the buffer is zero before every G2P* without a clearing dispatch (the
// backward pass zeroes it whole once per call, see src/mpm/backward.rs).
#import common/dispatch
#import mpm/params
#import mpm/boundary
#import mpm/node_box

@group(0) @binding(0) var<uniform> params: MpmParams;
// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
@group(0) @binding(2) var<storage, read> grid: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> grid_anchored: array<u32>;
@group(0) @binding(4) var<storage, read_write> grid_velocity_grad: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> grid_grad: array<vec4<f32>>;

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
    let gv = grid_velocity_grad[n].xyz;
    grid_velocity_grad[n] = vec4<f32>(0.0);
    var g_mv = vec3<f32>(0.0);
    var g_m = 0.0;
    if m > 0.0 {
        let mv = node.yzw;
        let v = (mv / m + params.dt * params.gravity) * params.damping_factor;
        let mask = boundary_mask(v, grid_anchored[n] != 0u, node_coords(n, res), params);
        let g_vhat = params.damping_factor * mask * gv;
        g_mv = g_vhat / m;
        g_m = -dot(g_vhat, mv) / (m * m);
    }
    grid_grad[n] = vec4<f32>(g_mv, g_m);
}
