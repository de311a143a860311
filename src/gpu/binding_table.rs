//! The binding table of a kernel: one row per buffer of bind group 0, naming
//! the WGSL variable it binds to, its `@binding` index, its kind and access.
//!
//! Why a table: a wrapper used to list its binding kinds in one place and
//! its buffers, by position, in another, beside the WGSL that declares both
//! a third time. wgpu rejects a kind mismatch, but two storage buffers of
//! the same kind swapped bind silently. The table is the one statement of a
//! kernel's bindings: [`super::ComputeKernel`] builds the bind group layout
//! from it, call sites bind buffers by name through it
//! ([`named_buffers!`]), and a device-free test (tests/cpu/kernel_bindings.rs)
//! reflects every entry point with naga and checks every row: group 0,
//! binding, kind, access and the variable's name.

use super::buffer::GpuBuffer;

/// Kind and access of one binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// `var<uniform>` (read only).
    Uniform,
    /// `var<storage, read>`.
    StorageRead,
    /// `var<storage, read_write>`.
    StorageReadWrite,
}

impl BindingKind {
    /// The buffer binding type of a bind group layout entry.
    pub fn buffer_binding_type(self) -> wgpu::BufferBindingType {
        match self {
            BindingKind::Uniform => wgpu::BufferBindingType::Uniform,
            BindingKind::StorageRead => wgpu::BufferBindingType::Storage { read_only: true },
            BindingKind::StorageReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
        }
    }
}

/// One row of a binding table: WGSL variable `name` at `@group(0)
/// @binding(binding)`, of `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// Name of the WGSL variable (and, unless the wrapper says otherwise in
    /// [`named_buffers!`], of the Rust field holding its buffer).
    pub name: &'static str,
    /// `@binding` index in group 0.
    pub binding: u32,
    /// Kind and access.
    pub kind: BindingKind,
}

impl Binding {
    /// A `var<uniform>`.
    pub const fn uniform(name: &'static str, binding: u32) -> Self {
        Self {
            name,
            binding,
            kind: BindingKind::Uniform,
        }
    }

    /// A `var<storage, read>`.
    pub const fn read(name: &'static str, binding: u32) -> Self {
        Self {
            name,
            binding,
            kind: BindingKind::StorageRead,
        }
    }

    /// A `var<storage, read_write>`.
    pub const fn read_write(name: &'static str, binding: u32) -> Self {
        Self {
            name,
            binding,
            kind: BindingKind::StorageReadWrite,
        }
    }
}

/// One kernel: entry point `entry` of shader `shader` (its path under
/// shaders/ without `.wgsl`), whose group 0 holds `bindings`.
#[derive(Clone, Copy, Debug)]
pub struct KernelSpec {
    /// Shader name, e.g. `"mpm/p2g"`.
    pub shader: &'static str,
    /// Entry point.
    pub entry: &'static str,
    /// Bindings of group 0: every one the entry point uses (rows the entry
    /// point leaves unused are allowed, as a shared layout needs them).
    pub bindings: &'static [Binding],
}

/// The rows of `a`, then those of `b`, as one table of `N` rows: for an
/// entry point that binds what another binds and more, or for rows that a
/// WGSL file several kernels import declares once.
pub const fn concat_bindings<const N: usize>(a: &[Binding], b: &[Binding]) -> [Binding; N] {
    assert!(
        a.len() + b.len() == N,
        "concat_bindings: N is not the rows' count"
    );
    let mut out = [Binding::uniform("", 0); N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[a.len() + j] = b[j];
        j += 1;
    }
    out
}

/// A buffer bound by the name of the WGSL variable it binds to.
pub type NamedBuffer<'a> = (&'static str, &'a GpuBuffer);

/// The binding of `name` in `bindings`, if it has one.
pub fn binding_of(bindings: &[Binding], name: &str) -> Option<u32> {
    bindings.iter().find(|b| b.name == name).map(|b| b.binding)
}

/// `[(name, buffer)]` for `owner.field` items, each named after its field,
/// or after the WGSL variable given with `=> "wgsl_name"` where the two
/// differ: `named_buffers![b.uniforms => "u", b.means, &plan.offsets]`.
/// Deriving the name from the field leaves no position to get wrong.
macro_rules! named_buffers {
    (@acc [$($out:tt)*]) => { [$($out)*] };
    (@acc [$($out:tt)*] & $owner:ident . $field:ident => $wgsl:literal $(, $($rest:tt)*)?) => {
        $crate::gpu::binding_table::named_buffers!(@acc [$($out)* ($wgsl, &$owner.$field),] $($($rest)*)?)
    };
    (@acc [$($out:tt)*] & $owner:ident . $field:ident $(, $($rest:tt)*)?) => {
        $crate::gpu::binding_table::named_buffers!(@acc [$($out)* (stringify!($field), &$owner.$field),] $($($rest)*)?)
    };
    (@acc [$($out:tt)*] $owner:ident . $field:ident => $wgsl:literal $(, $($rest:tt)*)?) => {
        $crate::gpu::binding_table::named_buffers!(@acc [$($out)* ($wgsl, $owner.$field),] $($($rest)*)?)
    };
    (@acc [$($out:tt)*] $owner:ident . $field:ident $(, $($rest:tt)*)?) => {
        $crate::gpu::binding_table::named_buffers!(@acc [$($out)* (stringify!($field), $owner.$field),] $($($rest)*)?)
    };
    ($($items:tt)*) => {
        $crate::gpu::binding_table::named_buffers!(@acc [] $($items)*)
    };
}
pub(crate) use named_buffers;
