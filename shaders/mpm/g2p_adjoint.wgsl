// Adjoint of G2P, grid side (mirrors g2p.wgsl; equations in
// mpm/g2p_adjoint_particle.wgsl, DESIGN.md § Adjoint): every non-anchored
// particle scatter-adds ∂L/∂v_i += w_ip h_i, h_i = gv'' + 4/dx²·gC''·(x_i −
// x_p), to its 27 nodes with f32 atomics (the one-kernel variant, for GPUs;
// CPU adapters bin instead: g2p_adjoint_bin.wgsl). The particle side of
// G2P* (gx, gF) is computed by p2g_adjoint.wgsl, which walks the same
// stencil.
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/stencil_node
#import mpm/g2p_adjoint_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> anchored: array<u32>;
@group(0) @binding(3) var<storage, read> state_grad_next: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> grid_velocity_grad: array<AtomicF32>;
#atomic_f32_ops grid_velocity_grad

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
