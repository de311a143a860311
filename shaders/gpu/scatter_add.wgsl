// Scatter-add test kernel: sums[targets[i]] += values[i] for every i, with the
// runtime-selected f32 atomic (native or compare-and-swap). Used to prove both
// variants give exact sums on each adapter (DESIGN.md § Verification 4).
#import common/dispatch

struct Uniforms {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> uniforms: Uniforms;
@group(0) @binding(1) var<storage, read> values: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<AtomicF32>;
#atomic_f32_ops sums

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= uniforms.count {
        return;
    }
    sums_atomic_add(targets[i], values[i]);
}
