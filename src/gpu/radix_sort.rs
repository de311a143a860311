//! Stable LSD radix sort of u32 keys with u32 values on the GPU, by the low
//! `key_bits` bits of each key, for any count up to the capacity given at
//! construction; the sorted pairs end in the caller's buffers.
//!
//! Each pass sorts by one 4-bit digit in three dispatches (docs/design.md §
//! Gaussian splatting: no subgroup size, no forward progress between
//! workgroups assumed, so only dispatch boundaries synchronise):
//! 1. [`RadixSortHistogram`]: digit counts of each tile of 2048 keys,
//!    stored digit-major (`digit * num_tiles + tile`);
//! 2. [`PrefixSum`] over those counts: the first output position of each
//!    (digit, tile), tiles of one digit in input order;
//! 3. [`RadixSortScatter`]: each tile ranks its keys among equal digits in
//!    input order (workgroup-memory scan) and writes them there.
//!
//! Passes ping-pong between the caller's buffers and internal scratch; after an
//! odd number of passes the result is copied back. [`RadixSort::sort`] takes
//! the count from the host (the rasterizer reads its intersection count
//! back anyway, to size its buffers to the frame).

use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::prefix_sum::PrefixSum;
use super::primitive_error::{check_u32_capacity, check_workgroup_memory, PrimitiveError};
use super::radix_sort_histogram::{RadixSortHistogram, RadixSortHistogramBuffers};
use super::radix_sort_pass::{radix_passes, RadixPassUniforms, RADIX, RADIX_SORT_TILE_SIZE};
use super::radix_sort_scatter::{RadixSortScatter, RadixSortScatterBuffers};

/// A reusable radix sorter with scratch for up to `max_count` pairs.
pub struct RadixSort {
    histogram: RadixSortHistogram,
    scatter: RadixSortScatter,
    scan: PrefixSum,
    keys_scratch: GpuBuffer,
    values_scratch: GpuBuffer,
    histograms: GpuBuffer,
    max_count: u32,
}

/// Key and value ping-pong buffers and per-tile digit histograms for sorts
/// of up to `max_count` elements.
fn sort_scratch(
    ctx: &GpuContext,
    max_count: u32,
) -> Result<(GpuBuffer, GpuBuffer, GpuBuffer), PrimitiveError> {
    let max_tiles = max_count.div_ceil(RADIX_SORT_TILE_SIZE);
    Ok((
        ctx.storage_zeroed::<u32>("radix sort keys scratch", max_count as usize)?,
        ctx.storage_zeroed::<u32>("radix sort values scratch", max_count as usize)?,
        ctx.storage_zeroed::<u32>("radix sort tile histograms", (RADIX * max_tiles) as usize)?,
    ))
}

impl RadixSort {
    /// Compiles the kernels and allocates scratch for `max_count` pairs:
    /// 8 bytes per pair plus 16 u32 per tile of 2048 (≈ 8.03 bytes per pair).
    ///
    /// Errors: [`PrimitiveError::WorkgroupMemory`] when the adapter offers
    /// less than the scatter kernel's ≈18 KiB of workgroup memory;
    /// [`PrimitiveError::Gpu`] with [`super::GpuError::OverLimit`]
    /// when `max_count` u32 exceed the device's storage-binding limit
    /// (128 MiB = 33,554,432 keys on lavapipe).
    pub fn new(ctx: &GpuContext, max_count: u32) -> Result<Self, PrimitiveError> {
        check_workgroup_memory(ctx, "gpu/radix_sort_histogram")?;
        check_workgroup_memory(ctx, "gpu/radix_sort_scatter")?;
        let max_tiles = max_count.div_ceil(RADIX_SORT_TILE_SIZE);
        let (keys_scratch, values_scratch, histograms) = sort_scratch(ctx, max_count)?;
        Ok(Self {
            histogram: RadixSortHistogram::new(ctx)?,
            scatter: RadixSortScatter::new(ctx)?,
            scan: PrefixSum::new(ctx, RADIX * max_tiles)?,
            keys_scratch,
            values_scratch,
            histograms,
            max_count,
        })
    }

    /// The largest count this instance accepts.
    pub fn max_count(&self) -> u32 {
        self.max_count
    }

    /// Grows the scratch to accept `max_count` elements (no-op when it
    /// already does), keeping the compiled kernels: a caller whose counts
    /// grow (the rasterizer's intersections) reallocates buffers only.
    pub fn reserve(&mut self, ctx: &GpuContext, max_count: u32) -> Result<(), PrimitiveError> {
        if max_count <= self.max_count {
            return Ok(());
        }
        // Release the old scratch before allocating the larger one.
        let placeholder = |label: &str| ctx.storage_zeroed::<u32>(label, 1);
        self.keys_scratch = placeholder("radix sort keys scratch")?;
        self.values_scratch = placeholder("radix sort values scratch")?;
        self.histograms = placeholder("radix sort tile histograms")?;
        let (keys, values, histograms) = sort_scratch(ctx, max_count)?;
        self.keys_scratch = keys;
        self.values_scratch = values;
        self.histograms = histograms;
        self.scan
            .reserve(ctx, RADIX * max_count.div_ceil(RADIX_SORT_TILE_SIZE))?;
        self.max_count = max_count;
        Ok(())
    }

    /// Records a stable sort of the first `count` (key, value) pairs of
    /// `keys`/`values` by `key & ((1 << key_bits) - 1)`, ascending; pairs with
    /// equal sort bits keep their input order. The result is in `keys` and
    /// `values` (elements past `count` untouched). `key_bits = 0` records
    /// nothing. Cost: `ceil(key_bits / 4)` passes of 3–4 dispatches each.
    /// Both buffers need STORAGE and, for odd pass counts, COPY_DST usage
    /// (as [`super::STORAGE`] buffers have).
    ///
    /// Errors: [`PrimitiveError::KeyBits`] for `key_bits > 32`,
    /// [`PrimitiveError::OverCapacity`] for `count > max_count`,
    /// [`PrimitiveError::BufferTooSmall`], [`PrimitiveError::AliasedBuffers`].
    pub fn sort(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        keys: &GpuBuffer,
        values: &GpuBuffer,
        count: u32,
        key_bits: u32,
    ) -> Result<(), PrimitiveError> {
        if key_bits > 32 {
            return Err(PrimitiveError::KeyBits { key_bits });
        }
        if count > self.max_count {
            return Err(PrimitiveError::OverCapacity {
                primitive: "radix sort",
                count,
                capacity: self.max_count,
            });
        }
        check_u32_capacity("radix sort", keys, count)?;
        check_u32_capacity("radix sort", values, count)?;
        if keys.raw() == values.raw() {
            return Err(PrimitiveError::AliasedBuffers {
                label: keys.label().to_string(),
            });
        }
        if count == 0 {
            return Ok(());
        }
        let passes = radix_passes(count, key_bits);
        self.record_passes(ctx, encoder, keys, values, &passes, count)?;
        if passes.len() % 2 == 1 {
            let bytes = u64::from(count) * 4;
            encoder.copy_buffer_to_buffer(&self.keys_scratch, 0, keys, 0, bytes);
            encoder.copy_buffer_to_buffer(&self.values_scratch, 0, values, 0, bytes);
        }
        Ok(())
    }

    /// Records the passes, ping-ponging between the caller's buffers (even
    /// passes read them) and the scratch, for `count` pairs.
    #[allow(clippy::too_many_arguments)]
    fn record_passes(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        keys: &GpuBuffer,
        values: &GpuBuffer,
        passes: &[RadixPassUniforms],
        count: u32,
    ) -> Result<(), PrimitiveError> {
        let histogram_count = RADIX * count.div_ceil(RADIX_SORT_TILE_SIZE);
        for (pass, pass_uniforms) in passes.iter().enumerate() {
            // One uniform buffer per pass and call, so passes (and sorts)
            // recorded into one encoder never share a rewritten buffer.
            let uniforms =
                ctx.uniform_buffer(&format!("radix sort pass {pass} uniforms"), pass_uniforms)?;
            let (keys_in, values_in, keys_out, values_out) = if pass % 2 == 0 {
                (keys, values, &self.keys_scratch, &self.values_scratch)
            } else {
                (&self.keys_scratch, &self.values_scratch, keys, values)
            };
            self.histogram.dispatch(
                ctx,
                encoder,
                &RadixSortHistogramBuffers {
                    uniforms: &uniforms,
                    keys: keys_in,
                    histograms: &self.histograms,
                },
                count,
            );
            self.scan
                .scan_in_place(ctx, encoder, &self.histograms, histogram_count)?;
            self.scatter.dispatch(
                ctx,
                encoder,
                &RadixSortScatterBuffers {
                    uniforms: &uniforms,
                    keys_in,
                    values_in,
                    histogram_offsets: &self.histograms,
                    keys_out,
                    values_out,
                },
                count,
            );
        }
        Ok(())
    }
}
