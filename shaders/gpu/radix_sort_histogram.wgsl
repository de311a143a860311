// Radix sort, pass step 1 of 3: per-tile digit histograms.
// histograms[digit * num_tiles + tile] = number of keys of `tile` whose digit
// is `digit`. Digit-major layout, so that one exclusive prefix sum over the
// whole array (gpu/prefix_sum_*) gives every (digit, tile) its first output
// position, in the order that keeps the sort stable.
// Counts are reduced in workgroup memory without atomics or subgroup
// operations (DESIGN.md § Gaussian splatting).
#import gpu/radix_sort_tile

@group(0) @binding(0) var<uniform> uniforms: RadixPassUniforms;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> histograms: array<u32>;

// counts[digit * TILE_WORKGROUP_SIZE + thread].
var<workgroup> counts: array<u32, 4096>;
var<workgroup> partial_counts: array<u32, 256>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let tile = radix_tile_index(workgroup_id, num_workgroups);
    if tile >= uniforms.num_tiles {
        return;
    }
    let base = tile * TILE_SIZE;
    let tile_count = min(TILE_SIZE, uniforms.count - base);

    var thread_counts: array<u32, 16>;
    for (var j = 0u; j < TILE_ITEMS_PER_THREAD; j += 1u) {
        let p = j * TILE_WORKGROUP_SIZE + lid;
        if p < tile_count {
            let digit = radix_digit(keys[base + p], uniforms);
            thread_counts[digit] += 1u;
        }
    }
    for (var digit = 0u; digit < RADIX; digit += 1u) {
        counts[digit * TILE_WORKGROUP_SIZE + lid] = thread_counts[digit];
    }
    workgroupBarrier();

    // 256 threads = 16 digits x 16 parts of 16 threads' counts each.
    let digit = lid / 16u;
    let part = lid % 16u;
    var sum = 0u;
    for (var k = 0u; k < 16u; k += 1u) {
        sum += counts[digit * TILE_WORKGROUP_SIZE + part * 16u + k];
    }
    partial_counts[lid] = sum;
    workgroupBarrier();

    if lid < RADIX {
        var total = 0u;
        for (var k = 0u; k < 16u; k += 1u) {
            total += partial_counts[lid * 16u + k];
        }
        histograms[lid * uniforms.num_tiles + tile] = total;
    }
}
