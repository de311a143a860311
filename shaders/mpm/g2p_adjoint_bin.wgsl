// First half of the cell-binned adjoint of G2P (CPU adapters; see
// src/mpm/p2g_bin.rs for the scheme, g2p_adjoint.wgsl for the equations,
// which this kernel computes identically): writes the G2P part of
// ∂L/∂(state n) as g2p_adjoint.wgsl does, but instead of scatter-adding
// ∂L/∂v_i += w_ip (gv'' + 4/dx²·gC''·(x_i − x_p)) it writes the particle's
// record [x (3), gv'' (3), 4/dx²·gC'' row-major (9), 0] to `binned` and
// links a non-anchored particle into its base cell's list (cell_head holds
// p + 1, 0 = empty); g2p_adjoint_cells.wgsl sums each cell's particles.
#import common/dispatch
#import mpm/params
#import mpm/g2p_adjoint_particle
#import mpm/binned_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
// State n+1 as G2P wrote it (its v' and C').
@group(0) @binding(2) var<storage, read> state_next: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> grid_velocity: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> anchored: array<u32>;
@group(0) @binding(5) var<storage, read> state_grad_next: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> state_grad: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> binned: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> cell_head: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read_write> particle_next: array<u32>;

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
                    let terms = g2p_adjoint_node_terms(carry, node, vi);
                    gx += terms.gx;
                }
            }
        }
        let binned_gv = binned_record(inputs.x, carry.gv, carry.apic * carry.gc);
        let r = p * BINNED_QUADS;
        for (var k = 0u; k < BINNED_QUADS; k++) {
            binned[r + k] = binned_gv[k];
        }
        particle_next[p] = atomicExchange(&cell_head[node_index(carry.s.base, nodes_per_axis(params))], p + 1u);
        gf = g2p_adjoint_gf(inputs, params);
    }
    let record = g2p_adjoint_state_grad(gx, gf);
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_grad[o + k] = record[k];
    }
}
