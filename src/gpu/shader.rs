//! WGSL sources and the shared prelude mechanism.
//!
//! Every file under `shaders/` is compiled into the binary (see build.rs).
//! A shader may start with lines `#import NAME`, where NAME is another file's
//! path under shaders/ without `.wgsl` (`#import common/math`). Imports are
//! pasted in once each, depth first, before the importing file's own text.
//!
//! One import is virtual: `#import atomic_f32` resolves to
//! `common/atomic_f32_native` (`atomic<f32>` with `atomicAdd`, needs
//! `SHADER_FLOAT32_ATOMIC`) or `common/atomic_f32_cas` (`atomic<u32>` with a
//! compare-and-swap loop, works everywhere). Both define the element type
//! `AtomicF32`. WGSL as naga implements it cannot pass storage pointers to
//! functions, so accessors are generated per buffer: a line
//! `#atomic_f32_ops NAME` emits `NAME_atomic_add(i, v)`, `NAME_atomic_load(i)`
//! and `NAME_atomic_store(i, v)` for `var<storage, read_write> NAME:
//! array<AtomicF32>`, in the selected variant. A scatter-add kernel is thus
//! written once and runs in either mode.

use super::error::GpuError;

include!(concat!(env!("OUT_DIR"), "/embedded_shaders.rs"));

/// How scatter-adds of f32 are implemented (docs/design.md § Adjoint, last paragraph).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicMode {
    /// Hardware `atomicAdd` on `atomic<f32>` (adapter feature `SHADER_FLOAT32_ATOMIC`).
    Native,
    /// Compare-and-swap loop on `atomic<u32>` holding f32 bits; works on any adapter.
    CompareSwap,
}

impl AtomicMode {
    /// Both modes, for tests that must cover each.
    pub const ALL: [AtomicMode; 2] = [AtomicMode::Native, AtomicMode::CompareSwap];

    /// The shader module the virtual `atomic_f32` import resolves to.
    pub fn module(self) -> &'static str {
        match self {
            AtomicMode::Native => "common/atomic_f32_native",
            AtomicMode::CompareSwap => "common/atomic_f32_cas",
        }
    }
}

/// Options that change how shaders are composed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShaderOptions {
    /// Scatter-add implementation.
    pub atomics: AtomicMode,
}

impl ShaderOptions {
    /// naga capabilities a module composed with these options may use.
    pub fn capabilities(&self) -> naga::valid::Capabilities {
        let mut caps = naga::valid::Capabilities::default();
        if self.atomics == AtomicMode::Native {
            caps |= naga::valid::Capabilities::SHADER_FLOAT32_ATOMIC;
        }
        caps
    }
}

/// Names of every embedded shader file.
#[cfg(feature = "reference")]
pub fn shader_names() -> impl Iterator<Item = &'static str> {
    EMBEDDED_SHADERS.iter().map(|(name, _)| *name)
}

/// Raw text of one embedded shader file.
pub fn raw_source(name: &str) -> Option<&'static str> {
    EMBEDDED_SHADERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
}

/// Expands `#import` lines, returning the full WGSL text of shader `name`.
pub fn compose(name: &str, options: &ShaderOptions) -> Result<String, GpuError> {
    let mut out = String::new();
    let mut included = Vec::new();
    let mut stack = Vec::new();
    expand(name, options, &mut out, &mut included, &mut stack)?;
    Ok(out)
}

fn expand(
    name: &str,
    options: &ShaderOptions,
    out: &mut String,
    included: &mut Vec<String>,
    stack: &mut Vec<String>,
) -> Result<(), GpuError> {
    let resolved = if name == "atomic_f32" {
        options.atomics.module()
    } else {
        name
    };
    if included.iter().any(|n| n == resolved) {
        return Ok(());
    }
    if stack.iter().any(|n| n == resolved) {
        return Err(GpuError::Shader {
            name: resolved.to_string(),
            message: format!("circular #import: {} -> {resolved}", stack.join(" -> ")),
        });
    }
    let source = raw_source(resolved).ok_or_else(|| GpuError::Shader {
        name: stack
            .last()
            .cloned()
            .unwrap_or_else(|| resolved.to_string()),
        message: format!("#import of unknown shader '{resolved}' (no shaders/{resolved}.wgsl)"),
    })?;
    stack.push(resolved.to_string());
    let mut body = String::new();
    for line in source.lines() {
        if let Some(buffer) = line.trim().strip_prefix("#atomic_f32_ops ") {
            let buffer = buffer.trim();
            if buffer.is_empty()
                || !buffer
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(GpuError::Shader {
                    name: resolved.to_string(),
                    message: format!("#atomic_f32_ops needs a buffer name, got '{buffer}'"),
                });
            }
            expand("atomic_f32", options, out, included, stack)?;
            body.push_str(&atomic_ops(buffer, options.atomics));
        } else if let Some(import) = line.trim().strip_prefix("#import ") {
            expand(import.trim(), options, out, included, stack)?;
            body.push_str("// (import ");
            body.push_str(import.trim());
            body.push_str(")\n");
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    stack.pop();
    out.push_str(&format!("// ---- shaders/{resolved}.wgsl ----\n"));
    out.push_str(&body);
    included.push(resolved.to_string());
    Ok(())
}

/// WGSL accessors for one `array<AtomicF32>` storage buffer.
fn atomic_ops(buffer: &str, mode: AtomicMode) -> String {
    match mode {
        AtomicMode::Native => format!(
            "fn {b}_atomic_add(i: u32, value: f32) {{ atomicAdd(&{b}[i], value); }}\n\
             fn {b}_atomic_load(i: u32) -> f32 {{ return atomicLoad(&{b}[i]); }}\n\
             fn {b}_atomic_store(i: u32, value: f32) {{ atomicStore(&{b}[i], value); }}\n",
            b = buffer
        ),
        AtomicMode::CompareSwap => format!(
            "fn {b}_atomic_add(i: u32, value: f32) {{\n\
             \x20   var old = atomicLoad(&{b}[i]);\n\
             \x20   loop {{\n\
             \x20       let updated = bitcast<u32>(bitcast<f32>(old) + value);\n\
             \x20       let result = atomicCompareExchangeWeak(&{b}[i], old, updated);\n\
             \x20       if result.exchanged {{ break; }}\n\
             \x20       old = result.old_value;\n\
             \x20   }}\n\
             }}\n\
             fn {b}_atomic_load(i: u32) -> f32 {{ return bitcast<f32>(atomicLoad(&{b}[i])); }}\n\
             fn {b}_atomic_store(i: u32, value: f32) {{ atomicStore(&{b}[i], bitcast<u32>(value)); }}\n",
            b = buffer
        ),
    }
}

/// Composes, parses and validates shader `name` with naga. Used both before
/// creating a pipeline (so an invalid shader is a typed error with naga's
/// diagnostic, not a driver crash) and by the device-free validation test.
pub fn parse_and_validate(
    name: &str,
    options: &ShaderOptions,
) -> Result<(String, naga::Module), GpuError> {
    let source = compose(name, options)?;
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| GpuError::Shader {
        name: name.to_string(),
        message: e.emit_to_string_with_path(&source, &format!("shaders/{name}.wgsl (composed)")),
    })?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), options.capabilities())
        .validate(&module)
        .map_err(|e| GpuError::Shader {
            name: name.to_string(),
            message: e
                .emit_to_string_with_path(&source, &format!("shaders/{name}.wgsl (composed)")),
        })?;
    Ok((source, module))
}

/// Workgroup size that entry point `entry` of `module` declares.
pub fn workgroup_size(module: &naga::Module, entry: &str) -> Option<[u32; 3]> {
    module
        .entry_points
        .iter()
        .find(|ep| ep.name == entry)
        .map(|ep| ep.workgroup_size)
}
