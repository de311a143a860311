// First half of the cell-binned P2G (src/mpm/p2g_bin.rs explains when it
// replaces p2g.wgsl): per particle, the P2G quantities of p2g.wgsl that do
// not depend on the node, m_p v_p and A_p = −dt·4/dx²·V_p·P(F_p)F_pᵀ + m_p C_p
// (DESIGN.md § MPM step 1), written to `binned` as [x (3), m v (3),
// A row-major (9), 0] (16 f32), and the particle pushed onto the list of
// its stencil's base cell (`cell_head[base node]` holds p + 1, 0 = empty;
// `particle_next[p]` the previous head). Anchored particles mark their nodes
// as p2g.wgsl does. cell_scatter.wgsl (`p2g`) then sums each cell's particles in
// registers: one atomic per node and component per cell instead of per
// particle. The lists are the substep grid's: grid_clear.wgsl empties them
// (over the active box, which holds every base cell) before this kernel,
// and the substep's adjoint walks them again (g2p_adjoint.wgsl and
// p2g_adjoint.wgsl, `main_cells`).
#import common/dispatch
#import mpm/params
#import mpm/particle_state
#import mpm/p2g_particle
#import mpm/binned_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> youngs: array<f32>;
@group(0) @binding(3) var<storage, read> anchored: array<u32>;
@group(0) @binding(4) var<storage, read_write> binned: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> cell_head: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> particle_next: array<u32>;
@group(0) @binding(7) var<storage, read_write> grid_anchored: array<atomic<u32>>;

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
    let particle = p2g_particle(ps, youngs[p], params);
    let affine = particle.affine;
    let momentum = particle.momentum;
    let b = p * BINNED_QUADS;
    let record = binned_record(x, momentum, affine);
    for (var k = 0u; k < BINNED_QUADS; k++) {
        binned[b + k] = record[k];
    }
    let s = stencil(x, params);
    let res = nodes_per_axis(params);
    particle_next[p] = atomicExchange(&cell_head[node_index(s.base, res)], p + 1u);
    if anchored[p] != 0u {
        for (var i = 0u; i < 3u; i++) {
            for (var j = 0u; j < 3u; j++) {
                for (var l = 0u; l < 3u; l++) {
                    let w = stencil_w(s, i).x * stencil_w(s, j).y * stencil_w(s, l).z;
                    if w > 0.0 {
                        atomicStore(&grid_anchored[node_index(s.base + vec3<i32>(vec3<u32>(i, j, l)), res)], 1u);
                    }
                }
            }
        }
    }
}
