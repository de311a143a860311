//! The memory a fit may spend keeping whole rollouts, so that its
//! full-flow backward passes replay nothing (docs/design.md § Adjoint,
//! Memory): every substep's state and grid of every frame of an
//! evaluation, about 1.9 MB a substep on the fox at grid 32 (564 MB for a
//! velocity stage of 3 frames of 99 substeps, 2.3 GB for the error bars'
//! 12). It is memory the fit does not need, only time it saves (the
//! replay is a second forward run inside the backward), so it comes out
//! of what the machine has left after the fit's own estimate: half of
//! that, at most [`KEPT_ROLLOUT_CAP_BYTES`]. An evaluation whose frames do
//! not fit it keeps checkpoints instead and replays.

use super::estimate::MemoryEstimate;
use super::machine::MachineMemory;

/// The most a fit keeps of whole rollouts, whatever the machine has.
pub const KEPT_ROLLOUT_CAP_BYTES: u64 = 4 << 30;

/// Bytes a fit estimated at `estimate` may keep of whole rollouts on
/// `machine` (module doc): half of what is left after the estimate (the
/// device's memory as [`MachineMemory`] gives it, an assumed size where the
/// adapter reports none, or the host's for an adapter that shares it), at
/// most [`KEPT_ROLLOUT_CAP_BYTES`]; 0 without a figure for the device.
pub fn kept_rollout_budget(machine: &MachineMemory, estimate: &MemoryEstimate) -> u64 {
    let left = match &machine.device {
        Some(device) if !device.shared_with_host => device
            .available
            .unwrap_or(0)
            .saturating_sub(estimate.device_bytes()),
        _ => machine
            .host_available
            .saturating_sub(estimate.host_bytes() + estimate.device_bytes()),
    };
    (left / 2).min(KEPT_ROLLOUT_CAP_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::DeviceMemory;

    fn estimate(device: u64, host: u64) -> MemoryEstimate {
        let part = |bytes| crate::budget::Part {
            kind: crate::budget::PartKind::Runtime,
            name: "test",
            bytes,
            field: String::new(),
            value: String::new(),
            fix: String::new(),
        };
        MemoryEstimate {
            command: "physfit fit",
            host: vec![part(host)],
            device: vec![part(device)],
            buffers: Vec::new(),
            kept_rollout: 0,
        }
    }

    fn machine(host: u64, device: Option<u64>, shared: bool) -> MachineMemory {
        MachineMemory {
            host_available: host,
            host_source: "test".into(),
            device: Some(DeviceMemory {
                name: "test".into(),
                shared_with_host: shared,
                available: device,
                source: "test".into(),
                max_buffer_size: u64::MAX,
                max_storage_binding: u64::MAX,
            }),
        }
    }

    #[test]
    fn half_of_what_the_estimate_leaves_capped() {
        let gib = 1u64 << 30;
        // A discrete GPU: its own memory counts, not the host's.
        let fit = estimate(2 * gib, 64 * gib);
        assert_eq!(kept_rollout_budget(&machine(0, Some(6 * gib), false), &fit), 2 * gib);
        // A software adapter: host and device needs come out of the host's.
        assert_eq!(
            kept_rollout_budget(&machine(8 * gib, None, true), &estimate(gib, gib)),
            3 * gib
        );
        // Plenty left: the cap.
        assert_eq!(
            kept_rollout_budget(&machine(0, Some(128 * gib), false), &fit),
            KEPT_ROLLOUT_CAP_BYTES
        );
        // Nothing left, or nothing known: nothing kept.
        assert_eq!(kept_rollout_budget(&machine(0, Some(gib), false), &fit), 0);
        assert_eq!(kept_rollout_budget(&machine(0, None, false), &fit), 0);
    }
}
