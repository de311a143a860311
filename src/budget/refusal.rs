//! The refusal: an estimate ([`super::MemoryEstimate`]) over what the
//! machine has ([`super::MachineMemory`]), or one of its buffers over an
//! adapter limit, becomes a [`MemoryError`] naming the scene file, the
//! field that sets the largest part, the bytes needed, what the machine
//! has and the fix; the command exits non-zero before allocating anything.

use std::path::Path;

use super::estimate::{MemoryEstimate, Part};
use super::machine::MachineMemory;
use crate::memory::bytes::human_bytes;
use crate::memory::refusal::{MemoryError, MemoryKind};

fn too_large(
    path: &Path,
    estimate: &MemoryEstimate,
    kind: MemoryKind,
    needed: u64,
    available: u64,
    source: &str,
    parts: &[Part],
) -> MemoryError {
    let top = MemoryEstimate::largest(parts);
    MemoryError::TooLarge {
        path: path.to_path_buf(),
        command: estimate.command,
        kind,
        needed,
        available,
        origin: source.to_string(),
        part: top.name,
        part_bytes: top.bytes,
        field: top.field.clone(),
        value: top.value.clone(),
        fix: top.fix.clone(),
    }
}

impl MemoryEstimate {
    /// Refuses the command when a buffer exceeds the adapter's limits or
    /// the estimate exceeds the machine's memory (host and device; on a
    /// software adapter both together against the host: module doc of
    /// [`super::machine`]).
    pub fn check(&self, path: &Path, machine: &MachineMemory) -> Result<(), Box<MemoryError>> {
        if let Some(device) = &machine.device {
            for b in &self.buffers {
                let limits = [
                    ("max_buffer_size", device.max_buffer_size, true),
                    (
                        "max_storage_buffer_binding_size",
                        device.max_storage_binding,
                        b.storage,
                    ),
                ];
                for (limit_name, limit, applies) in limits {
                    if applies && b.bytes > limit {
                        let part = self.part(b.kind).expect("a buffer belongs to a part");
                        return Err(Box::new(MemoryError::OverLimit {
                            path: path.to_path_buf(),
                            command: self.command,
                            buffer: b.label,
                            size: b.bytes,
                            adapter: device.name.clone(),
                            limit_name,
                            limit,
                            field: part.field.clone(),
                            value: part.value.clone(),
                            fix: part.fix.clone(),
                        }));
                    }
                }
            }
        }
        let host = self.host_bytes();
        let device_bytes = self.device_bytes();
        match &machine.device {
            Some(d) if d.shared_with_host => {
                let needed = host.saturating_add(device_bytes);
                if needed > machine.host_available {
                    let parts: Vec<Part> = self.device.iter().chain(&self.host).cloned().collect();
                    return Err(Box::new(too_large(
                        path,
                        self,
                        MemoryKind::Shared,
                        needed,
                        machine.host_available,
                        &machine.host_source,
                        &parts,
                    )));
                }
            }
            device => {
                if host > machine.host_available {
                    return Err(Box::new(too_large(
                        path,
                        self,
                        MemoryKind::Host,
                        host,
                        machine.host_available,
                        &machine.host_source,
                        &self.host,
                    )));
                }
                if let Some((available, source)) = device
                    .as_ref()
                    .and_then(|d| Some((d.available?, &d.source)))
                {
                    if device_bytes > available {
                        return Err(Box::new(too_large(
                            path,
                            self,
                            MemoryKind::Device,
                            device_bytes,
                            available,
                            source,
                            &self.device,
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The bytes compared with the host's memory on `machine`: the host
    /// part, plus the device part on a software adapter.
    pub fn host_needed(&self, machine: &MachineMemory) -> u64 {
        match &machine.device {
            Some(d) if d.shared_with_host => self.host_bytes() + self.device_bytes(),
            _ => self.host_bytes(),
        }
    }

    /// The `physfit check` line: [`MemoryEstimate::summary`] and what the
    /// machine has.
    pub fn against(&self, machine: &MachineMemory) -> String {
        let device = match &machine.device {
            None => "no adapter: device memory not compared".to_string(),
            Some(d) if d.shared_with_host => format!(
                "'{}' is a software adapter: its {} are host memory, {} in all",
                d.name,
                human_bytes(self.device_bytes()),
                human_bytes(self.host_needed(machine))
            ),
            Some(d) => format!(
                "'{}' has {} ({})",
                d.name,
                d.available.map(human_bytes).unwrap_or_else(|| "?".into()),
                d.source
            ),
        };
        format!(
            "{}; host has {} ({}); {device}",
            self.summary(),
            human_bytes(machine.host_available),
            machine.host_source
        )
    }
}
