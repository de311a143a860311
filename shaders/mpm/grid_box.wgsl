// Turns the node bounds of grid_bounds into the active box (origin, dims,
// node count) and the indirect dispatch arguments of the per-node kernels
// (256 threads per workgroup) and of the per-column kernels (one thread per
// (x, y) column of the box's base cells, 8 per workgroup: cell_scatter.wgsl,
// g2p_adjoint.wgsl and p2g_adjoint.wgsl `main_cells`),
// folded into 2-D past 65,535 workgroups, then resets the bounds for the
// next substep.
// One invocation.
#import mpm/params
#import mpm/node_box

// Workgroup size of the per-node kernels (grid_clear, grid_update, grid_update_adjoint).
const NODE_WORKGROUP: u32 = 256u;
// Workgroup size of the per-column kernels (cell_scatter.wgsl,
// g2p_adjoint.wgsl and p2g_adjoint.wgsl `main_cells`): one SIMD row of lavapipe's 8 lanes, so that the
// few hundred columns of a small object still make enough workgroups to
// share between the driver's threads (32 per workgroup: ~5% more CPU time
// in case a's backward, docs/benchmarks.md).
const COLUMN_WORKGROUP: u32 = 8u;
// Workgroups per dispatch dimension every adapter allows (WebGPU's
// guaranteed maxComputeWorkgroupsPerDimension).
const MAX_WORKGROUPS_PER_DIM: u32 = 65535u;

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read_write> bounds: array<u32, 6>;
// [origin x, y, z, dims x, y, z, node count, 0].
@group(0) @binding(2) var<storage, read_write> node_box: array<u32, 8>;
// [workgroups x, y, z] of the per-node kernels, then of the per-column
// kernels.
@group(0) @binding(3) var<storage, read_write> dispatch_args: array<u32, 6>;

@compute @workgroup_size(1)
fn main() {
    let lo = vec3<u32>(bounds[0], bounds[1], bounds[2]);
    let hi = vec3<u32>(bounds[3], bounds[4], bounds[5]);
    var dims = vec3<u32>(0u);
    if all(hi >= lo) {
        dims = hi - lo + vec3<u32>(1u);
    }
    let count = dims.x * dims.y * dims.z;
    node_box[0] = lo.x;
    node_box[1] = lo.y;
    node_box[2] = lo.z;
    node_box[3] = dims.x;
    node_box[4] = dims.y;
    node_box[5] = dims.z;
    node_box[6] = count;
    node_box[7] = 0u;
    // Folded into 2-D past MAX_WORKGROUPS_PER_DIM workgroups, as
    // ComputeKernel::workgroups_for does on the host: x = min(groups, max),
    // y = ⌈groups / max⌉ (= ⌈groups / x⌉ for groups ≥ 1; 0 for an empty box,
    // which dispatches nothing). The per-node kernels recover the flat index
    // with flat_thread_index and skip t ≥ node count (the last row's excess).
    let groups = (count + NODE_WORKGROUP - 1u) / NODE_WORKGROUP;
    dispatch_args[0] = min(groups, MAX_WORKGROUPS_PER_DIM);
    dispatch_args[1] = (groups + MAX_WORKGROUPS_PER_DIM - 1u) / MAX_WORKGROUPS_PER_DIM;
    dispatch_args[2] = 1u;
    let cells = base_cell_extent(dims);
    let column_groups = (cells.x * cells.y + COLUMN_WORKGROUP - 1u) / COLUMN_WORKGROUP;
    dispatch_args[3] = min(column_groups, MAX_WORKGROUPS_PER_DIM);
    dispatch_args[4] = (column_groups + MAX_WORKGROUPS_PER_DIM - 1u) / MAX_WORKGROUPS_PER_DIM;
    dispatch_args[5] = 1u;
    bounds[0] = 0xffffffffu;
    bounds[1] = 0xffffffffu;
    bounds[2] = 0xffffffffu;
    bounds[3] = 0u;
    bounds[4] = 0u;
    bounds[5] = 0u;
}
