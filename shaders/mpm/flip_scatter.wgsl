// FLIP's carried mass and momentum, after P2G under the FLIP transfer
// (docs/design.md § MPM, "Transfer"; the f64 twin's p2g.rs): every free
// particle adds w_ip·m_p to m̂_i and w_ip·m_p (v_p + C_p (x_i − x_p)) to
// mv̂_i, the momentum it carries without the stress impulse; anchored
// particles carry no velocity of their own and add nothing. Into a buffer
// of GRID_STRIDE words per node, (m̂, mv̂), zeroed before.
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/stencil_node

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> anchored: array<u32>;
@group(0) @binding(3) var<storage, read_write> carried: array<AtomicF32>;
#atomic_f32_ops carried

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count || anchored[p] != 0u {
        return;
    }
    let o = p * STATE_QUADS;
    var state_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_record[k] = state[o + k];
    }
    let ps = particle_state(state_record);
    let m = params.particle_mass;
    let s = stencil(ps.x, params);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let node = stencil_node(s, vec3<u32>(i, j, l), params);
                let mv = node.w * m * (ps.v + ps.c * node.dpos);
                let n = node.node * GRID_STRIDE;
                carried_atomic_add(n, node.w * m);
                carried_atomic_add(n + 1u, mv.x);
                carried_atomic_add(n + 2u, mv.y);
                carried_atomic_add(n + 3u, mv.z);
            }
        }
    }
}
