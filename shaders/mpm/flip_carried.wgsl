// FLIP's carried velocity of a node (docs/design.md § MPM, "Transfer"):
// v̂ = mv̂/m̂ from its (m̂, mv̂) (flip_scatter.wgsl), zero where no free
// particle reaches it. Shared by the gather (flip_gather.wgsl) and the
// adjoints that read v̂ (flip_grid_adjoint.wgsl, flip_scatter_adjoint.wgsl).

fn carried_velocity(node: vec4<f32>) -> vec3<f32> {
    if node.x > 0.0 {
        return node.yzw / node.x;
    }
    return vec3<f32>(0.0);
}
