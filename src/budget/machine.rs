//! What the machine has: the host's available memory and the adapter's
//! limits and memory, read before anything is allocated.
//!
//! - Host: on Linux `MemAvailable` of `/proc/meminfo` (what can be
//!   allocated without swapping). Elsewhere it is not read: physfit assumes
//!   [`ASSUMED_HOST_BYTES`](crate::memory::host::ASSUMED_HOST_BYTES) (8
//!   GiB, a modest laptop), and says so in every figure it prints
//!   (`source`). `PHYSFIT_HOST_MEMORY_MIB` overrides both.
//! - Device: the adapter's `max_buffer_size` and
//!   `max_storage_buffer_binding_size` (wgpu's, exact), and its memory: on
//!   NVIDIA, `nvidia-smi --query-gpu=memory.total,memory.used` (total −
//!   used of the first GPU) when the tool is present; otherwise (wgpu has
//!   no portable memory query) an integrated GPU is assumed to share the
//!   host's available memory and any other hardware adapter to have
//!   [`ASSUMED_DEVICE_BYTES`] (4 GiB, the smallest discrete GPU physfit's
//!   demo is meant for). `PHYSFIT_DEVICE_MEMORY_MIB` overrides it.
//! - A software adapter (lavapipe, device type `Cpu`) keeps its buffers in
//!   host memory: its device memory IS the host's, so host and device needs
//!   are added and compared with the host's available memory once
//!   ([`DeviceMemory::shared_with_host`]), never counted twice.

use std::process::Command;

use crate::memory::host::env_mib;
use crate::memory::host::host_available;

/// Device memory assumed for a hardware adapter whose memory is not reported.
pub const ASSUMED_DEVICE_BYTES: u64 = 4 << 30;

/// The adapter's side of [`MachineMemory`].
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceMemory {
    /// Adapter name.
    pub name: String,
    /// A software adapter: its buffers live in host memory.
    pub shared_with_host: bool,
    /// Bytes a command may allocate on it (`None` when shared with the host:
    /// [`MachineMemory::host_available`] holds them).
    pub available: Option<u64>,
    /// Where `available` comes from (a tool, an assumption).
    pub source: String,
    /// `max_buffer_size`.
    pub max_buffer_size: u64,
    /// `max_storage_buffer_binding_size`.
    pub max_storage_binding: u64,
}

/// Host and device memory, as read once per command.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineMemory {
    /// Bytes the host can still allocate.
    pub host_available: u64,
    /// Where it comes from.
    pub host_source: String,
    /// The adapter, when there is one.
    pub device: Option<DeviceMemory>,
}

/// Free bytes of the first GPU in `nvidia-smi --query-gpu=memory.total,
/// memory.used --format=csv,noheader,nounits` output (MiB: total − used).
pub fn parse_nvidia_smi(text: &str) -> Option<u64> {
    let line = text.lines().next()?;
    let mut fields = line.split(',').map(|f| f.trim().parse::<u64>().ok());
    let total = fields.next()??;
    let used = fields.next()??;
    Some(total.saturating_sub(used) << 20)
}

/// PCI vendor id of NVIDIA.
const NVIDIA: u32 = 0x10de;

fn nvidia_free() -> Option<u64> {
    let out = Command::new("nvidia-smi")
        .args([
            "--query-gpu=memory.total,memory.used",
            "--format=csv,noheader,nounits",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout))
}

impl DeviceMemory {
    /// The memory of an adapter described by `info` and `limits` (module
    /// doc); `host_available` is what an integrated GPU is assumed to share.
    pub fn of_adapter(
        info: &wgpu::AdapterInfo,
        limits: &wgpu::Limits,
        host_available: u64,
    ) -> Self {
        let shared_with_host = info.device_type == wgpu::DeviceType::Cpu;
        let (available, source) = if shared_with_host {
            (
                None,
                "a software adapter: its buffers are host memory".to_string(),
            )
        } else if let Some(bytes) = env_mib("PHYSFIT_DEVICE_MEMORY_MIB") {
            (Some(bytes), "PHYSFIT_DEVICE_MEMORY_MIB".to_string())
        } else if let Some(bytes) = (info.vendor == NVIDIA).then(nvidia_free).flatten() {
            (
                Some(bytes),
                "nvidia-smi memory.total − memory.used".to_string(),
            )
        } else if info.device_type == wgpu::DeviceType::IntegratedGpu {
            (
                Some(host_available),
                "assumed: an integrated GPU shares the host's available memory".to_string(),
            )
        } else {
            (
                Some(ASSUMED_DEVICE_BYTES),
                "assumed: the adapter reports no memory size (set PHYSFIT_DEVICE_MEMORY_MIB)"
                    .to_string(),
            )
        };
        Self {
            name: info.name.clone(),
            shared_with_host,
            available,
            source,
            max_buffer_size: limits.max_buffer_size,
            max_storage_binding: limits.max_storage_buffer_binding_size,
        }
    }
}

impl MachineMemory {
    /// The host alone, when no adapter is found: counted as the software
    /// adapter physfit would fall back to once a driver is installed (the
    /// fix [`crate::gpu::GpuError::NoAdapter`] gives is Mesa's lavapipe),
    /// so device needs are added to host needs; its limits are unknown
    /// (not checked).
    pub fn host_only() -> Self {
        let (host_available, host_source) = host_available();
        Self {
            host_available,
            host_source,
            device: Some(DeviceMemory {
                name: "no adapter found (counted as a software adapter)".into(),
                shared_with_host: true,
                available: None,
                source: "no adapter: a software adapter's buffers are host memory".into(),
                max_buffer_size: u64::MAX,
                max_storage_binding: u64::MAX,
            }),
        }
    }

    /// The host and the adapter of a context (created, nothing allocated).
    pub fn of_context(ctx: &crate::gpu::GpuContext) -> Self {
        Self::of_adapter(&ctx.adapter_info, &ctx.limits)
    }

    /// The host and an adapter given by its info and limits.
    pub fn of_adapter(info: &wgpu::AdapterInfo, limits: &wgpu::Limits) -> Self {
        let (host_available, host_source) = host_available();
        Self {
            host_available,
            host_source,
            device: Some(DeviceMemory::of_adapter(info, limits, host_available)),
        }
    }

    /// The host and the adapter a command would use ([`crate::gpu::context::select_adapter`]),
    /// without creating a device: what `physfit check` compares with. No
    /// adapter: the host only.
    pub fn probe() -> Self {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        desc.backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
        let instance = wgpu::Instance::new(desc);
        match crate::gpu::context::select_adapter(&instance) {
            Ok(adapter) => Self::of_adapter(&adapter.get_info(), &adapter.limits()),
            Err(_) => Self::host_only(),
        }
    }
}
