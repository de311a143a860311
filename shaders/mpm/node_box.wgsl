// Flat node index of the t-th node of the active box (origin, dims), for
// the per-node kernels dispatched over the box (src/mpm/grid_box.rs).
fn box_node(t: u32, origin: vec3<u32>, dims: vec3<u32>, nodes_per_axis: u32) -> u32 {
    let c = origin + vec3<u32>(t / (dims.y * dims.z), (t / dims.z) % dims.y, t % dims.z);
    return (c.x * nodes_per_axis + c.y) * nodes_per_axis + c.z;
}
