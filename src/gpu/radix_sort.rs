//! Stable LSD radix sort of u32 keys with u32 values on the GPU, by the low
//! `key_bits` bits of each key, for any count up to the capacity given at
//! construction; the sorted pairs end in the caller's buffers.
//!
//! Each pass sorts by one 4-bit digit in three dispatches (DESIGN.md §
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
//! the count from the host; [`RadixSort::sort_indirect`] reads it from a GPU
//! buffer when the work runs (no readback). Sorting by float keys:
//! convert with [`super::radix_sort_float_keys`] and use `key_bits = 32`.

use bytemuck::{Pod, Zeroable};

use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::prefix_sum::{level_counts, PrefixSum};
use super::prefix_sum_blocks::PrefixSumUniforms;
use super::primitive_error::{check_u32_capacity, check_workgroup_memory, PrimitiveError};
use super::radix_sort_histogram::{RadixSortHistogram, RadixSortHistogramBuffers};
use super::radix_sort_indirect_params::{
    RadixSortIndirectParams, RadixSortIndirectParamsBuffers, RadixSortIndirectParamsUniforms,
};
use super::radix_sort_scatter::{RadixSortScatter, RadixSortScatterBuffers};

/// Keys handled by one workgroup (`TILE_SIZE` in shaders/gpu/radix_sort_tile.wgsl).
pub const RADIX_SORT_TILE_SIZE: u32 = 2048;
/// Bits sorted per pass (`RADIX_BITS` in the WGSL).
pub const RADIX_SORT_DIGIT_BITS: u32 = 4;
/// Distinct digits per pass.
const RADIX: u32 = 1 << RADIX_SORT_DIGIT_BITS;

/// Uniforms of one pass, shared by the histogram and scatter kernels
/// (`RadixPassUniforms` in shaders/gpu/radix_sort_tile.wgsl; 16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct RadixPassUniforms {
    /// Number of keys.
    pub count: u32,
    /// Lowest key bit of this pass's digit.
    pub shift: u32,
    /// Mask of the shifted digit: 15, or fewer bits on the last pass when
    /// `key_bits` is not a multiple of 4 (bits above `key_bits` are ignored).
    pub digit_mask: u32,
    /// `ceil(count / RADIX_SORT_TILE_SIZE)`.
    pub num_tiles: u32,
}

/// The passes sorting `count` keys by their low `key_bits` bits.
pub fn radix_passes(count: u32, key_bits: u32) -> Vec<RadixPassUniforms> {
    let num_tiles = count.div_ceil(RADIX_SORT_TILE_SIZE);
    (0..key_bits.div_ceil(RADIX_SORT_DIGIT_BITS))
        .map(|pass| {
            let shift = pass * RADIX_SORT_DIGIT_BITS;
            let bits = (key_bits - shift).min(RADIX_SORT_DIGIT_BITS);
            RadixPassUniforms {
                count,
                shift,
                digit_mask: (1 << bits) - 1,
                num_tiles,
            }
        })
        .collect()
}

/// A reusable radix sorter with scratch for up to `max_count` pairs.
pub struct RadixSort {
    histogram: RadixSortHistogram,
    scatter: RadixSortScatter,
    scan: PrefixSum,
    keys_scratch: GpuBuffer,
    values_scratch: GpuBuffer,
    histograms: GpuBuffer,
    indirect_params: RadixSortIndirectParams,
    /// Output of [`RadixSortIndirectParams`]: pass and level uniforms, status.
    params: GpuBuffer,
    indirect_status: GpuBuffer,
    max_count: u32,
}

/// Where [`RadixSort::sort_indirect`] reads its count: u32 element `index`
/// of `buffer`, when the recorded work executes.
#[derive(Clone, Copy)]
pub struct GpuCount<'a> {
    /// Buffer holding the count (STORAGE usage).
    pub buffer: &'a GpuBuffer,
    /// Index of the count, in u32 elements.
    pub index: u32,
}

/// How the passes get their uniforms and their dispatch sizes.
enum PassSource<'a> {
    /// Count known on the host: uniforms made from it, dispatches sized to it.
    Host,
    /// Count on the GPU: uniforms copied from `params`, dispatches sized to
    /// the capacity.
    Gpu {
        pass_uniforms: &'a [GpuBuffer],
        level_uniforms: &'a [GpuBuffer],
    },
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
            indirect_params: RadixSortIndirectParams::new(ctx)?,
            // At most 9 passes (8 + a final stable copy) and a few scan levels.
            params: ctx.storage_zeroed::<u32>("radix sort indirect params", 4 * 9 + 4 * 8 + 2)?,
            indirect_status: ctx.storage_zeroed::<u32>("radix sort indirect status", 2)?,
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
        self.record_passes(ctx, encoder, keys, values, &passes, count, PassSource::Host)?;
        if passes.len() % 2 == 1 {
            let bytes = u64::from(count) * 4;
            encoder.copy_buffer_to_buffer(&self.keys_scratch, 0, keys, 0, bytes);
            encoder.copy_buffer_to_buffer(&self.values_scratch, 0, values, 0, bytes);
        }
        Ok(())
    }

    /// Like [`Self::sort`], with the count read on the GPU from `count` when
    /// the work executes (no readback):
    /// e.g. the total of the rasterizer's intersection prefix sum.
    ///
    /// Every kernel is dispatched for the capacity `max_count`; workgroups
    /// past the actual count exit at once. A count above `max_count` is
    /// clamped: only the first `max_count` pairs are sorted, and
    /// [`Self::indirect_status`] tells afterwards. After an odd number of
    /// digit passes, one more pass with a constant digit (a stable copy)
    /// brings the result back, so elements past the count stay untouched.
    /// `keys` and `values` must hold `max_count` u32.
    ///
    /// Errors: as [`Self::sort`], with `max_count` in place of the count.
    pub fn sort_indirect(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        keys: &GpuBuffer,
        values: &GpuBuffer,
        count: GpuCount,
        key_bits: u32,
    ) -> Result<(), PrimitiveError> {
        if key_bits > 32 {
            return Err(PrimitiveError::KeyBits { key_bits });
        }
        check_u32_capacity("radix sort", keys, self.max_count)?;
        check_u32_capacity("radix sort", values, self.max_count)?;
        check_u32_capacity(
            "radix sort count",
            count.buffer,
            count.index.saturating_add(1),
        )?;
        if keys.raw() == values.raw() {
            return Err(PrimitiveError::AliasedBuffers {
                label: keys.label().to_string(),
            });
        }
        let mut passes = radix_passes(self.max_count, key_bits);
        if passes.len() % 2 == 1 {
            passes.push(RadixPassUniforms {
                digit_mask: 0,
                shift: 0,
                ..passes[0]
            });
        }
        let levels = level_counts(self.scan.max_count()).len();
        let pass_templates = ctx.storage_from_slice("radix sort pass templates", &passes)?;
        let uniforms = ctx.uniform_buffer(
            "radix sort indirect params uniforms",
            &RadixSortIndirectParamsUniforms {
                count_index: count.index,
                max_count: self.max_count,
                num_passes: passes.len() as u32,
                num_levels: levels as u32,
            },
        )?;
        // Each pass and level gets its own uniform buffer, filled by copy.
        let uniform_bytes = std::mem::size_of::<RadixPassUniforms>() as u64;
        debug_assert_eq!(
            uniform_bytes,
            std::mem::size_of::<PrefixSumUniforms>() as u64
        );
        let make = |label: String| ctx.create_buffer(&label, uniform_bytes, super::buffer::UNIFORM);
        let pass_uniforms = (0..passes.len())
            .map(|p| make(format!("radix sort pass {p} uniforms (indirect)")))
            .collect::<Result<Vec<_>, _>>()?;
        let level_uniforms = (0..levels)
            .map(|l| {
                make(format!(
                    "radix sort histogram scan level {l} uniforms (indirect)"
                ))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.indirect_params.dispatch(
            ctx,
            encoder,
            &RadixSortIndirectParamsBuffers {
                uniforms: &uniforms,
                count_source: count.buffer,
                pass_templates: &pass_templates,
                params: &self.params,
            },
        );
        for (i, target) in pass_uniforms.iter().chain(&level_uniforms).enumerate() {
            encoder.copy_buffer_to_buffer(
                &self.params,
                i as u64 * uniform_bytes,
                target,
                0,
                uniform_bytes,
            );
        }
        let status_offset = (passes.len() + levels) as u64 * uniform_bytes;
        encoder.copy_buffer_to_buffer(&self.params, status_offset, &self.indirect_status, 0, 8);
        self.record_passes(
            ctx,
            encoder,
            keys,
            values,
            &passes,
            self.max_count,
            PassSource::Gpu {
                pass_uniforms: &pass_uniforms,
                level_uniforms: &level_uniforms,
            },
        )
    }

    /// Two u32 written by the latest executed [`Self::sort_indirect`]: the
    /// count read from the GPU and the count sorted (smaller when the first
    /// exceeded `max_count`).
    pub fn indirect_status(&self) -> &GpuBuffer {
        &self.indirect_status
    }

    /// Records the passes, ping-ponging between the caller's buffers (even
    /// passes read them) and the scratch. `dispatch_count` sizes the
    /// dispatches (the count, or the capacity for [`PassSource::Gpu`]).
    #[allow(clippy::too_many_arguments)]
    fn record_passes(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        keys: &GpuBuffer,
        values: &GpuBuffer,
        passes: &[RadixPassUniforms],
        dispatch_count: u32,
        source: PassSource,
    ) -> Result<(), PrimitiveError> {
        let histogram_count = RADIX * dispatch_count.div_ceil(RADIX_SORT_TILE_SIZE);
        let scan_dispatch_counts = level_counts(histogram_count);
        for (pass, pass_uniforms) in passes.iter().enumerate() {
            // One uniform buffer per pass and call, so passes (and sorts)
            // recorded into one encoder never share a rewritten buffer.
            let host_uniforms;
            let uniforms = match source {
                PassSource::Host => {
                    host_uniforms = ctx.uniform_buffer(
                        &format!("radix sort pass {pass} uniforms"),
                        pass_uniforms,
                    )?;
                    &host_uniforms
                }
                PassSource::Gpu { pass_uniforms, .. } => &pass_uniforms[pass],
            };
            let (keys_in, values_in, keys_out, values_out) = if pass % 2 == 0 {
                (keys, values, &self.keys_scratch, &self.values_scratch)
            } else {
                (&self.keys_scratch, &self.values_scratch, keys, values)
            };
            self.histogram.dispatch(
                ctx,
                encoder,
                &RadixSortHistogramBuffers {
                    uniforms,
                    keys: keys_in,
                    histograms: &self.histograms,
                },
                dispatch_count,
            );
            match source {
                PassSource::Host => {
                    self.scan
                        .scan_in_place(ctx, encoder, &self.histograms, histogram_count)?
                }
                PassSource::Gpu { level_uniforms, .. } => self.scan.record_levels(
                    ctx,
                    encoder,
                    &self.histograms,
                    &level_uniforms[..scan_dispatch_counts.len()],
                    &scan_dispatch_counts,
                ),
            }
            self.scatter.dispatch(
                ctx,
                encoder,
                &RadixSortScatterBuffers {
                    uniforms,
                    keys_in,
                    values_in,
                    histogram_offsets: &self.histograms,
                    keys_out,
                    values_out,
                },
                dispatch_count,
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::radix_passes;

    #[test]
    fn passes_cover_exactly_key_bits() {
        assert!(radix_passes(10, 0).is_empty());
        let p13 = radix_passes(5000, 13);
        assert_eq!(
            p13.iter()
                .map(|p| (p.shift, p.digit_mask))
                .collect::<Vec<_>>(),
            vec![(0, 15), (4, 15), (8, 15), (12, 1)]
        );
        assert_eq!(p13[0].num_tiles, 3);
        let p32 = radix_passes(1, 32);
        assert_eq!(p32.len(), 8);
        assert_eq!(p32[7].shift, 28);
        assert_eq!(p32[7].digit_mask, 15);
    }
}
