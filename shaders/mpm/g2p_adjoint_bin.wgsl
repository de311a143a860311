// First half of the cell-binned adjoint of G2P, grid side (CPU adapters;
// see src/mpm/p2g_bin.rs for the scheme, mpm/g2p_adjoint_particle.wgsl for
// the equations): instead of scatter-adding ∂L/∂v_i += w_ip (gv'' +
// 4/dx²·gC''·(x_i − x_p)) as g2p_adjoint.wgsl does, each particle writes
// its record [x (3), gv'' (3), 4/dx²·gC'' row-major (9), 0] to `binned`
// and links itself into its base cell's list (cell_head holds p + 1,
// 0 = empty); cell_scatter.wgsl (`g2p_adjoint`) sums each cell's
// particles, then p2g_adjoint.wgsl `main_cells` walks the same lists (so anchored
// particles are linked too, with zero terms) and resets them. No node loop
// here: the particle side of G2P* is in P2G*.
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/g2p_adjoint_particle
#import mpm/binned_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> anchored: array<u32>;
@group(0) @binding(3) var<storage, read> state_grad_next: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> binned: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> cell_head: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> particle_next: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
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
    let bin = g2p_adjoint_binned(ps.x, ps.f, g, anchored[p] != 0u, params);
    for (var k = 0u; k < BINNED_QUADS; k++) {
        binned[p * BINNED_QUADS + k] = bin.record[k];
    }
    particle_next[p] = atomicExchange(&cell_head[node_index(bin.base, nodes_per_axis(params))], p + 1u);
}
