// Per-particle math of the adjoint of G2P, shared by g2p_adjoint.wgsl (which
// scatter-adds ∂L/∂v_i with atomics) and g2p_adjoint_bin.wgsl (which bins
// the particle for g2p_adjoint_cells.wgsl instead); the equations are in
// g2p_adjoint.wgsl's header (DESIGN.md § Adjoint). Functions take and return
// values: the kernels keep their own bindings, loads and writes (naga takes
// no storage pointers as function parameters).
#import mpm/params
#import mpm/particle_state
#import mpm/stencil_node

// One particle's inputs, unpacked from its state record at substep n (x, F),
// its state record at substep n+1 (v' and C', what G2P computed from the
// grid, so they need not be summed again over the 27 nodes) and its record
// of ∂L/∂(state n+1) (STATE_QUADS vec4s each: x, v, C, F).
struct G2pAdjointInputs {
    x: vec3<f32>,
    f: mat3x3<f32>,
    v_next: vec3<f32>,
    c_next: mat3x3<f32>,
    gx_next: vec3<f32>,
    gv_next: vec3<f32>,
    gc_next: mat3x3<f32>,
    gf_next: mat3x3<f32>,
}

fn g2p_adjoint_inputs(
    state: array<vec4<f32>, STATE_QUADS>,
    state_next: array<vec4<f32>, STATE_QUADS>,
    grad_next: array<vec4<f32>, STATE_QUADS>,
) -> G2pAdjointInputs {
    let ps = particle_state(state);
    let next = particle_state(state_next);
    let g = particle_state(grad_next);
    return G2pAdjointInputs(ps.x, ps.f, next.v, next.c, g.x, g.v, g.c, g.f);
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

// One node's terms given its velocity v_i: with h_i = gv'' + 4/dx²·gC''·(x_i − x_p),
// ∂L/∂v_i = w_ip h_i and the node's share (v_i·h_i) ∇w_ip of gx. The
// −4/dx²·w_ip gC''ᵀ v_i share sums to −4/dx²·gC''ᵀ v' over the nodes
// (v' = Σ w_ip v_i): `g2p_adjoint_gx_affine` adds it once.
struct G2pAdjointNodeTerms {
    gx: vec3<f32>,
    grid_velocity_grad: vec3<f32>,
}

fn g2p_adjoint_node_terms(carry: G2pAdjointCarry, node: StencilNode, vi: vec3<f32>) -> G2pAdjointNodeTerms {
    let h = carry.gv + carry.apic * (carry.gc * node.dpos);
    return G2pAdjointNodeTerms(dot(vi, h) * node.grad_w, node.w * h);
}

// The node-independent part of gx: −4/dx²·gC''ᵀ v'.
fn g2p_adjoint_gx_affine(carry: G2pAdjointCarry, inputs: G2pAdjointInputs) -> vec3<f32> {
    return -carry.apic * (transpose(carry.gc) * inputs.v_next);
}

// gF = (I + dt C')ᵀ gF'.
fn g2p_adjoint_gf(inputs: G2pAdjointInputs, params: MpmParams) -> mat3x3<f32> {
    let identity = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    return transpose(identity + params.dt * inputs.c_next) * inputs.gf_next;
}

// The G2P part of ∂L/∂(state n) as a record: [gx, gv = 0, gC = 0, gF row-major].
fn g2p_adjoint_state_grad(gx: vec3<f32>, gf: mat3x3<f32>) -> array<vec4<f32>, STATE_QUADS> {
    return state_quads(gx, vec3<f32>(0.0), mat3x3<f32>(), gf);
}
