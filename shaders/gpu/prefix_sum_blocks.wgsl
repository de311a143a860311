// Exclusive prefix sum, level step 1 of 2: each workgroup scans one block of
// BLOCK_SIZE consecutive u32 in place and writes the block's total to
// `block_sums[block]`. The block totals are then scanned by the same kernel
// (recursively) and added back by gpu/prefix_sum_add. Only workgroup memory
// and barriers are used: no subgroup operations (the subgroup size differs
// between drivers) and no communication between workgroups within a dispatch
// (docs/design.md § Gaussian splatting: no forward-progress assumption).
// Sums wrap modulo 2^32.
#import gpu/prefix_sum_workgroup

struct Uniforms {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> uniforms: Uniforms;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> block_sums: array<u32>;

const WORKGROUP_SIZE: u32 = 256u;
const ITEMS_PER_THREAD: u32 = 8u;
const BLOCK_SIZE: u32 = 2048u;

// One block, stored with one padding word per 32 so that thread t reading its
// run of ITEMS_PER_THREAD consecutive elements hits distinct memory banks.
var<workgroup> block: array<u32, 2112>;

fn padded(p: u32) -> u32 {
    return p + (p >> 5u);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block_index = workgroup_id.x + workgroup_id.y * num_workgroups.x;
    let num_blocks = (uniforms.count + BLOCK_SIZE - 1u) / BLOCK_SIZE;
    if block_index >= num_blocks {
        return;
    }
    let base = block_index * BLOCK_SIZE;
    let block_count = min(BLOCK_SIZE, uniforms.count - base);

    // Coalesced load (neighbouring threads read neighbouring words); absent
    // elements of the last block count as 0.
    for (var j = 0u; j < ITEMS_PER_THREAD; j += 1u) {
        let p = j * WORKGROUP_SIZE + lid;
        var value = 0u;
        if p < block_count {
            value = data[base + p];
        }
        block[padded(p)] = value;
    }
    workgroupBarrier();

    // Each thread scans its own run of consecutive elements serially.
    var run: array<u32, 8>;
    var run_sum = 0u;
    let first = lid * ITEMS_PER_THREAD;
    for (var j = 0u; j < ITEMS_PER_THREAD; j += 1u) {
        let value = block[padded(first + j)];
        run[j] = run_sum;
        run_sum += value;
    }
    let thread_prefix = workgroup_exclusive_scan(lid, run_sum);
    for (var j = 0u; j < ITEMS_PER_THREAD; j += 1u) {
        block[padded(first + j)] = run[j] + thread_prefix;
    }
    workgroupBarrier();

    for (var j = 0u; j < ITEMS_PER_THREAD; j += 1u) {
        let p = j * WORKGROUP_SIZE + lid;
        if p < block_count {
            data[base + p] = block[padded(p)];
        }
    }
    if lid == 0u {
        block_sums[block_index] = workgroup_scan_total;
    }
}
