// Exclusive prefix sum of one u32 per invocation across a workgroup of 256
// invocations, in workgroup memory: 16 invocations each scan 16 values
// serially, one scans the 16 group totals, then each invocation adds its
// group's offset. Four barriers (a Hillis-Steele scan needs 16), which
// matters on drivers where a barrier is a costly context switch (lavapipe).
// No subgroup operations: correct for any subgroup size. Sums wrap modulo 2^32.
// Shared by gpu/prefix_sum_blocks and gpu/radix_sort_scatter
// (`#import gpu/prefix_sum_workgroup`). Must be called by all 256
// invocations in uniform control flow.

const WORKGROUP_SCAN_SIZE: u32 = 256u;

// One padding word per 16 (see `workgroup_scan_slot`).
var<workgroup> workgroup_scan_values: array<u32, 272>;
var<workgroup> workgroup_scan_group_offsets: array<u32, 16>;
// Sum of all values of the latest `workgroup_exclusive_scan`.
var<workgroup> workgroup_scan_total: u32;

// Slot of invocation i's value: padded so that the 16 invocations each
// walking 16 consecutive values hit distinct memory banks.
fn workgroup_scan_slot(i: u32) -> u32 {
    return i + (i >> 4u);
}

// Returns value[0] + … + value[lid - 1] over the workgroup's invocations in
// `local_invocation_index` order; sets `workgroup_scan_total`.
fn workgroup_exclusive_scan(lid: u32, value: u32) -> u32 {
    workgroup_scan_values[workgroup_scan_slot(lid)] = value;
    workgroupBarrier();
    if lid < 16u {
        var sum = 0u;
        for (var k = 0u; k < 16u; k += 1u) {
            let i = workgroup_scan_slot(lid * 16u + k);
            let v = workgroup_scan_values[i];
            workgroup_scan_values[i] = sum;
            sum += v;
        }
        workgroup_scan_group_offsets[lid] = sum;
    }
    workgroupBarrier();
    if lid == 0u {
        var sum = 0u;
        for (var g = 0u; g < 16u; g += 1u) {
            let v = workgroup_scan_group_offsets[g];
            workgroup_scan_group_offsets[g] = sum;
            sum += v;
        }
        workgroup_scan_total = sum;
    }
    workgroupBarrier();
    let result = workgroup_scan_values[workgroup_scan_slot(lid)] + workgroup_scan_group_offsets[lid / 16u];
    // Lets a following call overwrite the arrays safely.
    workgroupBarrier();
    return result;
}
