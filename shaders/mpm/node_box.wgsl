// Flat node index of the t-th node of the active box (origin, dims), for
// the per-node kernels dispatched over the box (src/mpm/grid_box.rs).
fn box_node(t: u32, origin: vec3<u32>, dims: vec3<u32>, nodes_per_axis: u32) -> u32 {
    let c = origin + vec3<u32>(t / (dims.y * dims.z), (t / dims.z) % dims.y, t % dims.z);
    return (c.x * nodes_per_axis + c.y) * nodes_per_axis + c.z;
}

// The base cells of an active box of `dims` nodes per axis: every
// particle's stencil base node lies in [origin, origin + dims − 2)
// (grid_bounds.wgsl: the box spans the base nodes plus a stencil's 2 more),
// so the per-column kernels (cell_scatter.wgsl, g2p_adjoint.wgsl and
// p2g_adjoint.wgsl `main_cells`) walk only these (x, y) columns and z cells.
// Zero for an empty box (dims 0).
fn base_cell_extent(dims: vec3<u32>) -> vec3<u32> {
    return max(dims, vec3<u32>(2u)) - vec3<u32>(2u);
}

// What a per-column kernel's invocation t walks: the box origin, the base
// cells' extent, its column's (x, y), and whether t has a column
// (`has_column`: t < cells.x·cells.y; the last workgroup's excess has none).
struct BoxColumn {
    origin: vec3<u32>,
    cells: vec3<u32>,
    column: vec2<u32>,
    has_column: bool,
}

fn box_column(node_box: array<u32, 8>, t: u32) -> BoxColumn {
    let origin = vec3<u32>(node_box[0], node_box[1], node_box[2]);
    let cells = base_cell_extent(vec3<u32>(node_box[3], node_box[4], node_box[5]));
    let column = origin.xy + vec2<u32>(t / max(cells.y, 1u), t % max(cells.y, 1u));
    return BoxColumn(origin, cells, column, t < cells.x * cells.y);
}

// Base node of cell dz (0-based, in z) of the column, as the f32 position
// the cell walks take (cells.z: the first plane above the last cell).
fn column_cell(walk: BoxColumn, dz: u32) -> vec3<f32> {
    return vec3<f32>(vec3<u32>(walk.column, walk.origin.z + dz));
}
