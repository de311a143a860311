// out[i] = init[i] + Σ_{e ∈ row i} weight_e · src[src_e] · (scale[scale_e] or 1):
// the transpose of a fit parameterisation, mapping per-driver gradients
// (∂L/∂E or the v part of ∂L/∂state0) back to the low-dimensional
// parameters (src/fit/param_gather.rs). One thread per parameter sums its
// row in a fixed order: deterministic, no atomics.
#import common/dispatch

struct Uniforms {
    param_count: u32,
    use_scale: u32,
    _pad0: u32,
    _pad1: u32,
}

struct Entry {
    src: u32,
    scale: u32,
    weight: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> uniforms: Uniforms;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> entries: array<Entry>;
@group(0) @binding(3) var<storage, read> src: array<f32>;
@group(0) @binding(4) var<storage, read> scale: array<f32>;
@group(0) @binding(5) var<storage, read> init: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 64u);
    if i >= uniforms.param_count {
        return;
    }
    var sum = init[i];
    let end = offsets[i + 1u];
    for (var e = offsets[i]; e < end; e++) {
        let entry = entries[e];
        var value = entry.weight * src[entry.src];
        if uniforms.use_scale != 0u {
            value *= scale[entry.scale];
        }
        sum += value;
    }
    out[i] = sum;
}
