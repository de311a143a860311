//! The byte layout of a `#[repr(C)]` Rust struct that mirrors a WGSL struct
//! (a kernel's uniforms, or the records of a storage buffer), field by
//! field, so that a device-free test (tests/cpu/uniform_layouts.rs) can
//! compare it with the layout naga computes for the WGSL declaration:
//! names and order, offsets and sizes. A size check alone passes two
//! fields of one type swapped, or a field moved across padding.
//!
//! Only that test reads the layouts, but the `wgsl_mirror!` impls compile
//! in every build: a field added to a struct and not to its mirror fails
//! the build, not just the test. Hence no dead-code warnings here when the
//! tests' `reference` feature is off.
#![cfg_attr(not(feature = "reference"), allow(dead_code))]

/// One field of a mirrored struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    /// The field's name (the WGSL member's, padding aside).
    pub name: &'static str,
    /// Byte offset in the struct.
    pub offset: usize,
    /// Bytes.
    pub size: usize,
}

impl FieldLayout {
    /// Padding (`_pad`, `_pad0`, …) holds no value: only the bytes it
    /// covers matter, and Rust may spell as one array what WGSL declares as
    /// several scalars.
    pub fn is_padding(&self) -> bool {
        self.name.starts_with("_pad")
    }
}

/// A Rust struct and the WGSL struct it is uploaded to.
#[derive(Clone, Debug)]
pub struct MirrorLayout {
    /// The Rust type's name.
    pub rust_name: &'static str,
    /// The WGSL struct's name.
    pub wgsl_name: &'static str,
    /// Shaders (names under shaders/) whose composed source declares it.
    pub shaders: &'static [&'static str],
    /// `size_of` the Rust type.
    pub size: usize,
    /// Every field, in declaration order.
    pub fields: Vec<FieldLayout>,
}

/// A `#[repr(C)]` type uploaded as a WGSL struct.
pub trait WgslMirror {
    /// Its layout and the WGSL struct it mirrors.
    fn mirror_layout() -> MirrorLayout;
}

/// Implements [`WgslMirror`] for a `Pod` struct:
/// `wgsl_mirror!(MpmUniforms => "MpmParams" in ["mpm/params"] { grid_res, … })`.
/// The field list must name every field: it is also a destructuring
/// pattern, so a field added to the struct and not here does not compile.
macro_rules! wgsl_mirror {
    ($ty:ident => $wgsl:literal in [$($shader:literal),+ $(,)?] { $($field:ident),+ $(,)? }) => {
        impl $crate::gpu::wgsl_layout::WgslMirror for $ty {
            fn mirror_layout() -> $crate::gpu::wgsl_layout::MirrorLayout {
                let value = <$ty as bytemuck::Zeroable>::zeroed();
                let $ty { $($field: _),+ } = value;
                $crate::gpu::wgsl_layout::MirrorLayout {
                    rust_name: stringify!($ty),
                    wgsl_name: $wgsl,
                    shaders: &[$($shader),+],
                    size: std::mem::size_of::<$ty>(),
                    fields: vec![$($crate::gpu::wgsl_layout::FieldLayout {
                        name: stringify!($field),
                        offset: std::mem::offset_of!($ty, $field),
                        size: std::mem::size_of_val(&value.$field),
                    }),+],
                }
            }
        }
    };
}
pub(crate) use wgsl_mirror;
