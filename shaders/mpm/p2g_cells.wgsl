// Second half of the cell-binned P2G (after p2g_bin.wgsl): one invocation
// per node of the active box, taken as the base cell of the particles on
// its list. For each of the 27 stencil nodes it sums, over the cell's
// particles, m_p·w_ip and w_ip·(m_p v_p + A_p (x_i − x_p)) (the same terms
// as p2g.wgsl; all particles of a cell share the stencil's base node, so
// only the weights differ) and adds the sums to the grid with one atomic
// per node and component.
#import common/dispatch
#import mpm/params
#import mpm/boundary
#import mpm/node_box
#import mpm/binned_particle

@group(0) @binding(0) var<uniform> params: MpmParams;
// Active box [origin xyz, dims xyz, count, 0] (grid_box.wgsl).
@group(0) @binding(1) var<storage, read> node_box: array<u32, 8>;
@group(0) @binding(2) var<storage, read> binned: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> cell_head: array<u32>;
@group(0) @binding(4) var<storage, read> particle_next: array<u32>;
@group(0) @binding(5) var<storage, read_write> grid: array<AtomicF32>;
#atomic_f32_ops grid

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let t = flat_thread_index(global_id, num_workgroups, 256u);
    if t >= node_box[6] {
        return;
    }
    let res = nodes_per_axis(params);
    let cell = box_node(t, vec3<u32>(node_box[0], node_box[1], node_box[2]), vec3<u32>(node_box[3], node_box[4], node_box[5]), res);
    let head = cell_head[cell];
    if head == 0u {
        return;
    }
    // Reset the list for the next binning: cell_head is all zeros between
    // scatters (buffers start zeroed; every list built is walked here), so
    // no dispatch has to clear it.
    cell_head[cell] = 0u;
    let base = vec3<f32>(node_coords(cell, res));
    // Per stencil node (i, j, l) at index (i·3 + j)·3 + l: (m, mv) summed
    // over the cell's particles (the loops have constant bounds, so the
    // compiler unrolls them and keeps the array in registers).
    var acc: array<vec4<f32>, 27>;
    var q = head;
    // At most particle_count links: a corrupt (cyclic) list cannot hang the
    // kernel (src/gpu/kernel.rs `physfit_runtime_checks`).
    for (var links = 0u; links < params.particle_count && q != 0u; links++) {
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
                    acc[(i * 3u + j) * 3u + l] += vec4<f32>(term.x * params.particle_mass, term.yzw);
                }
            }
        }
        q = particle_next[p];
    }
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            for (var l = 0u; l < 3u; l++) {
                let a = acc[(i * 3u + j) * 3u + l];
                let node = cell_node_index(base, vec3<u32>(i, j, l), res);
                grid_atomic_add(node * GRID_STRIDE, a.x);
                grid_atomic_add(node * GRID_STRIDE + 1u, a.y);
                grid_atomic_add(node * GRID_STRIDE + 2u, a.z);
                grid_atomic_add(node * GRID_STRIDE + 3u, a.w);
            }
        }
    }
}
