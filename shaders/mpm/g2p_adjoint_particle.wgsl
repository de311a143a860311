// Per-particle math of the adjoint of G2P (docs/design.md § Adjoint). With
// v' = Σ_i w_ip v_i, C' = 4/dx²·Σ_i w_ip v_i (x_i − x_p)ᵀ, x' = x + dt v'
// and F' = (I + dt C')F, given ∂L/∂(state n+1) = (gx', gv', gC', gF'):
//   gv'' = gv' + dt·gx',   gC'' = gC' + dt·gF'·Fᵀ,
//   ∂L/∂v_i += w_ip h_i,   h_i = gv'' + 4/dx²·gC''·(x_i − x_p),
//   gF = (I + dt C')ᵀ gF',
//   gx = gx' + Σ_i (v_i·h_i) ∇w_ip − 4/dx²·gC''ᵀ v'
// (the last term from ∂(x_i − x_p)/∂x_p = −I, summed over the nodes:
// Σ_i w_ip gC''ᵀ v_i = gC''ᵀ v'). Anchored particles: x' = x, F' = F,
// v' = C' = 0, so gx = gx', gF = gF' and nothing reaches the grid.
//
// The work splits by where it runs. The scatter of ∂L/∂v_i needs only the
// particle's carry (gv'', gC''): g2p_adjoint.wgsl, `main` (atomics per
// particle) or `main_cells` (per column of cells). The
// particle's own terms (gx, gF) read v_i at the 27 nodes of x_n, the
// stencil P2G* walks, so P2G* adds them in its node loop
// (mpm/p2g_adjoint_particle); C' and v' are read from state n+1 rather
// than summed again.
// Functions take and return values: the kernels keep their own bindings,
// loads and writes (naga takes no storage pointers as function
// parameters).
#import mpm/params
#import mpm/particle_state
#import mpm/cell_walk

// (gv'', gC'') of a particle, and 4/dx² (zero for an anchored particle, so
// that its node terms vanish without a branch).
struct G2pAdjointCarry {
    gv: vec3<f32>,
    gc: mat3x3<f32>,
    apic: f32,
}

// From the particle's F and its ∂L/∂(state n+1) parts gx', gv', gC', gF'.
fn g2p_adjoint_carry(
    f: mat3x3<f32>,
    gx_next: vec3<f32>,
    gv_next: vec3<f32>,
    gc_next: mat3x3<f32>,
    gf_next: mat3x3<f32>,
    anchored: bool,
    params: MpmParams,
) -> G2pAdjointCarry {
    if anchored {
        return G2pAdjointCarry(vec3<f32>(0.0), mat3x3<f32>(), 0.0);
    }
    let gv = gv_next + params.dt * gx_next;
    let gc = gc_next + params.dt * gf_next * transpose(f);
    return G2pAdjointCarry(gv, gc, 4.0 * params.inv_dx * params.inv_dx);
}

// A non-anchored particle at x with deformation gradient F and
// ∂L/∂(state n+1) = g as the cell-list G2P* scatter sees it
// (g2p_adjoint.wgsl `main_cells`): u = gv'', M = 4/dx²·gC''.
fn g2p_adjoint_cell_particle(x: vec3<f32>, f: mat3x3<f32>, g: ParticleState, params: MpmParams) -> CellParticle {
    let carry = g2p_adjoint_carry(f, g.x, g.v, g.c, g.f, false, params);
    return CellParticle(x, carry.gv, carry.apic * carry.gc);
}

// h_i = gv'' + 4/dx²·gC''·(x_i − x_p) for a node at `dpos` = x_i − x_p.
fn g2p_adjoint_h(carry: G2pAdjointCarry, dpos: vec3<f32>) -> vec3<f32> {
    return carry.gv + carry.apic * (carry.gc * dpos);
}

// The node-independent part of gx: −4/dx²·gC''ᵀ v'.
fn g2p_adjoint_gx_affine(carry: G2pAdjointCarry, v_next: vec3<f32>) -> vec3<f32> {
    return -carry.apic * (transpose(carry.gc) * v_next);
}

// gF = (I + dt C')ᵀ gF' (C' = 0 for an anchored particle).
fn g2p_adjoint_gf(c_next: mat3x3<f32>, gf_next: mat3x3<f32>, params: MpmParams) -> mat3x3<f32> {
    let identity = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    return transpose(identity + params.dt * c_next) * gf_next;
}
