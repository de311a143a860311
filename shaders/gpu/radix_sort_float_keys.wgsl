// keys[i] = sortable_u32_from_f32(floats[i]): converts float sort keys (e.g.
// splat depths) into u32 keys for gpu/radix_sort_* with key_bits = 32.
#import common/dispatch
#import gpu/radix_sort_float_key

struct Uniforms {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> uniforms: Uniforms;
@group(0) @binding(1) var<storage, read> floats: array<f32>;
@group(0) @binding(2) var<storage, read_write> keys: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= uniforms.count {
        return;
    }
    keys[i] = sortable_u32_from_f32(floats[i]);
}
