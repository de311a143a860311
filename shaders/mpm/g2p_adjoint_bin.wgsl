// First half of the cell-binned adjoint of G2P (CPU adapters; see
// src/mpm/p2g_bin.rs for the scheme, g2p_adjoint.wgsl for the equations,
// which this kernel computes identically): writes the G2P part of
// ∂L/∂(state n) as g2p_adjoint.wgsl does, but instead of scatter-adding
// ∂L/∂v_i += w_ip (gv'' + 4/dx²·gC''·(x_i − x_p)) it writes the particle's
// record [x (3), gv'' (3), 4/dx²·gC'' row-major (9), 0] to `binned` and
// links a non-anchored particle into its base cell's list (cell_head holds
// p + 1, 0 = empty); g2p_adjoint_cells.wgsl sums each cell's particles.
#import common/dispatch
#import mpm/params

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<f32>;
@group(0) @binding(2) var<storage, read> grid_velocity: array<f32>;
@group(0) @binding(3) var<storage, read> anchored: array<u32>;
@group(0) @binding(4) var<storage, read> state_grad_next: array<f32>;
@group(0) @binding(5) var<storage, read_write> state_grad: array<f32>;
@group(0) @binding(6) var<storage, read_write> binned: array<f32>;
@group(0) @binding(7) var<storage, read_write> cell_head: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> particle_next: array<u32>;

const BINNED_STRIDE: u32 = 16u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 64u);
    if p >= params.particle_count {
        return;
    }
    let o = p * STATE_STRIDE;
    let x = vec3<f32>(state[o], state[o + 1u], state[o + 2u]);
    let f = mat3_from_rows(
        vec3<f32>(state[o + 15u], state[o + 16u], state[o + 17u]),
        vec3<f32>(state[o + 18u], state[o + 19u], state[o + 20u]),
        vec3<f32>(state[o + 21u], state[o + 22u], state[o + 23u]),
    );
    let gx_next = vec3<f32>(state_grad_next[o], state_grad_next[o + 1u], state_grad_next[o + 2u]);
    let gv_next = vec3<f32>(state_grad_next[o + 3u], state_grad_next[o + 4u], state_grad_next[o + 5u]);
    let gc_next = mat3_from_rows(
        vec3<f32>(state_grad_next[o + 6u], state_grad_next[o + 7u], state_grad_next[o + 8u]),
        vec3<f32>(state_grad_next[o + 9u], state_grad_next[o + 10u], state_grad_next[o + 11u]),
        vec3<f32>(state_grad_next[o + 12u], state_grad_next[o + 13u], state_grad_next[o + 14u]),
    );
    let gf_next = mat3_from_rows(
        vec3<f32>(state_grad_next[o + 15u], state_grad_next[o + 16u], state_grad_next[o + 17u]),
        vec3<f32>(state_grad_next[o + 18u], state_grad_next[o + 19u], state_grad_next[o + 20u]),
        vec3<f32>(state_grad_next[o + 21u], state_grad_next[o + 22u], state_grad_next[o + 23u]),
    );
    var gx = gx_next;
    var gf = gf_next;
    if anchored[p] == 0u {
        let gv = gv_next + params.dt * gx_next;
        let gc = gc_next + params.dt * gf_next * transpose(f);
        let apic = 4.0 * params.inv_dx * params.inv_dx;
        let s = stencil(x, params);
        var b = mat3x3<f32>();
        for (var i = 0u; i < 3u; i++) {
            for (var j = 0u; j < 3u; j++) {
                for (var l = 0u; l < 3u; l++) {
                    let offset = vec3<u32>(i, j, l);
                    let wx = stencil_w(s, i).x;
                    let wy = stencil_w(s, j).y;
                    let wz = stencil_w(s, l).z;
                    let w = wx * wy * wz;
                    let grad_w = params.inv_dx * vec3<f32>(
                        stencil_dw(s, i).x * wy * wz,
                        wx * stencil_dw(s, j).y * wz,
                        wx * wy * stencil_dw(s, l).z,
                    );
                    let dpos = (vec3<f32>(offset) - s.fx) * params.dx;
                    let g = node_index(s.base + vec3<i32>(offset), nodes_per_axis(params)) * GRID_STRIDE;
                    let vi = vec3<f32>(grid_velocity[g], grid_velocity[g + 1u], grid_velocity[g + 2u]);
                    b += mat3x3<f32>(w * dpos.x * vi, w * dpos.y * vi, w * dpos.z * vi);
                    let gc_dpos = gc * dpos;
                    gx += (dot(gv, vi) + apic * dot(vi, gc_dpos)) * grad_w - apic * w * (transpose(gc) * vi);
                }
            }
        }
        let scaled_gc = apic * gc;
        let r = p * BINNED_STRIDE;
        binned[r] = x.x;
        binned[r + 1u] = x.y;
        binned[r + 2u] = x.z;
        binned[r + 3u] = gv.x;
        binned[r + 4u] = gv.y;
        binned[r + 5u] = gv.z;
        binned[r + 6u] = scaled_gc[0].x;
        binned[r + 7u] = scaled_gc[1].x;
        binned[r + 8u] = scaled_gc[2].x;
        binned[r + 9u] = scaled_gc[0].y;
        binned[r + 10u] = scaled_gc[1].y;
        binned[r + 11u] = scaled_gc[2].y;
        binned[r + 12u] = scaled_gc[0].z;
        binned[r + 13u] = scaled_gc[1].z;
        binned[r + 14u] = scaled_gc[2].z;
        binned[r + 15u] = 0.0;
        particle_next[p] = atomicExchange(&cell_head[node_index(s.base, nodes_per_axis(params))], p + 1u);
        let c_new = apic * b;
        let identity = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
        gf = transpose(identity + params.dt * c_new) * gf_next;
    }
    state_grad[o] = gx.x;
    state_grad[o + 1u] = gx.y;
    state_grad[o + 2u] = gx.z;
    for (var r = 0u; r < 3u; r++) {
        state_grad[o + 3u + r] = 0.0;
        for (var c = 0u; c < 3u; c++) {
            state_grad[o + 6u + r * 3u + c] = 0.0;
            state_grad[o + 15u + r * 3u + c] = gf[c][r];
        }
    }
}
