//! Errors of the GPU primitives (prefix sum, radix sort): a count over the
//! capacity the primitive was created for, a buffer too small for the count,
//! an invalid key width, or an underlying [`GpuError`].

use thiserror::Error;

use super::error::GpuError;

/// An error from [`super::prefix_sum::PrefixSum`] or
/// [`super::radix_sort::RadixSort`].
#[derive(Debug, Error)]
pub enum PrimitiveError {
    /// More elements than the scratch buffers were allocated for.
    #[error(
        "{primitive}: {count} elements exceed the capacity of {capacity} it was created with; \
         create it with a larger max_count (bounded by the device's storage-binding limit)"
    )]
    OverCapacity {
        /// Which primitive.
        primitive: &'static str,
        /// Elements requested.
        count: u32,
        /// Elements the scratch buffers hold.
        capacity: u32,
    },
    /// A caller buffer smaller than `count` elements.
    #[error("{primitive}: buffer '{label}' holds {size} bytes but {count} u32 elements need {needed} bytes")]
    BufferTooSmall {
        /// Which primitive.
        primitive: &'static str,
        /// Label of the buffer.
        label: String,
        /// Its size in bytes.
        size: u64,
        /// Elements requested.
        count: u32,
        /// Bytes needed.
        needed: u64,
    },
    /// The same buffer passed for keys and values.
    #[error("radix sort: keys and values must be distinct buffers (both are '{label}')")]
    AliasedBuffers {
        /// Label of the buffer passed twice.
        label: String,
    },
    /// `key_bits` outside 0..=32.
    #[error("radix sort: key_bits = {key_bits} is out of range; u32 keys have 0..=32 bits")]
    KeyBits {
        /// The value given.
        key_bits: u32,
    },
    /// A kernel needs more workgroup memory than the device offers.
    #[error(
        "{kernel} needs {needed} bytes of workgroup memory but the device limit \
         max_compute_workgroup_storage_size is {limit}; this adapter cannot run the GPU sort \
         (desktop Vulkan, Metal and DX12 devices offer at least 32 KiB)"
    )]
    WorkgroupMemory {
        /// Kernel (shader name).
        kernel: &'static str,
        /// Bytes its workgroup variables take.
        needed: u32,
        /// The device's limit.
        limit: u32,
    },
    /// An error of the GPU runtime (allocation over a device limit, validation, lost device).
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// Checks that `buffer` holds at least `count` u32.
pub(crate) fn check_u32_capacity(
    primitive: &'static str,
    buffer: &super::buffer::GpuBuffer,
    count: u32,
) -> Result<(), PrimitiveError> {
    let needed = u64::from(count) * 4;
    if buffer.size() < needed {
        return Err(PrimitiveError::BufferTooSmall {
            primitive,
            label: buffer.label().to_string(),
            size: buffer.size(),
            count,
            needed,
        });
    }
    Ok(())
}

/// Bytes of workgroup memory that shader `kernel` declares (sum of its
/// `var<workgroup>` sizes, from naga's layout).
pub fn workgroup_memory_bytes(
    ctx: &super::context::GpuContext,
    kernel: &'static str,
) -> Result<u32, PrimitiveError> {
    let (_, module) = super::shader::parse_and_validate(kernel, &ctx.shader_options)?;
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| GpuError::Shader {
            name: kernel.to_string(),
            message: e.to_string(),
        })?;
    Ok(module
        .global_variables
        .iter()
        .filter(|(_, var)| var.space == naga::AddressSpace::WorkGroup)
        .map(|(_, var)| layouter[var.ty].size)
        .sum())
}

/// Checks that shader `kernel` fits the device's workgroup-memory limit, so
/// an adapter that is too small gets a clear error rather than a pipeline
/// validation failure.
pub(crate) fn check_workgroup_memory(
    ctx: &super::context::GpuContext,
    kernel: &'static str,
) -> Result<(), PrimitiveError> {
    let needed = workgroup_memory_bytes(ctx, kernel)?;
    let limit = ctx.limits.max_compute_workgroup_storage_size;
    if needed > limit {
        return Err(PrimitiveError::WorkgroupMemory {
            kernel,
            needed,
            limit,
        });
    }
    Ok(())
}
