// Adjoint of the grid update (mirrors grid_update.wgsl). With
// v̂ = mv/m, u = (v̂ + dt·g)·d (d = exp(−damping·dt)), u_K the velocity the
// K colliders leave (u_{k+1} = C_k(u_k), u_0 = u) and v = mask·u_K (mask
// from the boundary rules evaluated on u_K):
//   ∂L/∂u_K = mask·∂L/∂v,  ∂L/∂u_k = J_kᵀ ∂L/∂u_{k+1} (mpm/collider's
//   contact_adjoint, u_k replayed from u),  ∂L/∂v̂ = d·∂L/∂u_0,
//   ∂L/∂mv = ∂L/∂v̂ / m,  ∂L/∂m = −∂L/∂v̂ · mv / m²,
// and each friction collider's ∂L/∂μ_k, summed over the nodes into
// collider_grad[k] (atomic: every node of the contact adds to it).
// The ∂L/∂m term is the grid-mass path that PhysDreamer's gradients drop
// (docs/design.md § Adjoint). Writes (∂L/∂mv, ∂L/∂m) per node; one thread per
// node, no atomics. Zeroes ∂L/∂v at every box node once read: G2P* of the
// next substep adjoint scatters into it only inside that substep's box, so
// the buffer is zero before every G2P* without a clearing dispatch (the
// backward pass zeroes it whole once per call, see src/mpm/backward.rs).
#import common/dispatch
#import mpm/params
#import mpm/boundary
#import mpm/collider
#import mpm/node_box
#import atomic_f32

@group(0) @binding(0) var<uniform> params: MpmParams;
// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
@group(0) @binding(2) var<storage, read> grid: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> grid_anchored: array<u32>;
@group(0) @binding(4) var<storage, read_write> grid_velocity_grad: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> grid_grad: array<vec4<f32>>;
// params.collider_count records (at least one, unread when the count is 0).
@group(0) @binding(6) var<storage, read> colliders: array<Collider>;
// ∂L/∂μ per collider, added to over the backward pass.
#atomic_f32_ops collider_grad
@group(0) @binding(7) var<storage, read_write> collider_grad: array<AtomicF32>;

// u_k: the velocity u after the first k colliders (as grid_update.wgsl).
fn after_colliders(u: vec3<f32>, x: vec3<f32>, k: u32) -> vec3<f32> {
    var v = u;
    for (var j = 0u; j < k; j++) {
        let collider = colliders[j];
        if collider_contains(collider, x) {
            v = contact_velocity(collider, collider_normal(collider, x), v);
        }
    }
    return v;
}

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
        let u = (mv / m + params.dt * params.gravity) * params.damping_factor;
        let anchored = grid_anchored[n] != 0u;
        let c = node_coords(n, res);
        let x = vec3<f32>(c) * params.dx;
        let count = select(params.collider_count, 0u, anchored);
        let mask = boundary_mask(after_colliders(u, x, count), anchored, c, params);
        var g_u = mask * gv;
        for (var k = count; k > 0u; k--) {
            let collider = colliders[k - 1u];
            if collider_contains(collider, x) {
                let back = contact_adjoint(collider, collider_normal(collider, x), after_colliders(u, x, k - 1u), g_u);
                g_u = back.xyz;
                if back.w != 0.0 {
                    collider_grad_atomic_add(k - 1u, back.w);
                }
            }
        }
        let g_vhat = params.damping_factor * g_u;
        g_mv = g_vhat / m;
        g_m = -dot(g_vhat, mv) / (m * m);
    }
    grid_grad[n] = vec4<f32>(g_mv, g_m);
}
