// External force of an impulse (src/mpm/forcing.rs, which says
// why it is a scatter of its own): after P2G and before the grid update,
// every particle held by an active impulse adds w_ip·m_p·Δv_p to the
// momentum of its 27 stencil nodes, Δv_p = Σ_k (bit k of members[p])·dv[k]
// and dv[k] = a_k·dt·(the fraction of the substep inside impulse k's
// window), normalised units. The node masses are untouched, so the grid
// update's v_i = mv_i/m_i gains Σ_p w_ip m_p Δv_p / m_i, and the grid
// momentum (hence the particles', APIC conserving it) grows by
// Σ_p m_p Δv_p per substep: a force density on the particles, applied
// where P2G would apply it. Anchored particles are never members (their
// nodes are zeroed by the grid update anyway).
#import common/dispatch
#import mpm/params
#import mpm/stencil_node

// Most impulses: the bits of one u32 mask (src/interact MAX_IMPULSES).
const MAX_IMPULSES: u32 = 32u;

struct ImpulseTable {
    // Per impulse: velocity change this substep (xyz), w unused.
    dv: array<vec4<f32>, MAX_IMPULSES>,
}

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<uniform> table: ImpulseTable;
@group(0) @binding(2) var<storage, read> state: array<vec4<f32>>;
// Per particle: bit k set when impulse k holds it.
@group(0) @binding(3) var<storage, read> members: array<u32>;
// GRID_STRIDE words per node: (m, mv), after P2G.
@group(0) @binding(4) var<storage, read_write> grid: array<AtomicF32>;
#atomic_f32_ops grid

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
        return;
    }
    let mask = members[p];
    if mask == 0u {
        return;
    }
    var dv = vec3<f32>(0.0);
    for (var k = 0u; k < MAX_IMPULSES; k++) {
        if ((mask >> k) & 1u) != 0u {
            dv += table.dv[k].xyz;
        }
    }
    if all(dv == vec3<f32>(0.0)) {
        return;
    }
    // x is the first three floats of the state record (mpm/particle_state).
    let x = state[p * (STATE_STRIDE / 4u)].xyz;
    let momentum = params.particle_mass * dv;
    let s = stencil(x, params);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let node_at = stencil_node(s, vec3<u32>(i, j, l), params);
                let mv = node_at.w * momentum;
                let node = node_at.node;
                grid_atomic_add(node * GRID_STRIDE + 1u, mv.x);
                grid_atomic_add(node * GRID_STRIDE + 2u, mv.y);
                grid_atomic_add(node * GRID_STRIDE + 3u, mv.z);
            }
        }
    }
}
