// Per driver j, ∂L/∂x_j += the sum of its slots written by
// deform/gaussian_motion_adjoint (src/deform/driver_gather.rs), added into
// the x part of an MPM state gradient (24 f32 per driver, x first:
// src/mpm/layout.rs). The slots of driver j are entries[offsets[j] ..
// offsets[j + 1]] (a CSR list built on the host once, in Gaussian order):
// one thread per driver sums them in a fixed order, so the result is the
// same on every GPU and run (no float atomics), and it is the only writer
// of its record, so `+=` needs no atomics either.
#import common/dispatch
#import mpm/params

struct Uniforms {
    driver_count: u32,
    entry_count: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> uniforms: Uniforms;
// driver_count + 1 offsets into `entries`.
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
// Slot indices (DRIVERS·Gaussian + place) into `contributions`.
@group(0) @binding(2) var<storage, read> entries: array<u32>;
@group(0) @binding(3) var<storage, read> contributions: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> state_grad: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let j = flat_thread_index(global_id, num_workgroups, 64u);
    if j >= uniforms.driver_count {
        return;
    }
    // Clamped so that a corrupt list walks at most entry_count slots.
    let end = min(offsets[j + 1u], uniforms.entry_count);
    var sum = vec3<f32>(0.0);
    for (var e = min(offsets[j], end); e < end; e++) {
        sum += contributions[entries[e]].xyz;
    }
    let base = j * STATE_STRIDE;
    state_grad[base] += sum.x;
    state_grad[base + 1u] += sum.y;
    state_grad[base + 2u] += sum.z;
}
