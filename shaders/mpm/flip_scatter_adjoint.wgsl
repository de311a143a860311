// The FLIP transfer's particle-side adjoint (docs/design.md § MPM,
// "Transfer"; the f64 twin's p2g_adjoint.rs and g2p_adjoint.rs), after
// P2G* has written ∂L/∂(state n): every free particle adds
// - the carried scatter's paths (flip_scatter.wgsl), with (∂L/∂m̂_i,
//   ∂L/∂mv̂_i) from flip_grid_adjoint.wgsl:
//   w̄_i = ∂L/∂m̂_i m_p + ∂L/∂mv̂_i·m_p (v_p + C_p d_i) through ∇w_ip,
//   gv += Σ w m_p ∂L/∂mv̂_i, gC += Σ w m_p ∂L/∂mv̂_i d_iᵀ,
//   gx −= Σ w m_p C_pᵀ ∂L/∂mv̂_i (d_i = x_i − x_p);
// - flip_gather.wgsl's particle terms: gv += α gv', the weights' path
//   w̄_i −= α gv'·v̂_i, and a correction of P2G*'s affine term
//   −4/dx²·gC''ᵀ v', which read v' from state n+1: under FLIP v' holds
//   α (v_p − Σ w v̂_i) beside the Σ w v_i that C' and x' were made from, so
//   gx += α·4/dx²·gC''ᵀ (v_p − Σ w v̂_i), gC'' = gC' + dt·gF'·Fᵀ.
// Anchored particles have no FLIP terms.
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/stencil_node
#import mpm/flip_carried

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> anchored: array<u32>;
@group(0) @binding(3) var<storage, read> state_grad_next: array<vec4<f32>>;
// (m̂, mv̂) per node (flip_scatter.wgsl).
@group(0) @binding(4) var<storage, read> carried: array<vec4<f32>>;
// (∂L/∂m̂, ∂L/∂mv̂) per node (flip_grid_adjoint.wgsl).
@group(0) @binding(5) var<storage, read> carried_grad: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> state_grad: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count || anchored[p] != 0u {
        return;
    }
    let o = p * STATE_QUADS;
    var state_record: array<vec4<f32>, STATE_QUADS>;
    var grad_next_record: array<vec4<f32>, STATE_QUADS>;
    var grad_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_record[k] = state[o + k];
        grad_next_record[k] = state_grad_next[o + k];
        grad_record[k] = state_grad[o + k];
    }
    let ps = particle_state(state_record);
    let g_next = particle_state(grad_next_record);
    let g = particle_state(grad_record);
    let m = params.particle_mass;
    let alpha = params.flip_share;
    let flip_bar = alpha * g_next.v;
    var gx = vec3<f32>(0.0);
    var gv = flip_bar;
    var gc = mat3x3<f32>();
    var gathered = vec3<f32>(0.0);
    let s = stencil(ps.x, params);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let node = stencil_node(s, vec3<u32>(i, j, l), params);
                let w = node.w;
                let velocity = carried_velocity(carried[node.node]);
                let cg = carried_grad[node.node];
                let mv_bar = cg.yzw;
                let momentum = m * (ps.v + ps.c * node.dpos);
                let w_bar = cg.x * m + dot(mv_bar, momentum) - dot(flip_bar, velocity);
                gx += w_bar * node.grad_w - w * m * (transpose(ps.c) * mv_bar);
                gv += w * m * mv_bar;
                // Outer product w·m·mv̄·dposᵀ (column c = mv̄·dpos_c).
                gc += mat3x3<f32>(w * m * node.dpos.x * mv_bar, w * m * node.dpos.y * mv_bar, w * m * node.dpos.z * mv_bar);
                gathered += w * velocity;
            }
        }
    }
    let gc_carry = g_next.c + params.dt * g_next.f * transpose(ps.f);
    let apic = 4.0 * params.inv_dx * params.inv_dx;
    gx += alpha * apic * (transpose(gc_carry) * (ps.v - gathered));
    let record = state_quads(g.x + gx, g.v + gv, g.c + gc, g.f);
    for (var q = 0u; q < STATE_QUADS; q++) {
        state_grad[o + q] = record[q];
    }
}
