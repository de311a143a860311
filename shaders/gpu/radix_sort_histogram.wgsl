// Radix sort, pass step 1 of 3: per-tile digit histograms.
// histograms[digit * num_tiles + tile] = number of keys of `tile` whose digit
// is `digit`. Digit-major layout, so that one exclusive prefix sum over the
// whole array (gpu/prefix_sum_*) gives every (digit, tile) its first output
// position, in the order that keeps the sort stable.
// Counts are reduced in workgroup memory without atomics or subgroup
// operations (docs/design.md § Gaussian splatting).
#import gpu/radix_sort_tile

@group(0) @binding(0) var<uniform> uniforms: RadixPassUniforms;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> histograms: array<u32>;

// counts[counts_index(digit * TILE_WORKGROUP_SIZE + thread)].
var<workgroup> counts: array<u32, COUNTS_PADDED_SIZE>;
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

    // 4-bit counters packed into two words (at most 8 keys per thread),
    // avoiding dynamically indexed private arrays.
    var counts_low = 0u;
    var counts_high = 0u;
    for (var j = 0u; j < TILE_ITEMS_PER_THREAD; j += 1u) {
        let p = j * TILE_WORKGROUP_SIZE + lid;
        if p < tile_count {
            let digit = radix_digit(keys[base + p], uniforms);
            if digit < 8u {
                counts_low += 1u << (4u * digit);
            } else {
                counts_high += 1u << (4u * (digit - 8u));
            }
        }
    }
    for (var digit = 0u; digit < 8u; digit += 1u) {
        counts[counts_index(digit * TILE_WORKGROUP_SIZE + lid)] = (counts_low >> (4u * digit)) & 15u;
        counts[counts_index((digit + 8u) * TILE_WORKGROUP_SIZE + lid)] = (counts_high >> (4u * digit)) & 15u;
    }
    workgroupBarrier();

    // 256 threads = 16 digits x 16 parts of 16 threads' counts each.
    let digit = lid / 16u;
    let part = lid % 16u;
    var sum = 0u;
    for (var k = 0u; k < 16u; k += 1u) {
        sum += counts[counts_index(digit * TILE_WORKGROUP_SIZE + part * 16u + k)];
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
