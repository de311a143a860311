// Shared by the radix-sort passes (gpu/radix_sort_histogram and
// gpu/radix_sort_scatter): the pass uniforms, the tiling of the keys and the
// digit of a key. Both passes must agree on these exactly, or the scatter
// offsets would not match the histograms.

// Uniforms of one LSD pass (Rust: `RadixPassUniforms`).
struct RadixPassUniforms {
    // Number of keys.
    count: u32,
    // Lowest key bit of this pass's digit.
    shift: u32,
    // Mask of the digit after shifting (15, or less on the last pass when
    // key_bits is not a multiple of RADIX_BITS).
    digit_mask: u32,
    // ceil(count / TILE_SIZE).
    num_tiles: u32,
}

const RADIX_BITS: u32 = 4u;
const RADIX: u32 = 16u;
const TILE_WORKGROUP_SIZE: u32 = 256u;
const TILE_ITEMS_PER_THREAD: u32 = 8u;
const TILE_SIZE: u32 = 2048u;

fn radix_digit(key: u32, pass_uniforms: RadixPassUniforms) -> u32 {
    return (key >> pass_uniforms.shift) & pass_uniforms.digit_mask;
}

// Tile handled by this workgroup; the grid may be folded into 2-D past the
// per-dimension workgroup limit (ComputeKernel::workgroups_for).
fn radix_tile_index(workgroup_id: vec3<u32>, num_workgroups: vec3<u32>) -> u32 {
    return workgroup_id.x + workgroup_id.y * num_workgroups.x;
}

// Words of a digit-major count table [digit * TILE_WORKGROUP_SIZE + thread]
// stored with one padding word per 16: threads that each walk 16
// consecutive entries then hit distinct memory banks.
const COUNTS_PADDED_SIZE: u32 = 4352u;

fn counts_index(q: u32) -> u32 {
    return q + (q >> 4u);
}
