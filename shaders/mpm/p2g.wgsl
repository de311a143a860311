// P2G (docs/design.md § MPM step 1, MLS-MPM/APIC, Hu et al. 2018): each particle
// scatters m_p·w_ip to the node mass and w_ip·(m_p v_p + A_p (x_i − x_p)) to
// the node momentum, A_p = −dt·4/dx²·V_p·P(F_p)F_pᵀ + m_p C_p; particles
// flagged anchored also mark the nodes they hold as anchored: every node with
// w_ip > 0, or only the nearest one, by `anchor_rule` (mpm/params holds_node).
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/p2g_particle
#import mpm/stencil_node

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> youngs: array<f32>;
@group(0) @binding(3) var<storage, read> anchored: array<u32>;
@group(0) @binding(4) var<storage, read_write> grid: array<AtomicF32>;
#atomic_f32_ops grid
@group(0) @binding(5) var<storage, read_write> grid_anchored: array<atomic<u32>>;
// (μ/E, λ/E, d(μ/E)/dν, d(λ/E)/dν) per particle (src/mpm/lame.rs).
@group(0) @binding(6) var<storage, read> lame: array<vec4<f32>>;

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
    if anchored[p] != 0u && holds_whole_stencil(params) {
        // Its terms would land on held nodes only (mpm/params
        // `holds_whole_stencil`): mark them, add nothing.
        let s = stencil(x, params);
        for (var i = 0u; i < 3u; i++) {
            for (var j = 0u; j < 3u; j++) {
                for (var l = 0u; l < 3u; l++) {
                    let node_at = stencil_node(s, vec3<u32>(i, j, l), params);
                    if holds_node(vec3<u32>(i, j, l), node_at.w, params) {
                        atomicStore(&grid_anchored[node_at.node], 1u);
                    }
                }
            }
        }
        return;
    }
    let particle = p2g_particle(ps, youngs[p], lame[p], params);
    let affine = particle.affine;
    let momentum = particle.momentum;
    let is_anchored = anchored[p] != 0u;
    let s = stencil(x, params);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let node_at = stencil_node(s, vec3<u32>(i, j, l), params);
                let w = node_at.w;
                let dpos = node_at.dpos;
                let node = node_at.node;
                let mv = w * (momentum + affine * dpos);
                grid_atomic_add(node * GRID_STRIDE, w * params.particle_mass);
                grid_atomic_add(node * GRID_STRIDE + 1u, mv.x);
                grid_atomic_add(node * GRID_STRIDE + 2u, mv.y);
                grid_atomic_add(node * GRID_STRIDE + 3u, mv.z);
                if is_anchored && holds_node(vec3<u32>(i, j, l), w, params) {
                    atomicStore(&grid_anchored[node], 1u);
                }
            }
        }
    }
}
