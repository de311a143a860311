// Exclusive prefix sum, level step 2 of 2: adds each block's scanned offset
// (the exclusive scan of the block totals written by gpu/prefix_sum_blocks)
// to every element of the block. One thread per element.
#import common/dispatch

struct Uniforms {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> uniforms: Uniforms;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read> block_offsets: array<u32>;

// Must equal BLOCK_SIZE in gpu/prefix_sum_blocks.
const BLOCK_SIZE: u32 = 2048u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= uniforms.count {
        return;
    }
    data[i] += block_offsets[i / BLOCK_SIZE];
}
