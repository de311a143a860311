//! Exclusive prefix sum of u32 on the GPU, any count up to the capacity given
//! at construction: `out[i] = in[0] + … + in[i-1]` (wrapping modulo 2^32),
//! and the grand total in [`PrefixSum::total`].
//!
//! Hierarchical and multi-pass (docs/design.md § Gaussian splatting: no subgroup
//! size and no forward progress between workgroups assumed): scan blocks of
//! 2048 in place and write each block's total ([`PrefixSumBlocks`]); scan the
//! totals the same way, recursing until one block remains; then add each
//! level's scanned totals back into the level below ([`PrefixSumAdd`]).
//! Correctness needs only the ordering between dispatches. Scratch for every
//! level is allocated once, for `max_count`, and reused by every call.

use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::prefix_sum_add::{PrefixSumAdd, PrefixSumAddBuffers};
use super::prefix_sum_blocks::{
    PrefixSumBlocks, PrefixSumBlocksBuffers, PrefixSumUniforms, PREFIX_SUM_BLOCK_SIZE,
};
use super::primitive_error::{check_u32_capacity, check_workgroup_memory, PrimitiveError};

/// Element counts of each level of the hierarchy: `count`, then the number
/// of blocks of each level, until a level fits in one block.
pub(crate) fn level_counts(count: u32) -> Vec<u32> {
    let mut levels = vec![count];
    while *levels.last().unwrap() > PREFIX_SUM_BLOCK_SIZE {
        levels.push(levels.last().unwrap().div_ceil(PREFIX_SUM_BLOCK_SIZE));
    }
    levels
}

/// A reusable exclusive-scan primitive with scratch for up to `max_count` elements.
pub struct PrefixSum {
    blocks: PrefixSumBlocks,
    add: PrefixSumAdd,
    /// Block totals of levels 1, 2, … (scanned in place in turn).
    level_sums: Vec<GpuBuffer>,
    total: GpuBuffer,
    max_count: u32,
}

/// Block-total buffers of levels 1, 2, … for scans of up to `max_count`.
fn level_sum_buffers(ctx: &GpuContext, max_count: u32) -> Result<Vec<GpuBuffer>, PrimitiveError> {
    Ok(level_counts(max_count)
        .iter()
        .skip(1)
        .enumerate()
        .map(|(level, &n)| {
            ctx.storage_zeroed::<u32>(
                &format!("prefix sum block totals level {}", level + 1),
                n as usize,
            )
        })
        .collect::<Result<Vec<_>, _>>()?)
}

impl PrefixSum {
    /// Compiles the kernels and allocates the scratch for `max_count` elements
    /// (about `max_count / 2047` u32 in all).
    pub fn new(ctx: &GpuContext, max_count: u32) -> Result<Self, PrimitiveError> {
        check_workgroup_memory(ctx, "gpu/prefix_sum_blocks")?;
        Ok(Self {
            blocks: PrefixSumBlocks::new(ctx)?,
            add: PrefixSumAdd::new(ctx)?,
            level_sums: level_sum_buffers(ctx, max_count)?,
            total: ctx.storage_zeroed::<u32>("prefix sum total", 1)?,
            max_count,
        })
    }

    /// Grows the scratch to accept `max_count` elements (no-op when it
    /// already does). Only buffers are reallocated: the compiled kernels are
    /// kept, so callers whose counts grow pay no pipeline rebuild.
    pub fn reserve(&mut self, ctx: &GpuContext, max_count: u32) -> Result<(), PrimitiveError> {
        if max_count > self.max_count {
            self.level_sums = Vec::new();
            self.level_sums = level_sum_buffers(ctx, max_count)?;
            self.max_count = max_count;
        }
        Ok(())
    }

    /// The largest count this instance accepts.
    pub fn max_count(&self) -> u32 {
        self.max_count
    }

    /// One u32: the sum of all `count` input elements of the latest recorded
    /// scan (0 for an empty scan), valid once that scan has executed. Copy it
    /// out (or bind it) before the next scan recorded on this instance runs.
    #[cfg(feature = "reference")]
    pub fn total(&self) -> &GpuBuffer {
        &self.total
    }

    /// Records an exclusive scan of the first `count` u32 of `data`, in place.
    /// Elements past `count` are untouched.
    ///
    /// Errors: [`PrimitiveError::OverCapacity`] when `count > max_count`,
    /// [`PrimitiveError::BufferTooSmall`] when `data` holds fewer than `count` u32.
    pub fn scan_in_place(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        data: &GpuBuffer,
        count: u32,
    ) -> Result<(), PrimitiveError> {
        if count > self.max_count {
            return Err(PrimitiveError::OverCapacity {
                primitive: "prefix sum",
                count,
                capacity: self.max_count,
            });
        }
        check_u32_capacity("prefix sum", data, count)?;
        let counts = level_counts(count);
        // Uniform buffers are made per call (not rewritten), so several scans
        // recorded into one encoder each keep their own counts.
        let uniforms = counts
            .iter()
            .enumerate()
            .map(|(level, &n)| {
                ctx.uniform_buffer(
                    &format!("prefix sum uniforms level {level}"),
                    &PrefixSumUniforms {
                        count: n,
                        _pad: [0; 3],
                    },
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.record_levels(ctx, encoder, data, &uniforms, &counts);
        Ok(())
    }

    /// Records the scan with one [`PrefixSumUniforms`] buffer per level
    /// (possibly filled on the GPU) and, per level, a count that bounds the
    /// dispatch (workgroups past the uniform count exit at once). The level
    /// structure must follow [`level_counts`] of the dispatch counts, and the
    /// uniform counts must follow the same `ceil(n / 2048)` rule (extra
    /// levels of count 1 or 0 are harmless). Checks are the caller's.
    pub(crate) fn record_levels(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        data: &GpuBuffer,
        uniforms: &[GpuBuffer],
        dispatch_counts: &[u32],
    ) {
        encoder.clear_buffer(&self.total, 0, None);
        let level_data = |level: usize| -> &GpuBuffer {
            if level == 0 {
                data
            } else {
                &self.level_sums[level - 1]
            }
        };
        for (level, &n) in dispatch_counts.iter().enumerate() {
            let block_sums = if level + 1 < dispatch_counts.len() {
                level_data(level + 1)
            } else {
                &self.total
            };
            self.blocks.dispatch(
                ctx,
                encoder,
                &PrefixSumBlocksBuffers {
                    uniforms: &uniforms[level],
                    data: level_data(level),
                    block_sums,
                },
                n,
            );
        }
        for level in (0..dispatch_counts.len() - 1).rev() {
            self.add.dispatch(
                ctx,
                encoder,
                &PrefixSumAddBuffers {
                    uniforms: &uniforms[level],
                    data: level_data(level),
                    block_offsets: level_data(level + 1),
                },
                dispatch_counts[level],
            );
        }
    }

    /// Records `output[..count] = exclusive_scan(input[..count])`: a copy, then
    /// [`Self::scan_in_place`] on `output` (the same buffer twice scans in
    /// place). `input` is otherwise left unchanged; it needs
    /// COPY_SRC usage and `output` COPY_DST (as [`super::STORAGE`] buffers have).
    pub fn scan(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        input: &GpuBuffer,
        output: &GpuBuffer,
        count: u32,
    ) -> Result<(), PrimitiveError> {
        check_u32_capacity("prefix sum", input, count)?;
        check_u32_capacity("prefix sum", output, count)?;
        if count > self.max_count {
            return Err(PrimitiveError::OverCapacity {
                primitive: "prefix sum",
                count,
                capacity: self.max_count,
            });
        }
        if count > 0 && input.raw() != output.raw() {
            encoder.copy_buffer_to_buffer(input, 0, output, 0, u64::from(count) * 4);
        }
        self.scan_in_place(ctx, encoder, output, count)
    }
}

#[cfg(test)]
mod tests {
    use super::level_counts;

    #[test]
    fn levels_shrink_to_one_block() {
        assert_eq!(level_counts(0), vec![0]);
        assert_eq!(level_counts(2048), vec![2048]);
        assert_eq!(level_counts(2049), vec![2049, 2]);
        assert_eq!(level_counts(33_554_432), vec![33_554_432, 16_384, 8]);
    }
}
