// One of a particle's 27 stencil nodes (params.wgsl `stencil`, quadratic
// B-spline, Hu et al. 2018): the weight w_ip, its gradient ∇w_ip (for the
// adjoints), x_i − x_p and the node's flat index. Shared by the per-particle
// kernels P2G, G2P and their adjoints, which loop over offsets 0..2 per axis.
#import mpm/params

struct StencilNode {
    w: f32,
    grad_w: vec3<f32>,
    dpos: vec3<f32>,
    node: u32,
}

fn stencil_node(s: Stencil, offset: vec3<u32>, params: MpmParams) -> StencilNode {
    let wx = stencil_w(s, offset.x).x;
    let wy = stencil_w(s, offset.y).y;
    let wz = stencil_w(s, offset.z).z;
    let w = wx * wy * wz;
    let grad_w = params.inv_dx * vec3<f32>(
        stencil_dw(s, offset.x).x * wy * wz,
        wx * stencil_dw(s, offset.y).y * wz,
        wx * wy * stencil_dw(s, offset.z).z,
    );
    let dpos = (vec3<f32>(offset) - s.fx) * params.dx;
    let node = node_index(s.base + vec3<i32>(offset), nodes_per_axis(params));
    return StencilNode(w, grad_w, dpos, node);
}
