// Adjoint of G2P (mirrors g2p.wgsl, DESIGN.md § Adjoint). Given ∂L/∂(state
// n+1) = (gx', gv', gC', gF'), writes the G2P part of ∂L/∂(state n) (gx, gF;
// gv = gC = 0, P2G* adds the rest) and scatter-adds ∂L/∂v_i to the grid.
// With gv'' = gv' + dt·gx' (x' = x + dt v') and gC'' = gC' + dt·gF'·Fᵀ
// (F' = (I + dt C')F):
//   ∂L/∂v_i += w_ip (gv'' + 4/dx²·gC''·(x_i − x_p)),
//   gF = (I + dt C')ᵀ gF',
//   gx = gx' + Σ_i [(gv''·v_i + 4/dx²·v_iᵀ gC'' (x_i − x_p)) ∇w_ip − 4/dx²·w_ip gC''ᵀ v_i]
// (the last term from ∂(x_i − x_p)/∂x_p = −I). Anchored particles: x' = x,
// F' = F, v' = C' = 0, so gx = gx', gF = gF' and nothing reaches the grid.
// The scatter to nodes is unavoidable here (a node's gradient sums over the
// particles around it), hence the f32 atomics.
#import common/dispatch
#import mpm/params

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<f32>;
@group(0) @binding(2) var<storage, read> grid_velocity: array<f32>;
@group(0) @binding(3) var<storage, read> anchored: array<u32>;
@group(0) @binding(4) var<storage, read> state_grad_next: array<f32>;
@group(0) @binding(5) var<storage, read_write> state_grad: array<f32>;
@group(0) @binding(6) var<storage, read_write> grid_velocity_grad: array<AtomicF32>;
#atomic_f32_ops grid_velocity_grad

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
                    let gvi = w * (gv + apic * gc_dpos);
                    grid_velocity_grad_atomic_add(g, gvi.x);
                    grid_velocity_grad_atomic_add(g + 1u, gvi.y);
                    grid_velocity_grad_atomic_add(g + 2u, gvi.z);
                    gx += (dot(gv, vi) + apic * dot(vi, gc_dpos)) * grad_w - apic * w * (transpose(gc) * vi);
                }
            }
        }
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
