//! GPU stable radix sort vs a CPU stable sort, exact, on lavapipe (docs/design.md §
//! Verification 4). Values are the original indices, so equal keys out of
//! input order (an unstable or lossy sort) show as a mismatch.

use crate::common;
use crate::support::random_u32s;

use physfit::gpu::primitive_error::PrimitiveError;
use physfit::gpu::radix_sort::RadixSort;
use physfit::gpu::{encoder, GpuContext, GpuError, GpuOptions};

/// Random keys with many duplicates: drawn from a pool of `distinct` random
/// 32-bit values (all bits set at random, so bits above key_bits are present
/// and must be ignored by the order but kept in the output).
fn keys_with_duplicates(count: usize, distinct: usize, seed: u64) -> Vec<u32> {
    let pool = random_u32s(distinct, seed);
    random_u32s(count, seed + 1000)
        .iter()
        .map(|r| pool[*r as usize % distinct])
        .collect()
}

/// CPU stable sort by the low `key_bits` bits: (keys, original indices).
fn cpu_sort(keys: &[u32], key_bits: u32) -> (Vec<u32>, Vec<u32>) {
    let mask = if key_bits == 32 {
        u32::MAX
    } else {
        (1u32 << key_bits) - 1
    };
    let mut pairs: Vec<(u32, u32)> = keys.iter().copied().zip(0..).collect();
    pairs.sort_by_key(|&(k, i)| (k & mask, i));
    pairs.into_iter().unzip()
}

/// Sorts on the GPU (buffers padded with sentinels past the count, which must
/// survive); returns (keys, values).
fn gpu_sort(
    ctx: &GpuContext,
    sorter: &RadixSort,
    keys: &[u32],
    key_bits: u32,
) -> (Vec<u32>, Vec<u32>) {
    let n = keys.len();
    let mut keys_padded = keys.to_vec();
    keys_padded.push(0xdead_beef);
    let mut values: Vec<u32> = (0..n as u32).collect();
    values.push(0x1234_5678);
    let keys_buf = ctx.storage_from_slice("sort keys", &keys_padded).unwrap();
    let values_buf = ctx.storage_from_slice("sort values", &values).unwrap();
    let mut enc = encoder(ctx, "radix sort test");
    sorter
        .sort(ctx, &mut enc, &keys_buf, &values_buf, n as u32, key_bits)
        .unwrap();
    ctx.queue.submit([enc.finish()]);
    let got_keys: Vec<u32> = ctx.read_buffer(&keys_buf).unwrap();
    let got_values: Vec<u32> = ctx.read_buffer(&values_buf).unwrap();
    assert_eq!(got_keys[n], 0xdead_beef, "keys written past count");
    assert_eq!(got_values[n], 0x1234_5678, "values written past count");
    (got_keys[..n].to_vec(), got_values[..n].to_vec())
}

fn check_sizes_and_widths(ctx: &GpuContext) {
    let sorter = RadixSort::new(ctx, 300_001).unwrap();
    for key_bits in [4u32, 13, 32] {
        for (s, &count) in [0usize, 1, 1000, 300_001].iter().enumerate() {
            // Few distinct keys for the narrow width, more for the wide ones;
            // always many duplicates.
            let distinct = if key_bits == 4 { 40 } else { 5000 };
            let keys = keys_with_duplicates(count, distinct, (key_bits as u64) * 10 + s as u64);
            let (expected_keys, expected_values) = cpu_sort(&keys, key_bits);
            let (got_keys, got_values) = gpu_sort(ctx, &sorter, &keys, key_bits);
            assert!(
                got_values == expected_values,
                "key_bits {key_bits}, count {count}: order differs first at {:?}",
                got_values
                    .iter()
                    .zip(&expected_values)
                    .position(|(a, b)| a != b)
            );
            assert!(
                got_keys == expected_keys,
                "key_bits {key_bits}, count {count}: keys"
            );
        }
    }
}

#[test]
fn stable_sort_matches_cpu_for_4_13_32_bits() {
    check_sizes_and_widths(&common::gpu());
}

#[test]
fn stable_sort_matches_cpu_with_compare_swap_atomics() {
    // The kernels use no atomics; this proves they compose and run in the
    // compare-and-swap shader configuration too.
    check_sizes_and_widths(&common::gpu_with(GpuOptions {
        force_cas_atomics: true,
    }));
}

#[test]
fn bad_requests_are_typed_errors() {
    let ctx = common::gpu();
    let sorter = RadixSort::new(&ctx, 100).unwrap();
    let keys = ctx.storage_zeroed::<u32>("keys", 200).unwrap();
    let values = ctx.storage_zeroed::<u32>("values", 50).unwrap();
    let mut enc = encoder(&ctx, "bad sorts");
    let err = sorter
        .sort(&ctx, &mut enc, &keys, &values, 101, 8)
        .unwrap_err();
    assert!(
        matches!(
            err,
            PrimitiveError::OverCapacity {
                count: 101,
                capacity: 100,
                ..
            }
        ),
        "{err}"
    );
    let err = sorter
        .sort(&ctx, &mut enc, &keys, &values, 60, 8)
        .unwrap_err();
    assert!(err.to_string().contains("'values'"), "{err}");
    let err = sorter
        .sort(&ctx, &mut enc, &keys, &keys, 10, 8)
        .unwrap_err();
    assert!(
        matches!(err, PrimitiveError::AliasedBuffers { .. }),
        "{err}"
    );
    let err = sorter
        .sort(&ctx, &mut enc, &keys, &values, 10, 33)
        .unwrap_err();
    assert!(
        matches!(err, PrimitiveError::KeyBits { key_bits: 33 }),
        "{err}"
    );
    let too_many = (ctx.limits.max_storage_buffer_binding_size / 4 + 1) as u32;
    match RadixSort::new(&ctx, too_many) {
        Err(PrimitiveError::Gpu(GpuError::OverLimit { label, .. })) => {
            assert!(label.contains("radix sort"), "{label}")
        }
        Err(e) => panic!("expected OverLimit, got {e}"),
        Ok(_) => panic!("expected OverLimit for {too_many} keys"),
    }
}

#[test]
#[ignore = "benchmark: cargo test --release --test gpu_splat radix_sort -- --ignored --nocapture"]
fn bench_radix_sort_1m() {
    let ctx = common::gpu();
    for key_bits in [16, 32] {
        let ms = physfit::gpu::sort_bench::bench_radix_sort(&ctx, 1_000_000, key_bits).unwrap();
        println!(
            "radix sort 1M keys, {key_bits} bits on {}: {ms:.2} ms",
            ctx.adapter_info.name
        );
        assert!(ms.is_finite() && ms > 0.0);
    }
}

#[test]
fn workgroup_memory_fits_common_adapters() {
    // Desktop Vulkan/Metal/DX12 offer >= 32 KiB; the scatter is the largest.
    let ctx = common::gpu();
    let scatter =
        physfit::gpu::primitive_error::workgroup_memory_bytes(&ctx, "gpu/radix_sort_scatter")
            .unwrap();
    let scan = physfit::gpu::primitive_error::workgroup_memory_bytes(&ctx, "gpu/prefix_sum_blocks")
        .unwrap();
    println!("workgroup memory: scatter {scatter} B, scan {scan} B");
    assert!((4224 * 4..=20 * 1024).contains(&scatter), "{scatter}");
    assert!(scan <= 16 * 1024, "{scan}");
}

#[test]
fn reserve_grows_capacity_and_sorts_correctly() {
    let ctx = common::gpu();
    let mut sorter = RadixSort::new(&ctx, 1000).unwrap();
    let keys = keys_with_duplicates(70_001, 500, 11);
    // Over capacity before reserving: a typed error, not a wrong sort.
    let keys_buf = ctx.storage_from_slice("sort keys", &keys).unwrap();
    let values_buf = ctx
        .storage_zeroed::<u32>("sort values", keys.len())
        .unwrap();
    let mut enc = encoder(&ctx, "radix sort over capacity");
    assert!(sorter
        .sort(
            &ctx,
            &mut enc,
            &keys_buf,
            &values_buf,
            keys.len() as u32,
            16
        )
        .is_err());
    sorter.reserve(&ctx, 70_001).unwrap();
    assert_eq!(sorter.max_count(), 70_001);
    sorter.reserve(&ctx, 10).unwrap();
    assert_eq!(sorter.max_count(), 70_001, "reserve never shrinks");
    assert_eq!(gpu_sort(&ctx, &sorter, &keys, 16), cpu_sort(&keys, 16));
}

#[test]
fn oversized_storage_buffer_names_the_limit() {
    let ctx = common::gpu();
    let too_big = ctx.limits.max_storage_buffer_binding_size + 4;
    let err = ctx
        .create_buffer("huge particles", too_big, physfit::gpu::STORAGE)
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("huge particles") && msg.contains("max_storage_buffer_binding_size"),
        "{msg}"
    );
}
