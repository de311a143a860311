//! One pass of the radix sort ([`super::radix_sort`]): its tile size and
//! digit width, and the uniforms the histogram and scatter kernels share.
//! A file of its own so that both kernels and the sort that drives them
//! read it without importing one another.

use super::wgsl_layout::wgsl_mirror;
use bytemuck::{Pod, Zeroable};

/// Keys handled by one workgroup (`TILE_SIZE` in shaders/gpu/radix_sort_tile.wgsl).
pub const RADIX_SORT_TILE_SIZE: u32 = 2048;
/// Bits sorted per pass (`RADIX_BITS` in the WGSL).
pub const RADIX_SORT_DIGIT_BITS: u32 = 4;
/// Distinct digits per pass.
pub(crate) const RADIX: u32 = 1 << RADIX_SORT_DIGIT_BITS;

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

wgsl_mirror!(RadixPassUniforms => "RadixPassUniforms" in ["gpu/radix_sort_tile"] {
    count,
    shift,
    digit_mask,
    num_tiles,
});

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
