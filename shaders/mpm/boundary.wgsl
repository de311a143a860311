// Boundary conditions of the grid update (src/mpm/config.rs): anchored
// nodes first, then walls within `wall_margin` nodes of the box, sticky or
// slip. Shared by grid_update and grid_update_adjoint so both apply exactly
// the same (piecewise) rule. Both run over the active box only.
#import mpm/params

// Node coordinates (i, j, k) of a flat node index.
fn node_coords(n: u32, res: u32) -> vec3<u32> {
    return vec3<u32>(n / (res * res), (n / res) % res, n % res);
}

// Per-axis wall masks: low wall (index < margin), high wall (index >
// grid_res − margin): `margin` node layers on each side.
fn low_wall(c: vec3<u32>, p: MpmParams) -> vec3<bool> {
    return c < vec3<u32>(p.wall_margin);
}

fn high_wall(c: vec3<u32>, p: MpmParams) -> vec3<bool> {
    return c > vec3<u32>(p.grid_res - p.wall_margin);
}

// Per-axis mask of the velocity components the boundary conditions keep (1)
// or zero (0) at a node with pre-boundary velocity v; the forward multiplies
// by it, the adjoint multiplies the incoming gradient by the same mask.
fn boundary_mask(v: vec3<f32>, anchored_node: bool, c: vec3<u32>, p: MpmParams) -> vec3<f32> {
    if anchored_node {
        return vec3<f32>(0.0);
    }
    let lo = low_wall(c, p);
    let hi = high_wall(c, p);
    if p.wall_mode == 0u {
        if any(lo) || any(hi) {
            return vec3<f32>(0.0);
        }
        return vec3<f32>(1.0);
    }
    let into = (lo & (v < vec3<f32>(0.0))) | (hi & (v > vec3<f32>(0.0)));
    return select(vec3<f32>(1.0), vec3<f32>(0.0), into);
}

