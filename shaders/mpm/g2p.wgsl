// G2P (docs/design.md § MPM step 3): v_p = Σ w_ip v_i, C_p = 4/dx² Σ w_ip v_i (x_i − x_p)ᵀ,
// F_p ← (I + dt C_p) F_p, x_p += dt v_p. Anchored particles keep x_p and F_p
// and get v_p = 0, C_p = 0. Writes the next state to `state_out` (ping-pong,
// so the input survives for checkpoints), and ORs status bits when a new
// value is not finite or a particle's stencil leaves the grid (read back once
// per frame by src/mpm/status.rs).
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/stencil_node

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> grid_velocity: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> anchored: array<u32>;
@group(0) @binding(4) var<storage, read_write> state_out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
        return;
    }
    let o = p * STATE_QUADS;
    var state_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_record[k] = state[o + k];
    }
    let ps = particle_state(state_record);
    let x = ps.x;
    let f = ps.f;
    var x_new = x;
    var v_new = vec3<f32>(0.0);
    var c_new = mat3x3<f32>();
    var f_new = f;
    if anchored[p] == 0u {
        let s = stencil(x, params);
        var b = mat3x3<f32>();
        for (var i = 0u; i < 3u; i++) {
            for (var j = 0u; j < 3u; j++) {
                for (var l = 0u; l < 3u; l++) {
                    let node = stencil_node(s, vec3<u32>(i, j, l), params);
                    let w = node.w;
                    let dpos = node.dpos;
                    let vi = grid_velocity[node.node].xyz;
                    v_new += w * vi;
                    // Outer product w·v_i·dposᵀ (column c = v_i·dpos_c).
                    b += mat3x3<f32>(w * dpos.x * vi, w * dpos.y * vi, w * dpos.z * vi);
                }
            }
        }
        c_new = 4.0 * params.inv_dx * params.inv_dx * b;
        let identity = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
        f_new = (identity + params.dt * c_new) * f;
        x_new = x + params.dt * v_new;
    }
    var finite = true;
    for (var r = 0u; r < 3u; r++) {
        finite = finite && is_finite(x_new[r]) && is_finite(v_new[r]);
        for (var c = 0u; c < 3u; c++) {
            finite = finite && is_finite(c_new[c][r]) && is_finite(f_new[c][r]);
        }
    }
    if !finite {
        atomicOr(&status[0], STATUS_NON_FINITE);
        atomicMin(&status[1], p);
    } else if !inside_grid(x_new, params) {
        atomicOr(&status[0], STATUS_LEFT_BOX);
        atomicMin(&status[1], p);
    }
    let record = state_quads(x_new, v_new, c_new, f_new);
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_out[o + k] = record[k];
    }
}
