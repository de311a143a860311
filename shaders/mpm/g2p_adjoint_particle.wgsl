// Per-particle math of the adjoint of G2P, shared by g2p_adjoint.wgsl (which
// scatter-adds ∂L/∂v_i with atomics) and g2p_adjoint_bin.wgsl (which bins
// the particle for g2p_adjoint_cells.wgsl instead); the equations are in
// g2p_adjoint.wgsl's header (DESIGN.md § Adjoint). Functions take and return
// values: the kernels keep their own bindings, loads and writes (naga takes
// no storage pointers as function parameters).
#import mpm/params
#import mpm/particle_state
#import mpm/stencil_node

// One particle's inputs, unpacked from its state record (x, F) and from its
// record of ∂L/∂(state n+1) (STATE_QUADS vec4s each: x, v, C, F).
struct G2pAdjointInputs {
    x: vec3<f32>,
    f: mat3x3<f32>,
    gx_next: vec3<f32>,
    gv_next: vec3<f32>,
    gc_next: mat3x3<f32>,
    gf_next: mat3x3<f32>,
}

fn g2p_adjoint_inputs(state: array<vec4<f32>, STATE_QUADS>, grad_next: array<vec4<f32>, STATE_QUADS>) -> G2pAdjointInputs {
    let ps = particle_state(state);
    let g = particle_state(grad_next);
    return G2pAdjointInputs(ps.x, ps.f, g.x, g.v, g.c, g.f);
}

// What a non-anchored particle carries through its 27 stencil nodes:
// gv'' = gv' + dt·gx', gC'' = gC' + dt·gF'·Fᵀ, 4/dx² and its stencil.
struct G2pAdjointCarry {
    gv: vec3<f32>,
    gc: mat3x3<f32>,
    apic: f32,
    s: Stencil,
}

fn g2p_adjoint_carry(inputs: G2pAdjointInputs, params: MpmParams) -> G2pAdjointCarry {
    let gv = inputs.gv_next + params.dt * inputs.gx_next;
    let gc = inputs.gc_next + params.dt * inputs.gf_next * transpose(inputs.f);
    let apic = 4.0 * params.inv_dx * params.inv_dx;
    return G2pAdjointCarry(gv, gc, apic, stencil(inputs.x, params));
}

// One node's terms given its velocity v_i: the node's share of
// B = Σ w_ip v_i (x_i − x_p)ᵀ (C' = 4/dx²·B), of gx and ∂L/∂v_i.
struct G2pAdjointNodeTerms {
    b: mat3x3<f32>,
    gx: vec3<f32>,
    grid_velocity_grad: vec3<f32>,
}

fn g2p_adjoint_node_terms(carry: G2pAdjointCarry, node: StencilNode, vi: vec3<f32>) -> G2pAdjointNodeTerms {
    let w = node.w;
    let dpos = node.dpos;
    let b = mat3x3<f32>(w * dpos.x * vi, w * dpos.y * vi, w * dpos.z * vi);
    let gc_dpos = carry.gc * dpos;
    let gvi = w * (carry.gv + carry.apic * gc_dpos);
    let gx = (dot(carry.gv, vi) + carry.apic * dot(vi, gc_dpos)) * node.grad_w - carry.apic * w * (transpose(carry.gc) * vi);
    return G2pAdjointNodeTerms(b, gx, gvi);
}

// gF = (I + dt C')ᵀ gF' with C' = 4/dx²·B.
fn g2p_adjoint_gf(carry: G2pAdjointCarry, b: mat3x3<f32>, gf_next: mat3x3<f32>, params: MpmParams) -> mat3x3<f32> {
    let c_new = carry.apic * b;
    let identity = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    return transpose(identity + params.dt * c_new) * gf_next;
}

// The G2P part of ∂L/∂(state n) as a record: [gx, gv = 0, gC = 0, gF row-major].
fn g2p_adjoint_state_grad(gx: vec3<f32>, gf: mat3x3<f32>) -> array<vec4<f32>, STATE_QUADS> {
    return state_quads(gx, vec3<f32>(0.0), mat3x3<f32>(), gf);
}
