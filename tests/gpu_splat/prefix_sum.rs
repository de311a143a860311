//! GPU exclusive prefix sum vs a CPU scan, exact (wrapping u32), on lavapipe
//! (docs/design.md § Verification 4: ordering-heavy kernels are tested on the
//! software driver itself).

use crate::common;
use crate::support::random_u32s;

use physfit::gpu::prefix_sum::PrefixSum;
use physfit::gpu::primitive_error::PrimitiveError;
use physfit::gpu::{encoder, GpuContext};

/// Exclusive scan and total, wrapping like the GPU.
fn cpu_scan(values: &[u32]) -> (Vec<u32>, u32) {
    let mut sum = 0u32;
    let scanned = values
        .iter()
        .map(|&v| {
            let before = sum;
            sum = sum.wrapping_add(v);
            before
        })
        .collect();
    (scanned, sum)
}

/// Scans `values` in place on the GPU (buffer padded with sentinels past the
/// count, which must survive) and returns (scan, total).
fn gpu_scan_in_place(ctx: &GpuContext, scan: &PrefixSum, values: &[u32]) -> (Vec<u32>, u32) {
    let mut padded = values.to_vec();
    padded.extend([0xdead_beef, 0x1234_5678]);
    let data = ctx.storage_from_slice("scan data", &padded).unwrap();
    let mut enc = encoder(ctx, "prefix sum test");
    scan.scan_in_place(ctx, &mut enc, &data, values.len() as u32)
        .unwrap();
    ctx.queue.submit([enc.finish()]);
    let got: Vec<u32> = ctx.read_buffer(&data).unwrap();
    assert_eq!(
        &got[values.len()..],
        &[0xdead_beef, 0x1234_5678],
        "wrote past count"
    );
    let total: Vec<u32> = ctx.read_buffer(scan.total()).unwrap();
    (got[..values.len()].to_vec(), total[0])
}

#[test]
fn in_place_scan_matches_cpu_on_block_boundaries_and_large_counts() {
    let ctx = common::gpu();
    let scan = PrefixSum::new(&ctx, 1_000_003).unwrap();
    for (i, &count) in [
        0usize, 1, 255, 256, 257, 2047, 2048, 2049, 65_537, 1_000_003,
    ]
    .iter()
    .enumerate()
    {
        let values = random_u32s(count, 17 + i as u64);
        let (expected, expected_total) = cpu_scan(&values);
        let (got, total) = gpu_scan_in_place(&ctx, &scan, &values);
        assert!(
            got == expected,
            "count {count}: first mismatch at {:?}",
            got.iter().zip(&expected).position(|(a, b)| a != b)
        );
        assert_eq!(total, expected_total, "count {count}: total");
    }
}

#[test]
fn small_values_scan_without_wrapping() {
    // Counts of splat-tile intersections: small values whose sums do not wrap,
    // the rasterizer's use; checks the three-level path (> 2048² elements).
    let ctx = common::gpu();
    let count = 2048 * 2048 + 5;
    let scan = PrefixSum::new(&ctx, count as u32).unwrap();
    let values: Vec<u32> = random_u32s(count, 99).iter().map(|v| v % 64).collect();
    let (expected, expected_total) = cpu_scan(&values);
    let (got, total) = gpu_scan_in_place(&ctx, &scan, &values);
    assert!(
        got == expected,
        "first mismatch at {:?}",
        got.iter().zip(&expected).position(|(a, b)| a != b)
    );
    assert_eq!(total, expected_total);
}

#[test]
fn out_of_place_scans_recorded_together_keep_their_own_counts() {
    let ctx = common::gpu();
    let scan = PrefixSum::new(&ctx, 100_000).unwrap();
    let a = random_u32s(100_000, 1);
    let b = random_u32s(3_000, 2);
    let input_a = ctx.storage_from_slice("scan input a", &a).unwrap();
    let input_b = ctx.storage_from_slice("scan input b", &b).unwrap();
    let output_a = ctx.storage_zeroed::<u32>("scan output a", a.len()).unwrap();
    let output_b = ctx.storage_zeroed::<u32>("scan output b", b.len()).unwrap();
    let mut enc = encoder(&ctx, "two scans");
    scan.scan(&ctx, &mut enc, &input_a, &output_a, a.len() as u32)
        .unwrap();
    scan.scan(&ctx, &mut enc, &input_b, &output_b, b.len() as u32)
        .unwrap();
    ctx.queue.submit([enc.finish()]);
    assert_eq!(
        ctx.read_buffer::<u32>(&input_a).unwrap(),
        a,
        "input changed"
    );
    assert!(ctx.read_buffer::<u32>(&output_a).unwrap() == cpu_scan(&a).0);
    assert!(ctx.read_buffer::<u32>(&output_b).unwrap() == cpu_scan(&b).0);
    assert_eq!(
        ctx.read_buffer::<u32>(scan.total()).unwrap()[0],
        cpu_scan(&b).1
    );
}

#[test]
fn counts_over_capacity_or_buffer_are_typed_errors() {
    let ctx = common::gpu();
    let scan = PrefixSum::new(&ctx, 1000).unwrap();
    let data = ctx.storage_zeroed::<u32>("small scan data", 1001).unwrap();
    let mut enc = encoder(&ctx, "over capacity");
    let err = scan.scan_in_place(&ctx, &mut enc, &data, 1001).unwrap_err();
    assert!(
        matches!(
            err,
            PrimitiveError::OverCapacity {
                count: 1001,
                capacity: 1000,
                ..
            }
        ),
        "{err}"
    );
    let err = scan.scan_in_place(
        &ctx,
        &mut enc,
        &ctx.storage_zeroed::<u32>("tiny", 10).unwrap(),
        11,
    );
    assert!(
        matches!(err, Err(PrimitiveError::BufferTooSmall { .. })),
        "{err:?}"
    );
    // Scratch is only ~count/2047 words, so even the largest count can be prepared.
    assert!(PrefixSum::new(&ctx, u32::MAX).is_ok());
}

#[test]
fn reserve_grows_capacity_and_scans_correctly() {
    let ctx = common::gpu();
    let mut scan = PrefixSum::new(&ctx, 100).unwrap();
    scan.reserve(&ctx, 5_000_000).unwrap();
    assert_eq!(scan.max_count(), 5_000_000);
    let values = random_u32s(4_194_309, 5);
    assert_eq!(gpu_scan_in_place(&ctx, &scan, &values), cpu_scan(&values));
}
