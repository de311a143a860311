//! Float sort keys → u32 radix keys that sort in the same order
//! (shaders/gpu/radix_sort_float_key.wgsl for the WGSL function that other
//! shaders can `#import gpu/radix_sort_float_key`, and
//! shaders/gpu/radix_sort_float_keys.wgsl for a kernel converting a buffer).
//! Used for the depth sort of splats (DESIGN.md § Gaussian splatting): sort
//! with `key_bits = 32`.

use bytemuck::{Pod, Zeroable};

use super::buffer::GpuBuffer;
use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{BindingKind, ComputeKernel};

/// Order-preserving map f32 → u32: for non-NaN `a < b`,
/// `sortable_u32_from_f32(a) < sortable_u32_from_f32(b)`. Positive floats get
/// the sign bit set, negative floats have every bit flipped. `-0.0` maps just
/// below `+0.0`; positive NaNs sort after +∞, negative NaNs before −∞ (the
/// order of [`f32::total_cmp`]). Same as the WGSL `sortable_u32_from_f32`.
pub fn sortable_u32_from_f32(value: f32) -> u32 {
    let bits = value.to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// Inverse of [`sortable_u32_from_f32`] (bit-exact).
pub fn f32_from_sortable_u32(key: u32) -> f32 {
    if key & 0x8000_0000 != 0 {
        f32::from_bits(key & 0x7fff_ffff)
    } else {
        f32::from_bits(!key)
    }
}

/// Uniforms of `gpu/radix_sort_float_keys` (16-byte aligned).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RadixSortFloatKeysUniforms {
    /// Number of floats.
    pub count: u32,
    /// Padding to 16 bytes.
    pub _pad: [u32; 3],
}

/// Buffers of one dispatch, named.
pub struct RadixSortFloatKeysBuffers<'a> {
    /// [`RadixSortFloatKeysUniforms`].
    pub uniforms: &'a GpuBuffer,
    /// `f32` sort keys (e.g. view-space depths).
    pub floats: &'a GpuBuffer,
    /// `u32` output keys.
    pub keys: &'a GpuBuffer,
}

/// The float-to-key conversion kernel.
pub struct RadixSortFloatKeys {
    kernel: ComputeKernel,
}

impl RadixSortFloatKeys {
    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        use BindingKind::*;
        Ok(Self {
            kernel: ComputeKernel::new(
                ctx,
                "gpu/radix_sort_float_keys",
                "main",
                &[Uniform, StorageRead, StorageReadWrite],
            )?,
        })
    }

    /// Records `keys[i] = sortable_u32_from_f32(floats[i])` for `count` floats.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &RadixSortFloatKeysBuffers,
        count: u32,
    ) {
        let bind_group = self
            .kernel
            .bind(ctx, &[buffers.uniforms, buffers.floats, buffers.keys]);
        self.kernel.dispatch_threads(encoder, &bind_group, count);
    }
}

#[cfg(test)]
mod tests {
    use super::{f32_from_sortable_u32, sortable_u32_from_f32};

    #[test]
    fn order_matches_total_cmp_and_round_trips() {
        let values = [
            f32::NEG_INFINITY,
            -3.0e38,
            -1.5,
            -f32::MIN_POSITIVE,
            -1.0e-45,
            -0.0,
            0.0,
            1.0e-45,
            1.0,
            2.5e20,
            f32::INFINITY,
        ];
        for pair in values.windows(2) {
            assert!(
                sortable_u32_from_f32(pair[0]) < sortable_u32_from_f32(pair[1]),
                "{} vs {}",
                pair[0],
                pair[1]
            );
        }
        for v in values {
            assert_eq!(
                f32_from_sortable_u32(sortable_u32_from_f32(v)).to_bits(),
                v.to_bits()
            );
        }
    }
}
