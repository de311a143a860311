// Adjoint of G2P (mirrors g2p.wgsl, DESIGN.md § Adjoint). Given ∂L/∂(state
// n+1) = (gx', gv', gC', gF'), writes the G2P part of ∂L/∂(state n) (gx, gF;
// gv = gC = 0, P2G* adds the rest) and scatter-adds ∂L/∂v_i to the grid.
// With gv'' = gv' + dt·gx' (x' = x + dt v') and gC'' = gC' + dt·gF'·Fᵀ
// (F' = (I + dt C')F):
//   ∂L/∂v_i += w_ip (gv'' + 4/dx²·gC''·(x_i − x_p)),
//   gF = (I + dt C')ᵀ gF',
//   gx = gx' + Σ_i [(gv''·v_i + 4/dx²·v_iᵀ gC'' (x_i − x_p)) ∇w_ip − 4/dx²·w_ip gC''ᵀ v_i]
// (the last term from ∂(x_i − x_p)/∂x_p = −I; it sums to −4/dx²·gC''ᵀ v').
// C' and v' are read from state n+1 instead of being summed again over the
// 27 nodes: a node costs one 3×3 product and two dots. Anchored particles:
// x' = x, F' = F, v' = C' = 0, so gx = gx', gF = gF' and nothing reaches
// the grid.
// The scatter to nodes is unavoidable here (a node's gradient sums over the
// particles around it), hence the f32 atomics.
#import common/dispatch
#import mpm/params
#import mpm/g2p_adjoint_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
// State n+1 as G2P wrote it (its v' and C').
@group(0) @binding(2) var<storage, read> state_next: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> grid_velocity: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> anchored: array<u32>;
@group(0) @binding(5) var<storage, read> state_grad_next: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> state_grad: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> grid_velocity_grad: array<AtomicF32>;
#atomic_f32_ops grid_velocity_grad

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
        return;
    }
    let o = p * STATE_QUADS;
    var state_record: array<vec4<f32>, STATE_QUADS>;
    var next_record: array<vec4<f32>, STATE_QUADS>;
    var grad_next_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_record[k] = state[o + k];
        next_record[k] = state_next[o + k];
        grad_next_record[k] = state_grad_next[o + k];
    }
    let inputs = g2p_adjoint_inputs(state_record, next_record, grad_next_record);
    var gx = inputs.gx_next;
    var gf = inputs.gf_next;
    if anchored[p] == 0u {
        let carry = g2p_adjoint_carry(inputs, params);
        gx += g2p_adjoint_gx_affine(carry, inputs);
        for (var i = 0u; i < 3u; i++) {
            for (var j = 0u; j < 3u; j++) {
                for (var l = 0u; l < 3u; l++) {
                    let node = stencil_node(carry.s, vec3<u32>(i, j, l), params);
                    let vi = grid_velocity[node.node].xyz;
                    let g = node.node * GRID_STRIDE;
                    let terms = g2p_adjoint_node_terms(carry, node, vi);
                    gx += terms.gx;
                    grid_velocity_grad_atomic_add(g, terms.grid_velocity_grad.x);
                    grid_velocity_grad_atomic_add(g + 1u, terms.grid_velocity_grad.y);
                    grid_velocity_grad_atomic_add(g + 2u, terms.grid_velocity_grad.z);
                }
            }
        }
        gf = g2p_adjoint_gf(inputs, params);
    }
    let record = g2p_adjoint_state_grad(gx, gf);
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_grad[o + k] = record[k];
    }
}
