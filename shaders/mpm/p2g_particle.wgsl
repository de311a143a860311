// The node-independent P2G quantities of one particle (docs/design.md § MPM
// step 1, MLS-MPM/APIC, Hu et al. 2018), shared by p2g.wgsl (atomic
// scatter) and cell_scatter.wgsl (cell-binned): m_p v_p and
// A_p = −dt·4/dx²·V_p·P(F_p)F_pᵀ + m_p C_p, P the corotated stress with
// the particle's own Lamé parameters per unit E, `lame.xy` = (μ/E, λ/E)
// (src/mpm/lame.rs: ν per particle).
#import mpm/params
#import mpm/corotated
#import mpm/particle_state

struct P2gParticle {
    momentum: vec3<f32>,
    affine: mat3x3<f32>,
}

fn p2g_particle(ps: ParticleState, youngs: f32, lame: vec4<f32>, params: MpmParams) -> P2gParticle {
    let f = ps.f;
    let stress = youngs * corotated_stress_per_youngs(f, svd3(f), lame.x, lame.y);
    let k = params.dt * 4.0 * params.inv_dx * params.inv_dx * params.particle_volume;
    let affine = -k * stress * transpose(f) + params.particle_mass * ps.c;
    let momentum = params.particle_mass * ps.v;
    return P2gParticle(momentum, affine);
}
