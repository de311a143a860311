// Adjoint of flip_gather.wgsl, grid side (docs/design.md § MPM,
// "Transfer"; the f64 twin's g2p_adjoint.rs): every free particle adds
// ∂L/∂v̂_i −= α w_ip gv' (gv' = ∂L/∂v_p of state n+1) to its 27 nodes. The
// particle side (α gv' to ∂L/∂v_p, the weights' path) is
// flip_scatter_adjoint.wgsl's. Into ∂L/∂v̂ (GRID_STRIDE words per node,
// the vector in words 1–3), zero over the box before:
// flip_grid_adjoint.wgsl zeroes what it reads.
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/stencil_node

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> anchored: array<u32>;
@group(0) @binding(3) var<storage, read> state_grad_next: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> carried_velocity_grad: array<AtomicF32>;
#atomic_f32_ops carried_velocity_grad

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count || anchored[p] != 0u {
        return;
    }
    let o = p * STATE_QUADS;
    let x = state[o].xyz;
    let gv_next = vec3<f32>(state_grad_next[o].w, state_grad_next[o + 1u].xy);
    let flip_bar = params.flip_share * gv_next;
    let s = stencil(x, params);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let node = stencil_node(s, vec3<u32>(i, j, l), params);
                let g = -node.w * flip_bar;
                let n = node.node * GRID_STRIDE;
                carried_velocity_grad_atomic_add(n + 1u, g.x);
                carried_velocity_grad_atomic_add(n + 2u, g.y);
                carried_velocity_grad_atomic_add(n + 3u, g.z);
            }
        }
    }
}
