// Particle side of a substep's adjoint, one thread per particle (GPUs; CPU
// adapters run p2g_adjoint_cells.wgsl): the adjoint of P2G (mirrors
// p2g.wgsl) plus the particle terms of the adjoint of G2P, which read the
// grid at the same 27 nodes of x_n (equations: mpm/p2g_adjoint_particle;
// the grid side of G2P* is g2p_adjoint.wgsl). Each particle gathers
// (∂L/∂mv_i, ∂L/∂m_i) and v_i from its nodes, so no atomics, writes the
// whole ∂L/∂(state n) and adds its ∂L/∂E into `youngs_grad` (accumulated
// over substeps).
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/p2g_adjoint_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
// State n+1 as G2P wrote it (its v' and C').
@group(0) @binding(2) var<storage, read> state_next: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> youngs: array<f32>;
@group(0) @binding(4) var<storage, read> anchored: array<u32>;
@group(0) @binding(5) var<storage, read> state_grad_next: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> grid_grad: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> grid_velocity: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> state_grad: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> youngs_grad: array<f32>;

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
    let particle = p2g_adjoint_particle(
        particle_state(state_record),
        particle_state(next_record),
        particle_state(grad_next_record),
        youngs[p],
        anchored[p] != 0u,
        params,
    );
    let res = nodes_per_axis(params);
    var sums = p2g_adjoint_sums(particle);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let offset = vec3<u32>(i, j, l);
                let node = node_index(particle.s.base + vec3<i32>(offset), res);
                sums = p2g_adjoint_node(sums, particle, offset, grid_grad[node], grid_velocity[node].xyz, params);
            }
        }
    }
    let result = p2g_adjoint_finish(particle, sums, params);
    youngs_grad[p] += result.youngs_grad;
    let g = result.grad;
    let record = state_quads(g.x, g.v, g.c, g.f);
    for (var q = 0u; q < STATE_QUADS; q++) {
        state_grad[o + q] = record[q];
    }
}
