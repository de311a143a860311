//! Timing of the GPU radix sort, for the rasterizer's benchmarks and for
//! choosing settings per adapter.

use std::time::Instant;

use super::context::GpuContext;
use super::primitive_error::PrimitiveError;
use super::radix_sort::RadixSort;

/// Repetitions timed after one untimed warm-up.
const REPETITIONS: u32 = 5;

/// Deterministic pseudo-random u32 (SplitMix64), so every run sorts the same keys.
fn splitmix(state: &mut u64) -> u32 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

/// Mean wall time in milliseconds of one [`RadixSort::sort`] of `count`
/// uniformly random keys of `key_bits` bits with u32 values, measured as
/// submit + wait around each of 5 repetitions after a warm-up. Each
/// repetition first restores the unsorted keys and values with two buffer
/// copies (`8 · count` bytes, included in the time), so every sort sees the
/// same random input. Sorter construction and upload are not timed.
pub fn bench_radix_sort(
    ctx: &GpuContext,
    count: u32,
    key_bits: u32,
) -> Result<f64, PrimitiveError> {
    let mask = if key_bits >= 32 {
        u32::MAX
    } else {
        (1u32 << key_bits) - 1
    };
    let mut state = 0x5eed_u64;
    let keys: Vec<u32> = (0..count).map(|_| splitmix(&mut state) & mask).collect();
    let values: Vec<u32> = (0..count).collect();
    let sorter = RadixSort::new(ctx, count)?;
    let keys_input = ctx.storage_from_slice("bench radix sort keys input", &keys)?;
    let values_input = ctx.storage_from_slice("bench radix sort values input", &values)?;
    let keys_buf = ctx.storage_zeroed::<u32>("bench radix sort keys", count as usize)?;
    let values_buf = ctx.storage_zeroed::<u32>("bench radix sort values", count as usize)?;
    let bytes = u64::from(count) * 4;
    let run_once = || -> Result<(), PrimitiveError> {
        let mut encoder = super::encoder(ctx, "bench radix sort");
        if bytes > 0 {
            encoder.copy_buffer_to_buffer(&keys_input, 0, &keys_buf, 0, bytes);
            encoder.copy_buffer_to_buffer(&values_input, 0, &values_buf, 0, bytes);
        }
        sorter.sort(ctx, &mut encoder, &keys_buf, &values_buf, count, key_bits)?;
        ctx.queue.submit([encoder.finish()]);
        ctx.wait()?;
        Ok(())
    };
    run_once()?;
    let start = Instant::now();
    for _ in 0..REPETITIONS {
        run_once()?;
    }
    Ok(start.elapsed().as_secs_f64() * 1e3 / f64::from(REPETITIONS))
}
