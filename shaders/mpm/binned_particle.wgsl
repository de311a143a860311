// The cell-binned scatters' particle record and per-cell stencil, shared by
// p2g_bin.wgsl / g2p_adjoint_bin.wgsl (which write records) and
// p2g_cells.wgsl / g2p_adjoint_cells.wgsl (which walk a cell's list and sum
// its particles' contributions to the 27 stencil nodes). Both scatters send
// a node w_ip·(u_p + M_p (x_i − x_p)) (P2G: u = m v, M = A_p; G2P*:
// u = gv'', M = 4/dx²·gC''), so one record layout and one node term serve
// both. Functions take and return values (naga takes no storage pointers as
// function parameters); the kernels keep their own loads and writes.
#import mpm/params

// Record of one binned particle: [x (3), u (3), M row-major (9), 0].
const BINNED_STRIDE: u32 = 16u;

fn binned_record(x: vec3<f32>, u: vec3<f32>, m: mat3x3<f32>) -> array<f32, BINNED_STRIDE> {
    return array<f32, BINNED_STRIDE>(
        x.x, x.y, x.z,
        u.x, u.y, u.z,
        m[0].x, m[1].x, m[2].x,
        m[0].y, m[1].y, m[2].y,
        m[0].z, m[1].z, m[2].z,
        0.0,
    );
}

struct BinnedParticle {
    x: vec3<f32>,
    u: vec3<f32>,
    m: mat3x3<f32>,
}

fn binned_particle(r: array<f32, BINNED_STRIDE>) -> BinnedParticle {
    let x = vec3<f32>(r[0], r[1], r[2]);
    let u = vec3<f32>(r[3], r[4], r[5]);
    let m = mat3_from_rows(
        vec3<f32>(r[6], r[7], r[8]),
        vec3<f32>(r[9], r[10], r[11]),
        vec3<f32>(r[12], r[13], r[14]),
    );
    return BinnedParticle(x, u, m);
}

// Quadratic B-spline weights of a particle in the cell whose base node is
// `base` (every particle on a cell's list shares it; see params.wgsl
// `stencil`): fx = x/dx − base and the per-axis weights.
struct CellWeights {
    fx: vec3<f32>,
    w0: vec3<f32>,
    w1: vec3<f32>,
    w2: vec3<f32>,
}

fn cell_weights(x: vec3<f32>, base: vec3<f32>, params: MpmParams) -> CellWeights {
    let fx = x * params.inv_dx - base;
    let wa = 1.5 - fx;
    let wb = fx - 1.0;
    let wc = fx - 0.5;
    return CellWeights(fx, 0.5 * wa * wa, 0.75 - wb * wb, 0.5 * wc * wc);
}

// Node `o` (0..2 per axis) of the cell's stencil: (w_ip, w_ip·(u_p + M_p (x_i − x_p))).
fn cell_node_term(particle: BinnedParticle, cw: CellWeights, o: vec3<u32>, params: MpmParams) -> vec4<f32> {
    let w3 = select(select(cw.w2, cw.w1, o == vec3<u32>(1u)), cw.w0, o == vec3<u32>(0u));
    let w = w3.x * w3.y * w3.z;
    let dpos = (vec3<f32>(o) - cw.fx) * params.dx;
    return vec4<f32>(w, w * (particle.u + particle.m * dpos));
}

// Flat index of node `o` of the cell with base node `base`.
fn cell_node_index(base: vec3<f32>, o: vec3<u32>, res: u32) -> u32 {
    return node_index(vec3<i32>(base) + vec3<i32>(o), res);
}
