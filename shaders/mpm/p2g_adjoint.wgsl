// Particle side of a substep's adjoint: the adjoint of P2G (mirrors
// p2g.wgsl) plus the particle terms of the adjoint of G2P, which read the
// grid at the same 27 nodes of x_n (mpm/g2p_adjoint_particle.wgsl; the grid
// side of G2P* is g2p_adjoint.wgsl / g2p_adjoint_bin.wgsl). Each particle
// gathers (∂L/∂mv_i, ∂L/∂m_i) and v_i from its nodes, so no atomics, and
// writes the whole ∂L/∂(state n). P2G*: with A = −k·P(F)Fᵀ + m_p C
// (k = dt·4/dx²·V_p) and mv_i += w (m_p v + A dpos):
//   gv = Σ w m_p gmv_i,   gA = Σ w gmv_i dposᵀ,   gC = m_p gA,
//   gx += Σ [(m_p gm_i + gmv_i·(m_p v + A dpos)) ∇w − w Aᵀ gmv_i],
//   gP = −k gA F,   gF += −k gAᵀ P + ∂⟨gP, P(F)⟩/∂F (mpm/corotated),
//   gE += ⟨gP, P/E⟩,
// where gx and gF start from G2P*'s gx' + Σ (v_i·h_i) ∇w − 4/dx² gC''ᵀ v'
// and (I + dt C')ᵀ gF'. Per node only what depends on the node: Σ w gmv_i
// (which gives gv and the −Σ w Aᵀ gmv_i term once, after the loop), gA and
// the ∇w terms. Adds into `youngs_grad` (accumulated over substeps).
//
// Entry points: `main`; and, for the cell-binned scatters (CPU adapters),
// `main_binning_previous`, which then also bins each non-anchored particle
// for the G2P* scatter of substep n − 1, as g2p_adjoint_bin.wgsl would, from
// the ∂L/∂(state n) it just computed (that kernel would read it back) and
// state n − 1: one dispatch and one read of ∂L/∂(state n) fewer per
// substep adjoint.
#import common/dispatch
#import mpm/params
#import mpm/corotated
#import mpm/particle_state
#import mpm/g2p_adjoint_particle
#import mpm/binned_particle

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
// `main_binning_previous` only: state n − 1 and g2p_adjoint_bin.wgsl's
// outputs for substep n − 1 (cell_head all zero before the dispatch).
@group(0) @binding(10) var<storage, read> state_previous: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> binned: array<vec4<f32>>;
@group(0) @binding(12) var<storage, read_write> cell_head: array<atomic<u32>>;
@group(0) @binding(13) var<storage, read_write> particle_next: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
        return;
    }
    particle_adjoint(p);
}

@compute @workgroup_size(64)
fn main_binning_previous(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
        return;
    }
    let g = particle_adjoint(p);
    if anchored[p] != 0u {
        return;
    }
    let o = p * STATE_QUADS;
    var previous_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        previous_record[k] = state_previous[o + k];
    }
    let previous = particle_state(previous_record);
    let bin = g2p_adjoint_binned(previous.x, previous.f, g, params);
    for (var k = 0u; k < BINNED_QUADS; k++) {
        binned[p * BINNED_QUADS + k] = bin.record[k];
    }
    particle_next[p] = atomicExchange(&cell_head[node_index(bin.base, nodes_per_axis(params))], p + 1u);
}

// Writes particle p's ∂L/∂(state n) to `state_grad` (and returns it) and
// adds its ∂L/∂E.
fn particle_adjoint(p: u32) -> ParticleState {
    let o = p * STATE_QUADS;
    var state_record: array<vec4<f32>, STATE_QUADS>;
    var next_record: array<vec4<f32>, STATE_QUADS>;
    var grad_next_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_record[k] = state[o + k];
        next_record[k] = state_next[o + k];
        grad_next_record[k] = state_grad_next[o + k];
    }
    let ps = particle_state(state_record);
    let next = particle_state(next_record);
    let g_next = particle_state(grad_next_record);
    let x = ps.x;
    let f = ps.f;
    // G2P*, particle side (node-independent parts).
    let carry = g2p_adjoint_carry(f, g_next.x, g_next.v, g_next.c, g_next.f, anchored[p] != 0u, params);
    var gx = g_next.x + g2p_adjoint_gx_affine(carry, next.v);
    let gf_g2p = g2p_adjoint_gf(next.c, g_next.f, params);
    // P2G*.
    let e = youngs[p];
    let svd = svd3(f);
    let stress_hat = corotated_stress_per_youngs(f, svd, params.mu_per_youngs, params.lambda_per_youngs);
    let stress = e * stress_hat;
    let mp = params.particle_mass;
    let k = params.dt * 4.0 * params.inv_dx * params.inv_dx * params.particle_volume;
    let affine = -k * stress * transpose(f) + mp * ps.c;
    let momentum = mp * ps.v;
    let s = stencil(x, params);
    // The node terms split by axis, so that a node adds only what depends
    // on it. With x_i − x_p = (o − fx)·dx for stencil offset o:
    //   m_p v + A (x_i − x_p) = a0 + dx·Σ_c o_c A[c],
    //   h_i = h0 + dx·apic·Σ_c o_c gC''[c]   (g2p_adjoint_h; [c]: column c),
    //   gA = Σ w gmv (x_i − x_p)ᵀ = dx·(Σ w gmv oᵀ − (Σ w gmv) fxᵀ),
    // and w, ∇w are products of per-axis factors. The sums are the same;
    // on lavapipe the kernel runs 8% fewer instructions (valgrind) and
    // ~5% less time than evaluating each term at its node (its 54 gathers
    // per particle cost more than all of its arithmetic: docs/benchmarks.md).
    let fx_dpos = s.fx * params.dx;
    let a0 = momentum - affine * fx_dpos;
    let h0 = g2p_adjoint_h(carry, -fx_dpos);
    let a_step = params.dx * affine;
    let h_step = (params.dx * carry.apic) * carry.gc;
    let res = nodes_per_axis(params);
    let base_node = node_index(s.base, res);
    var sum_w_gmv = vec3<f32>(0.0);
    // Σ w gmv oᵀ, column c = Σ o_c w gmv.
    var ga_offset = mat3x3<f32>();
    for (var i = 0u; i < 3u; i++) {
        let wx = stencil_w(s, i).x;
        let dwx = params.inv_dx * stencil_dw(s, i).x;
        let a_x = a0 + f32(i) * a_step[0];
        let h_x = h0 + f32(i) * h_step[0];
        for (var j = 0u; j < 3u; j++) {
            let wy = stencil_w(s, j).y;
            let dwy = params.inv_dx * stencil_dw(s, j).y;
            let w_xy = wx * wy;
            let dw_x = dwx * wy;
            let dw_y = wx * dwy;
            let a_xy = a_x + f32(j) * a_step[1];
            let h_xy = h_x + f32(j) * h_step[1];
            for (var l = 0u; l < 3u; l++) {
                let wz = stencil_w(s, l).z;
                let dwz = params.inv_dx * stencil_dw(s, l).z;
                let w = w_xy * wz;
                let grad_w = vec3<f32>(dw_x * wz, dw_y * wz, w_xy * dwz);
                let node = base_node + (i * res + j) * res + l;
                let g_node = grid_grad[node];
                let vi = grid_velocity[node].xyz;
                let w_gmv = w * g_node.xyz;
                sum_w_gmv += w_gmv;
                ga_offset += mat3x3<f32>(f32(i) * w_gmv, f32(j) * w_gmv, f32(l) * w_gmv);
                let p2g_term = mp * g_node.w + dot(g_node.xyz, a_xy + f32(l) * a_step[2]);
                let g2p_term = dot(vi, h_xy + f32(l) * h_step[2]);
                gx += (p2g_term + g2p_term) * grad_w;
            }
        }
    }
    let ga = params.dx * (ga_offset - mat3x3<f32>(s.fx.x * sum_w_gmv, s.fx.y * sum_w_gmv, s.fx.z * sum_w_gmv));
    let gv = mp * sum_w_gmv;
    gx -= transpose(affine) * sum_w_gmv;
    let gc = mp * ga;
    let gp = -k * ga * f;
    let gf = gf_g2p - k * transpose(ga) * stress + corotated_stress_adjoint(f, svd, e, params.mu_per_youngs, params.lambda_per_youngs, gp);
    youngs_grad[p] += frobenius(gp, stress_hat);
    let record = state_quads(gx, gv, gc, gf);
    for (var q = 0u; q < STATE_QUADS; q++) {
        state_grad[o + q] = record[q];
    }
    return ParticleState(gx, gv, gc, gf);
}
