// Radix sort, pass step 3 of 3: stable scatter of one tile of (key, value)
// pairs to their sorted positions for this pass's digit.
// `histogram_offsets` is the exclusive prefix sum of gpu/radix_sort_histogram's
// digit-major histograms: the first output position of (digit, tile). Within
// a tile, each thread owns TILE_ITEMS_PER_THREAD consecutive keys; the rank of
// a key among equal digits of its tile = (equal digits in earlier threads) +
// (equal digits earlier in its own run), found with a workgroup-memory scan,
// so the order of equal digits is the input order (stability). The tile is
// first reordered in workgroup memory so that the global writes of each digit
// are contiguous. No atomics, no subgroup operations, no inter-workgroup
// communication (docs/design.md § Gaussian splatting).
#import gpu/radix_sort_tile
#import gpu/prefix_sum_workgroup

@group(0) @binding(0) var<uniform> uniforms: RadixPassUniforms;
@group(0) @binding(1) var<storage, read> keys_in: array<u32>;
@group(0) @binding(2) var<storage, read> values_in: array<u32>;
@group(0) @binding(3) var<storage, read> histogram_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(5) var<storage, read_write> values_out: array<u32>;

// Offset of the values half of `exchange`: TILE_SIZE padded (padded(2048)).
const VALUES_OFFSET: u32 = 2112u;
// Used in turn for: the tile's keys and values (2 x 2112 words, see
// `padded`), then the digit-major per-thread counts (see `counts_index`),
// then the tile reordered by digit.
var<workgroup> exchange: array<u32, COUNTS_PADDED_SIZE>;
// Number of the tile's keys with a smaller digit (local start of each digit).
var<workgroup> digit_local_start: array<u32, 16>;
// First output position of each digit of this tile.
var<workgroup> digit_global_start: array<u32, 16>;

// One padding word per 32 so that runs of consecutive elements read by
// neighbouring threads fall in distinct memory banks.
fn padded(p: u32) -> u32 {
    return p + (p >> 5u);
}

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

    // 1. Coalesced load of the tile.
    for (var j = 0u; j < TILE_ITEMS_PER_THREAD; j += 1u) {
        let p = j * TILE_WORKGROUP_SIZE + lid;
        if p < tile_count {
            exchange[padded(p)] = keys_in[base + p];
            exchange[VALUES_OFFSET + padded(p)] = values_in[base + p];
        }
    }
    workgroupBarrier();

    // 2. Each thread takes its run of consecutive elements and counts digits
    //    in 4-bit counters packed into two words (a run has at most 8 keys),
    //    avoiding dynamically indexed private arrays.
    var run_keys: array<u32, 8>;
    var run_values: array<u32, 8>;
    var run_digits: array<u32, 8>;
    var counts_low = 0u;
    var counts_high = 0u;
    let first = lid * TILE_ITEMS_PER_THREAD;
    for (var j = 0u; j < TILE_ITEMS_PER_THREAD; j += 1u) {
        let p = first + j;
        if p < tile_count {
            let key = exchange[padded(p)];
            let digit = radix_digit(key, uniforms);
            run_keys[j] = key;
            run_values[j] = exchange[VALUES_OFFSET + padded(p)];
            run_digits[j] = digit;
            if digit < 8u {
                counts_low += 1u << (4u * digit);
            } else {
                counts_high += 1u << (4u * (digit - 8u));
            }
        }
    }
    workgroupBarrier();

    // 3. Exclusive scan of the counts in digit-major order: entry
    //    [digit * 256 + thread] becomes the tile-local position of that
    //    thread's first key with that digit.
    for (var digit = 0u; digit < 8u; digit += 1u) {
        exchange[counts_index(digit * TILE_WORKGROUP_SIZE + lid)] = (counts_low >> (4u * digit)) & 15u;
        exchange[counts_index((digit + 8u) * TILE_WORKGROUP_SIZE + lid)] = (counts_high >> (4u * digit)) & 15u;
    }
    workgroupBarrier();
    var run_sum = 0u;
    for (var k = 0u; k < 16u; k += 1u) {
        let q = counts_index(lid * 16u + k);
        let count = exchange[q];
        exchange[q] = run_sum;
        run_sum += count;
    }
    let thread_prefix = workgroup_exclusive_scan(lid, run_sum);
    for (var k = 0u; k < 16u; k += 1u) {
        exchange[counts_index(lid * 16u + k)] += thread_prefix;
    }
    workgroupBarrier();

    // Tile-local destination of each key of the run: its thread's first
    // position for the digit + equal digits earlier in the run (stable).
    var positions: array<u32, 8>;
    for (var j = 0u; j < TILE_ITEMS_PER_THREAD; j += 1u) {
        if first + j < tile_count {
            let digit = run_digits[j];
            var rank = 0u;
            for (var i = 0u; i < j; i += 1u) {
                rank += select(0u, 1u, run_digits[i] == digit);
            }
            positions[j] = exchange[counts_index(digit * TILE_WORKGROUP_SIZE + lid)] + rank;
        }
    }
    if lid < RADIX {
        digit_local_start[lid] = exchange[counts_index(lid * TILE_WORKGROUP_SIZE)];
        digit_global_start[lid] = histogram_offsets[lid * uniforms.num_tiles + tile];
    }
    workgroupBarrier();

    // 4. Reorder the tile by digit in workgroup memory.
    for (var j = 0u; j < TILE_ITEMS_PER_THREAD; j += 1u) {
        if first + j < tile_count {
            exchange[padded(positions[j])] = run_keys[j];
            exchange[VALUES_OFFSET + padded(positions[j])] = run_values[j];
        }
    }
    workgroupBarrier();

    // 5. Coalesced write: keys of one digit are contiguous in the output.
    for (var j = 0u; j < TILE_ITEMS_PER_THREAD; j += 1u) {
        let p = j * TILE_WORKGROUP_SIZE + lid;
        if p < tile_count {
            let key = exchange[padded(p)];
            let digit = radix_digit(key, uniforms);
            let destination = digit_global_start[digit] + p - digit_local_start[digit];
            keys_out[destination] = key;
            values_out[destination] = exchange[VALUES_OFFSET + padded(p)];
        }
    }
}
