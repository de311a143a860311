// FLIP's part of G2P, after G2P under the FLIP transfer (docs/design.md
// § MPM, "Transfer"; the f64 twin's g2p.rs): every free particle's new
// velocity gets α (v_p − Σ_i w_ip v̂_i), v̂_i = mv̂_i/m̂_i the velocity the
// free particles carried to node i (flip_scatter.wgsl), α = exp(−dt/τ)
// (`params.flip_share`): what APIC's round trip would smooth away, less
// its PIC share. G2P wrote the rest of state n+1 (v_p' = Σ w_ip v_i, and C,
// F and x from it); anchored particles keep v' = 0.
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/stencil_node
#import mpm/flip_carried

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> anchored: array<u32>;
// (m̂, mv̂) per node (flip_scatter.wgsl).
@group(0) @binding(3) var<storage, read> carried: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> state_out: array<vec4<f32>>;
// Status words (src/mpm/status.rs): G2P checked the rest of state n+1.
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count || anchored[p] != 0u {
        return;
    }
    let o = p * STATE_QUADS;
    // x and v are in the record's first two quads (mpm/particle_state).
    let q0 = state[o];
    let x = q0.xyz;
    let v = vec3<f32>(q0.w, state[o + 1u].xy);
    let s = stencil(x, params);
    var gathered = vec3<f32>(0.0);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let node = stencil_node(s, vec3<u32>(i, j, l), params);
                gathered += node.w * carried_velocity(carried[node.node]);
            }
        }
    }
    let change = params.flip_share * (v - gathered);
    var out0 = state_out[o];
    var out1 = state_out[o + 1u];
    out0.w += change.x;
    out1.x += change.y;
    out1.y += change.z;
    state_out[o] = out0;
    state_out[o + 1u] = out1;
    if !(is_finite(out0.w) && is_finite(out1.x) && is_finite(out1.y)) {
        atomicOr(&status[0], STATUS_NON_FINITE);
        atomicMin(&status[1], p);
    }
}
