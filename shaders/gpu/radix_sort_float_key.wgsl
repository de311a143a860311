// Order-preserving map from f32 to u32 for radix sorting by float keys (e.g.
// splat depth): for any non-NaN a < b, sortable(a) < sortable(b) as u32.
// Positive floats get the sign bit set; negative floats have all bits
// flipped (their magnitude order reverses). -0.0 maps just below +0.0;
// positive NaNs sort after +inf, negative NaNs before -inf.
// Rust twin: physfit::gpu::radix_sort_float_keys::sortable_u32_from_f32.
// Import with `#import gpu/radix_sort_float_key`.

fn sortable_u32_from_f32(value: f32) -> u32 {
    let bits = bitcast<u32>(value);
    if (bits & 0x80000000u) != 0u {
        return ~bits;
    }
    return bits | 0x80000000u;
}

fn f32_from_sortable_u32(key: u32) -> f32 {
    if (key & 0x80000000u) != 0u {
        return bitcast<f32>(key & 0x7fffffffu);
    }
    return bitcast<f32>(~key);
}
