// Radix sort with the count read from a GPU buffer (e.g. the intersection
// count the rasterizer has just computed), without a readback: one
// invocation reads the count, clamps it to the sorter's capacity and writes
// the uniforms of every pass and of every prefix-sum level. The host then
// copies them into the uniform buffers the passes bind, and dispatches every
// kernel for the capacity; workgroups past the count exit at once.
// Layout of `params` (u32): num_passes RadixPassUniforms, then num_levels
// PrefixSumUniforms (count, 0, 0, 0), then [requested count, sorted count].
#import gpu/radix_sort_tile

struct Uniforms {
    // Index of the count in `count_source`.
    count_index: u32,
    // Capacity of the sorter: larger counts are clamped (and reported).
    max_count: u32,
    num_passes: u32,
    // Levels of the prefix sum over the tile histograms (for the capacity).
    num_levels: u32,
}

@group(0) @binding(0) var<uniform> uniforms: Uniforms;
@group(0) @binding(1) var<storage, read> count_source: array<u32>;
// Host-computed shift and digit_mask of each pass (count, num_tiles ignored).
@group(0) @binding(2) var<storage, read> pass_templates: array<RadixPassUniforms>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

// Must equal PREFIX_SUM_BLOCK_SIZE (gpu/prefix_sum_blocks).
const SCAN_BLOCK_SIZE: u32 = 2048u;

@compute @workgroup_size(1)
fn main() {
    let requested = count_source[uniforms.count_index];
    let count = min(requested, uniforms.max_count);
    let num_tiles = (count + TILE_SIZE - 1u) / TILE_SIZE;
    for (var p = 0u; p < uniforms.num_passes; p += 1u) {
        let pass_template = pass_templates[p];
        params[4u * p] = count;
        params[4u * p + 1u] = pass_template.shift;
        params[4u * p + 2u] = pass_template.digit_mask;
        params[4u * p + 3u] = num_tiles;
    }
    let levels_base = 4u * uniforms.num_passes;
    var level_count = RADIX * num_tiles;
    for (var l = 0u; l < uniforms.num_levels; l += 1u) {
        params[levels_base + 4u * l] = level_count;
        params[levels_base + 4u * l + 1u] = 0u;
        params[levels_base + 4u * l + 2u] = 0u;
        params[levels_base + 4u * l + 3u] = 0u;
        level_count = (level_count + SCAN_BLOCK_SIZE - 1u) / SCAN_BLOCK_SIZE;
    }
    let status = levels_base + 4u * uniforms.num_levels;
    params[status] = requested;
    params[status + 1u] = count;
}
