// Per-particle math of the substep adjoint's particle side (docs/design.md
// § Adjoint): the adjoint of P2G plus the particle terms of the adjoint of
// G2P, which read the grid at the same 27 nodes of x_n. With
// A = −k·P(F)Fᵀ + m_p C (k = dt·4/dx²·V_p) and mv_i += w (m_p v + A dpos):
//   gv = Σ w m_p gmv_i,   gA = Σ w gmv_i dposᵀ,   gC = m_p gA,
//   gx += Σ [(m_p gm_i + gmv_i·(m_p v + A dpos)) ∇w − w Aᵀ gmv_i],
//   gP = −k gA F,   gF += −k gAᵀ P + ∂⟨gP, P(F)⟩/∂F (mpm/corotated),
//   gE += ⟨gP, P/E⟩,   gν += E·(dμ̂/dν·⟨gP, 2(F − R)⟩ + dλ̂/dν·(J − 1)⟨gP, cof F⟩)
//   (μ̂ = μ/E, λ̂ = λ/E, the particle's own: src/mpm/lame.rs),
// where gx and gF start from G2P*'s gx' + Σ (v_i·h_i) ∇w − 4/dx² gC''ᵀ v'
// and (I + dt C')ᵀ gF' (mpm/g2p_adjoint_particle). Per node only what
// depends on the node: Σ w gmv_i (which gives gv and the −Σ w Aᵀ gmv_i term
// once, after the loop), gA and the ∇w terms.
//
// The node terms split by axis, so that a node adds only what depends on
// it. With x_i − x_p = (o − fx)·dx for stencil offset o:
//   m_p v + A (x_i − x_p) = a0 + dx·Σ_c o_c A[c],
//   h_i = h0 + dx·apic·Σ_c o_c gC''[c]   (g2p_adjoint_h; [c]: column c),
//   gA = Σ w gmv (x_i − x_p)ᵀ = dx·(Σ w gmv oᵀ − (Σ w gmv) fxᵀ),
// and w, ∇w are products of per-axis factors.
//
// Three steps, values in and out, so that p2g_adjoint.wgsl's two entry
// points, `main` (gathering each node) and `main_cells` (reading a window
// of nodes), share them:
// `p2g_adjoint_particle` (node-independent parts), `p2g_adjoint_node` per
// stencil node, `p2g_adjoint_finish`.
#import mpm/params
#import mpm/corotated
#import mpm/particle_state
#import mpm/g2p_adjoint_particle

struct P2gAdjointParticle {
    f: mat3x3<f32>,
    svd: Svd3,
    youngs: f32,
    lame: vec4<f32>,
    stress_hat: mat3x3<f32>,
    stress: mat3x3<f32>,
    affine: mat3x3<f32>,
    s: Stencil,
    a0: vec3<f32>,
    h0: vec3<f32>,
    a_step: mat3x3<f32>,
    h_step: mat3x3<f32>,
    // G2P*'s node-independent parts: gx' − 4/dx²·gC''ᵀ v' and (I + dt C')ᵀ gF'.
    gx: vec3<f32>,
    gf_g2p: mat3x3<f32>,
}

// Running node sums: Σ w gmv, Σ w gmv oᵀ, and gx with its ∇w terms.
struct P2gAdjointSums {
    sum_w_gmv: vec3<f32>,
    ga_offset: mat3x3<f32>,
    gx: vec3<f32>,
}

// A particle with state `ps`, next state `next` (as G2P wrote it: its v'
// and C' are used), ∂L/∂(state n+1) = `g_next`, Young's modulus `youngs`
// and Lamé parameters per unit E `lame` (with their ν-derivatives).
fn p2g_adjoint_particle(ps: ParticleState, next: ParticleState, g_next: ParticleState, youngs: f32, lame: vec4<f32>, anchored: bool, params: MpmParams) -> P2gAdjointParticle {
    let f = ps.f;
    let carry = g2p_adjoint_carry(f, g_next.x, g_next.v, g_next.c, g_next.f, anchored, params);
    let svd = svd3(f);
    let stress_hat = corotated_stress_per_youngs(f, svd, lame.x, lame.y);
    let stress = youngs * stress_hat;
    let mp = params.particle_mass;
    let k = params.dt * 4.0 * params.inv_dx * params.inv_dx * params.particle_volume;
    let affine = -k * stress * transpose(f) + mp * ps.c;
    let s = stencil(ps.x, params);
    let fx_dpos = s.fx * params.dx;
    return P2gAdjointParticle(
        f,
        svd,
        youngs,
        lame,
        stress_hat,
        stress,
        affine,
        s,
        mp * ps.v - affine * fx_dpos,
        g2p_adjoint_h(carry, -fx_dpos),
        params.dx * affine,
        (params.dx * carry.apic) * carry.gc,
        g_next.x + g2p_adjoint_gx_affine(carry, next.v),
        g2p_adjoint_gf(next.c, g_next.f, params),
    );
}

fn p2g_adjoint_sums(particle: P2gAdjointParticle) -> P2gAdjointSums {
    return P2gAdjointSums(vec3<f32>(0.0), mat3x3<f32>(), particle.gx);
}

// Adds stencil node `o` (0..2 per axis) with (∂L/∂mv_i, ∂L/∂m_i) = `g_node`
// and grid velocity v_i = `vi`.
fn p2g_adjoint_node(sums: P2gAdjointSums, particle: P2gAdjointParticle, o: vec3<u32>, g_node: vec4<f32>, vi: vec3<f32>, params: MpmParams) -> P2gAdjointSums {
    let s = particle.s;
    let wx = stencil_w(s, o.x).x;
    let wy = stencil_w(s, o.y).y;
    let wz = stencil_w(s, o.z).z;
    let dw = params.inv_dx * vec3<f32>(stencil_dw(s, o.x).x, stencil_dw(s, o.y).y, stencil_dw(s, o.z).z);
    let w_xy = wx * wy;
    let w = w_xy * wz;
    let grad_w = vec3<f32>(dw.x * wy * wz, wx * dw.y * wz, w_xy * dw.z);
    let offset = vec3<f32>(o);
    let w_gmv = w * g_node.xyz;
    var out = sums;
    out.sum_w_gmv += w_gmv;
    out.ga_offset += mat3x3<f32>(offset.x * w_gmv, offset.y * w_gmv, offset.z * w_gmv);
    let p2g_term = params.particle_mass * g_node.w + dot(g_node.xyz, particle.a0 + particle.a_step * offset);
    let g2p_term = dot(vi, particle.h0 + particle.h_step * offset);
    out.gx += (p2g_term + g2p_term) * grad_w;
    return out;
}

// ∂L/∂(state n) and this substep's ∂L/∂E and ∂L/∂ν of the particle.
struct P2gAdjointResult {
    grad: ParticleState,
    youngs_grad: f32,
    poisson_grad: f32,
}

fn p2g_adjoint_finish(particle: P2gAdjointParticle, sums: P2gAdjointSums, params: MpmParams) -> P2gAdjointResult {
    let mp = params.particle_mass;
    let k = params.dt * 4.0 * params.inv_dx * params.inv_dx * params.particle_volume;
    let fx = particle.s.fx;
    let sum = sums.sum_w_gmv;
    let ga = params.dx * (sums.ga_offset - mat3x3<f32>(fx.x * sum, fx.y * sum, fx.z * sum));
    let gv = mp * sum;
    let gx = sums.gx - transpose(particle.affine) * sum;
    let gc = mp * ga;
    let f = particle.f;
    let gp = -k * ga * f;
    let gf = particle.gf_g2p - k * transpose(ga) * particle.stress
        + corotated_stress_adjoint(f, particle.svd, particle.youngs, particle.lame.x, particle.lame.y, gp);
    let g_poisson = corotated_poisson_adjoint(f, particle.svd, particle.youngs, particle.lame, gp);
    return P2gAdjointResult(ParticleState(gx, gv, gc, gf), frobenius(gp, particle.stress_hat), g_poisson);
}
