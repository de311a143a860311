//! The typed memory refusal ([`MemoryError`]): the scene file, the field
//! that sets the largest part, the bytes needed, what the machine has and
//! the fix. The budget's estimate ([`crate::budget`]) and the scene
//! loader's fill check ([`refuse_fill_grid`]) both refuse with it.

use std::path::{Path, PathBuf};

use super::bytes::human_bytes;

/// Which memory was short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    /// Host memory (a hardware adapter's commands).
    Host,
    /// The adapter's memory.
    Device,
    /// Host memory holding the software adapter's buffers too.
    Shared,
}

impl std::fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MemoryKind::Host => "host memory",
            MemoryKind::Device => "GPU memory",
            MemoryKind::Shared => "host memory (host + the software adapter's buffers)",
        })
    }
}

/// Why a command is refused before it allocates.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The estimate exceeds what the machine has.
    #[error("{}: {command} needs about {} of {kind} but the machine has {} ({origin}); the largest part is the {part} ({}), set by `{field}` = {value}; fix: {fix}", crate::io::shown::shown(path), human_bytes(*needed), human_bytes(*available), human_bytes(*part_bytes))]
    TooLarge {
        /// The scene file.
        path: PathBuf,
        /// The command.
        command: &'static str,
        /// Which memory.
        kind: MemoryKind,
        /// Bytes estimated.
        needed: u64,
        /// Bytes available.
        available: u64,
        /// Where `available` comes from.
        origin: String,
        /// The largest part's name.
        part: &'static str,
        /// Its bytes.
        part_bytes: u64,
        /// The field that sets it.
        field: String,
        /// Its value.
        value: String,
        /// How to fix it.
        fix: String,
    },
    /// One buffer exceeds an adapter limit.
    #[error("{}: {command}: buffer '{buffer}' would take {} but the adapter '{adapter}' allows {} ({limit_name}); it is set by `{field}` = {value}; fix: {fix}", crate::io::shown::shown(path), human_bytes(*size), human_bytes(*limit))]
    OverLimit {
        /// The scene file.
        path: PathBuf,
        /// The command.
        command: &'static str,
        /// The buffer's label.
        buffer: &'static str,
        /// Its bytes.
        size: u64,
        /// The adapter.
        adapter: String,
        /// The wgpu limit.
        limit_name: &'static str,
        /// Its value.
        limit: u64,
        /// The field that sets it.
        field: String,
        /// Its value.
        value: String,
        /// How to fix it.
        fix: String,
    },
}

impl MemoryError {
    /// The scene field at fault.
    pub fn field(&self) -> &str {
        match self {
            MemoryError::TooLarge { field, .. } | MemoryError::OverLimit { field, .. } => field,
        }
    }
}

/// Refuses the interior fill's dense voxels (`drivers.fill`) when they
/// exceed the host's available memory: run by the scene loader before it
/// allocates them, so a mistyped `simulation.grid_res` is refused naming
/// the field instead of aborting the process. `needed` is the fill's
/// host bytes at `grid_res` (the voxel rules compute it; this module sits
/// below them).
pub fn refuse_fill_grid(path: &Path, grid_res: u32, needed: u64) -> Result<(), Box<MemoryError>> {
    let (available, source) = super::host::host_available();
    if needed > available {
        return Err(Box::new(MemoryError::TooLarge {
            path: path.to_path_buf(),
            command: "loading the scene",
            kind: MemoryKind::Host,
            needed,
            available,
            origin: source,
            part: "interior fill voxels",
            part_bytes: needed,
            field: "simulation.grid_res".into(),
            value: grid_res.to_string(),
            fix: "lower `simulation.grid_res` (the fill takes ~33 bytes per cell) or set `drivers.fill = false`".into(),
        }));
    }
    Ok(())
}
