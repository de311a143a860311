//! Memory a command will take, estimated from the scene alone before
//! anything is allocated, and compared with what the machine has, so that a
//! scene too large for the machine (a mistyped `simulation.grid_res` of
//! 4096 for 64: terabytes of grid) is refused with the field to change
//! instead of aborting the process on a failed allocation or failing deep
//! inside the GPU code.
//!
//! - [`estimate()`]: host and device bytes per part (simulation grid,
//!   particle states, splats, tile intersections, images, reference
//!   frames, runtime), each part tagged with the scene field that sets it,
//!   and the largest single buffers (checked against the adapter's binding
//!   limits), for each command that allocates ([`Workload`]).
//! - [`machine`]: what the machine has: the host's available memory, the
//!   adapter's limits and, where the platform reports it, its memory.
//! - [`kept_rollout`]: the memory a fit may spend keeping whole rollouts
//!   for its backward passes, out of what the estimate leaves.
//! - [`refusal`]: the typed refusal ([`MemoryError`](crate::memory::MemoryError)) naming the field, the
//!   bytes needed, what the machine has and the fix.

internal_mods! {
    estimate;
    kept_rollout;
    machine;
    refusal;
}

/// Byte counts as people read them (`1.5 GiB`).
pub use crate::memory::bytes::human_bytes;
pub use estimate::{estimate, MemoryEstimate, Part, PartKind, PlannedBuffer, Workload};
pub use kept_rollout::{kept_rollout_budget, KEPT_ROLLOUT_CAP_BYTES};
pub use machine::{DeviceMemory, MachineMemory};
