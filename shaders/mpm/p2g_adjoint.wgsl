// Particle side of a substep's adjoint: the adjoint of P2G (mirrors
// p2g.wgsl) plus the particle terms of the adjoint of G2P, which read the
// grid at the same 27 nodes of x_n (equations: mpm/p2g_adjoint_particle;
// the grid side of G2P* is g2p_adjoint.wgsl). Each particle reads (∂L/∂mv_i, ∂L/∂m_i) and v_i at
// its nodes, so no atomics, writes the whole ∂L/∂(state n) and adds its
// ∂L/∂E into `youngs_grad` and its ∂L/∂ν into `poisson_grad` (both
// accumulated over substeps).
//
// Entry points:
// - `main` (GPUs): one thread per particle, gathering its 27 nodes.
// - `main_cells` (CPU adapters): walks the cell lists that P2G's binning
//   built for this substep (p2g_bin.wgsl: every particle, by its
//   stencil's base cell at x_n). On lavapipe a storage load whose address differs
//   between SIMD lanes is a loop over the lanes with a branch per lane and
//   component, so `main`'s 54 node gathers per particle are most of its
//   instructions. Here one invocation per (x, y) column of the active
//   box's base cells walks its cells in z order and keeps the 3 × 3 × 3 nodes around the
//   current cell in a window: a cell with particles loads the one new
//   plane of 9 nodes (all 27 after an empty cell), and every particle on
//   its list reads its nodes from the window. The lists are only read
//   (grid_clear.wgsl empties them before the grid's next binning).
#import common/dispatch
#import mpm/params
#import mpm/node_box
#import mpm/particle_state
#import mpm/p2g_adjoint_particle
#import mpm/cell_lists

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
// `main_cells` only: the active box and the lists walked: bindings 10–12,
// mpm/cell_lists.
// (μ/E, λ/E, d(μ/E)/dν, d(λ/E)/dν) per particle (src/mpm/lame.rs).
@group(0) @binding(13) var<storage, read> lame: array<vec4<f32>>;
// ∂L/∂ν per particle, accumulated over substeps.
@group(0) @binding(14) var<storage, read_write> poisson_grad: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
        return;
    }
    if held_whole(p) {
        write_held_particle(p);
        return;
    }
    let particle = load_particle(p);
    let res = nodes_per_axis(params);
    var sums = p2g_adjoint_sums(particle);
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let offset = vec3<u32>(i, j, l);
                let node = node_index(particle.s.base + vec3<i32>(offset), res);
                sums = p2g_adjoint_node(sums, particle, offset, grid_grad[node], grid_velocity[node].xyz, params);
            }
        }
    }
    write_particle(p, particle, sums);
}

// An anchored particle that holds its whole stencil (mpm/params
// `holds_whole_stencil`).
fn held_whole(p: u32) -> bool {
    return anchored[p] != 0u && holds_whole_stencil(params);
}

// Its ∂L/∂(state n) without the SVD or the nodes: every node term is zero
// (∂L/∂(m_i, mv_i) = 0 and v_i = 0 at held nodes) and G2P left its v' and
// C' at 0, so gx = gx', gF = gF' and gv = gC = 0, and it adds nothing to
// ∂L/∂E or ∂L/∂ν: what the full computation gives, exactly.
fn write_held_particle(p: u32) {
    let o = p * STATE_QUADS;
    var grad_next_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        grad_next_record[k] = state_grad_next[o + k];
    }
    let g = particle_state(grad_next_record);
    let record = state_quads(g.x, vec3<f32>(0.0), mat3x3<f32>(), g.f);
    for (var q = 0u; q < STATE_QUADS; q++) {
        state_grad[o + q] = record[q];
    }
}

// Particle p's node-independent parts, from its records.
fn load_particle(p: u32) -> P2gAdjointParticle {
    let o = p * STATE_QUADS;
    var state_record: array<vec4<f32>, STATE_QUADS>;
    var next_record: array<vec4<f32>, STATE_QUADS>;
    var grad_next_record: array<vec4<f32>, STATE_QUADS>;
    for (var k = 0u; k < STATE_QUADS; k++) {
        state_record[k] = state[o + k];
        next_record[k] = state_next[o + k];
        grad_next_record[k] = state_grad_next[o + k];
    }
    return p2g_adjoint_particle(
        particle_state(state_record),
        particle_state(next_record),
        particle_state(grad_next_record),
        youngs[p],
        lame[p],
        anchored[p] != 0u,
        params,
    );
}

// Writes particle p's ∂L/∂(state n) and adds its ∂L/∂E and ∂L/∂ν.
fn write_particle(p: u32, particle: P2gAdjointParticle, sums: P2gAdjointSums) {
    let result = p2g_adjoint_finish(particle, sums, params);
    youngs_grad[p] += result.youngs_grad;
    poisson_grad[p] += result.poisson_grad;
    let g = result.grad;
    let record = state_quads(g.x, g.v, g.c, g.f);
    let o = p * STATE_QUADS;
    for (var q = 0u; q < STATE_QUADS; q++) {
        state_grad[o + q] = record[q];
    }
}

// A node's (∂L/∂mv, ∂L/∂m) and v_i; zero outside the active box (no
// particle's stencil reaches there, and the buffers hold stale values).
struct WindowNode {
    grad: vec4<f32>,
    velocity: vec4<f32>,
}

fn window_node(c: vec3<u32>, box_end: vec3<u32>, res: u32) -> WindowNode {
    if any(c >= box_end) {
        return WindowNode(vec4<f32>(0.0), vec4<f32>(0.0));
    }
    let n = node_index(vec3<i32>(c), res);
    return WindowNode(grid_grad[n], grid_velocity[n]);
}

// One invocation per (x, y) column of the active box's base cells
// (node_box.wgsl `base_cell_extent`; grid_box.wgsl
// COLUMN_WORKGROUP per workgroup).
@compute @workgroup_size(8)
fn main_cells(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let t = flat_thread_index(global_id, num_workgroups, 8u);
    let walk = box_column(node_box, t);
    if !walk.has_column {
        return;
    }
    let res = nodes_per_axis(params);
    let box_end = walk.origin + vec3<u32>(node_box[3], node_box[4], node_box[5]);
    let column = walk.column;
    // Node (i, j, l) around the current cell at index (i·3 + j)·3 + l
    // (constant indices only, so the compiler keeps it in registers).
    var grads: array<vec4<f32>, 27>;
    var velocities: array<vec4<f32>, 27>;
    // Whether the window holds the nodes of the cell at z = loaded_z.
    var loaded = false;
    var loaded_z = 0u;
    var links = 0u;
    for (var dz = 0u; dz < walk.cells.z; dz++) {
        let z = walk.origin.z + dz;
        var cursor = list_start(node_index(vec3<i32>(vec3<u32>(column, z)), res), links);
        if cursor.entry == 0u {
            continue;
        }
        if loaded && loaded_z + 1u == z {
            // Slide up one plane and load the new top one.
            for (var i = 0u; i < 3u; i++) {
                for (var j = 0u; j < 3u; j++) {
                    let n = (i * 3u + j) * 3u;
                    grads[n] = grads[n + 1u];
                    grads[n + 1u] = grads[n + 2u];
                    velocities[n] = velocities[n + 1u];
                    velocities[n + 1u] = velocities[n + 2u];
                    let node = window_node(vec3<u32>(column + vec2<u32>(i, j), z + 2u), box_end, res);
                    grads[n + 2u] = node.grad;
                    velocities[n + 2u] = node.velocity;
                }
            }
        } else {
            for (var i = 0u; i < 3u; i++) {
                for (var j = 0u; j < 3u; j++) {
                    for (var l = 0u; l < 3u; l++) {
                        let node = window_node(vec3<u32>(column + vec2<u32>(i, j), z + l), box_end, res);
                        grads[(i * 3u + j) * 3u + l] = node.grad;
                        velocities[(i * 3u + j) * 3u + l] = node.velocity;
                    }
                }
            }
        }
        loaded = true;
        loaded_z = z;
        for (; list_has_particle(cursor, params.particle_count); cursor = list_next(cursor)) {
            particle_adjoint(list_particle(cursor), grads, velocities);
        }
        links = cursor.links;
    }
}

// Particle p's adjoint with its stencil's nodes in the window.
fn particle_adjoint(p: u32, grads: array<vec4<f32>, 27>, velocities: array<vec4<f32>, 27>) {
    if held_whole(p) {
        write_held_particle(p);
        return;
    }
    let particle = load_particle(p);
    // The 27 nodes written out: as a loop, the body is too large for the
    // compiler to unroll, and a window indexed at run time leaves the
    // registers (2.4× the backward's instructions on lavapipe).
    var sums = p2g_adjoint_sums(particle);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 0u, 0u), grads[0], velocities[0].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 0u, 1u), grads[1], velocities[1].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 0u, 2u), grads[2], velocities[2].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 1u, 0u), grads[3], velocities[3].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 1u, 1u), grads[4], velocities[4].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 1u, 2u), grads[5], velocities[5].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 2u, 0u), grads[6], velocities[6].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 2u, 1u), grads[7], velocities[7].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(0u, 2u, 2u), grads[8], velocities[8].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 0u, 0u), grads[9], velocities[9].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 0u, 1u), grads[10], velocities[10].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 0u, 2u), grads[11], velocities[11].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 1u, 0u), grads[12], velocities[12].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 1u, 1u), grads[13], velocities[13].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 1u, 2u), grads[14], velocities[14].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 2u, 0u), grads[15], velocities[15].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 2u, 1u), grads[16], velocities[16].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(1u, 2u, 2u), grads[17], velocities[17].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 0u, 0u), grads[18], velocities[18].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 0u, 1u), grads[19], velocities[19].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 0u, 2u), grads[20], velocities[20].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 1u, 0u), grads[21], velocities[21].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 1u, 1u), grads[22], velocities[22].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 1u, 2u), grads[23], velocities[23].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 2u, 0u), grads[24], velocities[24].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 2u, 1u), grads[25], velocities[25].xyz, params);
    sums = p2g_adjoint_node(sums, particle, vec3<u32>(2u, 2u, 2u), grads[26], velocities[26].xyz, params);
    write_particle(p, particle, sums);
}
