// Second half of the two cell-binned scatters (CPU adapters; the first half
// bins the particles: p2g_bin.wgsl, g2p_adjoint_bin.wgsl): entry point
// `p2g` adds (m_i, mv_i) to the grid, `g2p_adjoint` adds ∂L/∂v_i. Both
// send node i of particle p the term of binned_particle.wgsl
// `cell_node_term`: (w_ip, w_ip (u_p + M_p (x_i − x_p))), P2G with u = m v,
// M = A_p (p2g.wgsl) and the mass m_p·w_ip, G2P* with u = gv'',
// M = 4/dx²·gC'' (mpm/g2p_adjoint_particle.wgsl) and no mass.
//
// One invocation per (x, y) column of the active box walks its cells in z
// order. Each cell is the base cell of the particles on its list (all of
// them share the stencil's base node, so only the weights differ); their
// terms are summed into a window of the 3 × 3 × 3 nodes around the cell.
// Once a cell is done, the window's plane at the cell's own z is complete
// (the cells below it in z were walked before), so it is added to the
// nodes with one atomic per node and component, and the window moves up
// one plane: 9 nodes of atomics per cell instead of 27 (each node's sum of
// the three cells in z that reach it is added once). Nodes whose sum is
// zero are skipped.
#import common/dispatch
#import mpm/params
#import mpm/binned_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
@group(0) @binding(2) var<storage, read> binned: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> cell_head: array<u32>;
@group(0) @binding(4) var<storage, read> particle_next: array<u32>;
// GRID_STRIDE words per node: (m, mv) for `p2g`, ∂L/∂v (3 used) for
// `g2p_adjoint`.
@group(0) @binding(5) var<storage, read_write> nodes: array<AtomicF32>;
#atomic_f32_ops nodes

@compute @workgroup_size(8)
fn p2g(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    scatter_column(flat_thread_index(global_id, num_workgroups, 8u), true);
}

@compute @workgroup_size(8)
fn g2p_adjoint(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    scatter_column(flat_thread_index(global_id, num_workgroups, 8u), false);
}

// Adds the window's plane `l` (nodes at z = base.z + l) to the nodes: the
// 4 words (m, mv) with `mass`, else the 3 of ∂L/∂v (window .yzw).
fn flush_plane(window: array<vec4<f32>, 27>, l: u32, base: vec3<f32>, res: u32, mass: bool) {
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            let a = window[(i * 3u + j) * 3u + l];
            if any(a != vec4<f32>(0.0)) {
                let n = cell_node_index(base, vec3<u32>(i, j, l), res) * GRID_STRIDE;
                if mass {
                    nodes_atomic_add(n, a.x);
                    nodes_atomic_add(n + 1u, a.y);
                    nodes_atomic_add(n + 2u, a.z);
                    nodes_atomic_add(n + 3u, a.w);
                } else {
                    nodes_atomic_add(n, a.y);
                    nodes_atomic_add(n + 1u, a.z);
                    nodes_atomic_add(n + 2u, a.w);
                }
            }
        }
    }
}

// Scatters column t of the active box; `mass`: P2G's (m, mv), else G2P*'s
// ∂L/∂v (the window's .x stays 0).
fn scatter_column(t: u32, mass: bool) {
    let origin = vec3<u32>(node_box[0], node_box[1], node_box[2]);
    let dims = vec3<u32>(node_box[3], node_box[4], node_box[5]);
    if t >= dims.x * dims.y {
        return;
    }
    let res = nodes_per_axis(params);
    let column = vec2<u32>(origin.x + t / dims.y, origin.y + t % dims.y);
    // Per stencil node (i, j, l) at index (i·3 + j)·3 + l, l relative to
    // the current cell's z: the sums over the cells walked so far
    // (constant indices only, so the compiler keeps it in registers).
    var window: array<vec4<f32>, 27>;
    // At most particle_count links over the whole column: a corrupt
    // (cyclic) list cannot hang the kernel (src/gpu/kernel.rs
    // `physfit_runtime_checks`).
    var links = 0u;
    for (var dz = 0u; dz < dims.z; dz++) {
        let base = vec3<f32>(vec3<u32>(column, origin.z + dz));
        let cell = node_index(vec3<i32>(base), res);
        var q = cell_head[cell];
        if mass && q != 0u {
            // Reset the list for the next binning: cell_head is all zeros
            // between scatters (buffers start zeroed; every list built is
            // walked here), so no dispatch has to clear it. G2P*'s lists
            // are walked again, and reset, by p2g_adjoint.wgsl `main_cells`.
            cell_head[cell] = 0u;
        }
        for (; links < params.particle_count && q != 0u; links++) {
            let p = q - 1u;
            let b = p * BINNED_QUADS;
            var record: array<vec4<f32>, BINNED_QUADS>;
            for (var k = 0u; k < BINNED_QUADS; k++) {
                record[k] = binned[b + k];
            }
            let particle = binned_particle(record);
            let cw = cell_weights(particle.x, base, params);
            for (var i = 0u; i < 3u; i++) {
                for (var j = 0u; j < 3u; j++) {
                    for (var l = 0u; l < 3u; l++) {
                        let term = cell_node_term(particle, cw, vec3<u32>(i, j, l), params);
                        let m = select(0.0, term.x * params.particle_mass, mass);
                        window[(i * 3u + j) * 3u + l] += vec4<f32>(m, term.yzw);
                    }
                }
            }
            q = particle_next[p];
        }
        flush_plane(window, 0u, base, res, mass);
        for (var i = 0u; i < 3u; i++) {
            for (var j = 0u; j < 3u; j++) {
                let n = (i * 3u + j) * 3u;
                window[n] = window[n + 1u];
                window[n + 1u] = window[n + 2u];
                window[n + 2u] = vec4<f32>(0.0);
            }
        }
    }
    // Planes past the column's last cell (empty when the box holds every
    // stencil, as grid_box.wgsl makes it).
    let top = vec3<f32>(vec3<u32>(column, origin.z + dims.z));
    flush_plane(window, 0u, top, res, mass);
    flush_plane(window, 1u, top, res, mass);
}
