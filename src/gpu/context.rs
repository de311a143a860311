//! Adapter selection, device creation and GPU error capture.
//!
//! Selection order: `WGPU_BACKEND` limits the backends and `WGPU_ADAPTER_NAME`
//! picks an adapter by name substring (wgpu's own `*_from_env` conventions);
//! otherwise a hardware adapter is preferred (discrete, then integrated, then
//! virtual) and a software one (lavapipe, WARP, SwiftShader) is the fallback,
//! announced in the log because it is orders of magnitude slower.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::error::GpuError;
use super::memory::MemoryTracker;
use super::shader::{AtomicMode, ShaderOptions};
use super::traffic::TrafficCounter;

/// What physfit needs to know about an adapter's abilities.
#[derive(Clone, Debug)]
pub struct GpuCaps {
    /// `SHADER_FLOAT32_ATOMIC` is available (and requested).
    pub float_atomics: bool,
    /// Subgroup operations are available (reported, not required).
    pub subgroups: bool,
    /// Smallest subgroup size the adapter may use.
    pub min_subgroup_size: u32,
    /// Largest subgroup size the adapter may use.
    pub max_subgroup_size: u32,
}

/// Choices made when creating a context.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Use the compare-and-swap scatter-add even where float atomics exist
    /// (also forced by the environment variable `PHYSFIT_ATOMICS=cas`).
    pub force_cas_atomics: bool,
}

/// A device, its queue and everything physfit derives from the adapter.
pub struct GpuContext {
    /// The logical device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// Adapter name, backend, driver.
    pub adapter_info: wgpu::AdapterInfo,
    /// Limits the device was created with.
    pub limits: wgpu::Limits,
    /// Feature summary.
    pub caps: GpuCaps,
    /// How shaders are composed for this device.
    pub shader_options: ShaderOptions,
    /// Bytes allocated through [`GpuContext::create_buffer`] and their peak.
    pub memory: Arc<MemoryTracker>,
    /// Submissions and readbacks made through the context
    /// ([`super::traffic`]).
    pub traffic: Arc<TrafficCounter>,
    errors: Arc<Mutex<Vec<String>>>,
    lost: Arc<Mutex<Option<String>>>,
}

fn type_rank(t: wgpu::DeviceType) -> u32 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

fn backend_rank(b: wgpu::Backend) -> u32 {
    match b {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        _ => 1,
    }
}

fn can_compute(adapter: &wgpu::Adapter) -> bool {
    adapter
        .get_downlevel_capabilities()
        .flags
        .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
}

/// Backends to search: `WGPU_BACKEND` if set, else the primary native ones
/// (Vulkan, Metal, DX12). OpenGL is opt-in (`WGPU_BACKEND=gl`): its compute
/// support is partial, and probing it prints EGL noise on headless machines.
fn default_backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY)
}

/// Whether this process has warned that it runs on a software adapter.
static SOFTWARE_ANNOUNCED: AtomicBool = AtomicBool::new(false);

/// Picks an adapter according to the module docs.
pub fn select_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter, GpuError> {
    let backends = default_backends();
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));
    let listing = || {
        adapters
            .iter()
            .map(|a| {
                let i = a.get_info();
                format!("'{}' ({:?}, {:?})", i.name, i.backend, i.device_type)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Ok(wanted) = std::env::var("WGPU_ADAPTER_NAME") {
        let wanted_lc = wanted.to_lowercase();
        let found = adapters
            .iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&wanted_lc));
        return match found {
            Some(a) => Ok(a.clone()),
            None => Err(GpuError::NoAdapter {
                detail: format!(
                    " matching WGPU_ADAPTER_NAME='{wanted}' (adapters present: {})",
                    if adapters.is_empty() {
                        "none".to_string()
                    } else {
                        listing()
                    }
                ),
            }),
        };
    }
    let mut usable: Vec<&wgpu::Adapter> = adapters.iter().filter(|a| can_compute(a)).collect();
    usable.sort_by_key(|a| {
        let i = a.get_info();
        (type_rank(i.device_type), backend_rank(i.backend))
    });
    match usable.first() {
        Some(a) => {
            let info = a.get_info();
            // Said once per process: a command may select twice (the
            // memory check probes the adapter before the context exists).
            if info.device_type == wgpu::DeviceType::Cpu
                && !SOFTWARE_ANNOUNCED.swap(true, Ordering::Relaxed)
            {
                log::warn!(
                    "no hardware GPU found; falling back to the software adapter '{}' ({:?}). \
                     It is correct but slow: use it for tests and small scenes.",
                    info.name,
                    info.backend
                );
            }
            Ok((*a).clone())
        }
        None => Err(GpuError::NoAdapter {
            detail: if adapters.is_empty() {
                match std::env::var("WGPU_BACKEND") {
                    Ok(b) => format!(" for WGPU_BACKEND='{b}'"),
                    Err(_) => String::new(),
                }
            } else {
                format!(" with compute shaders (present: {})", listing())
            },
        }),
    }
}

/// Limits physfit asks for: wgpu's defaults, raised to the adapter's own
/// values for the few that bound scene size (storage binding and buffer size,
/// storage buffers per stage for the adjoint kernels, workgroup memory).
fn required_limits(adapter: &wgpu::Limits) -> wgpu::Limits {
    let base = wgpu::Limits::default();
    wgpu::Limits {
        max_storage_buffer_binding_size: adapter.max_storage_buffer_binding_size,
        max_buffer_size: adapter.max_buffer_size,
        max_storage_buffers_per_shader_stage: adapter.max_storage_buffers_per_shader_stage,
        max_compute_workgroup_storage_size: adapter.max_compute_workgroup_storage_size,
        max_compute_invocations_per_workgroup: base
            .max_compute_invocations_per_workgroup
            .min(adapter.max_compute_invocations_per_workgroup),
        max_compute_workgroup_size_x: base
            .max_compute_workgroup_size_x
            .min(adapter.max_compute_workgroup_size_x),
        max_compute_workgroup_size_y: base
            .max_compute_workgroup_size_y
            .min(adapter.max_compute_workgroup_size_y),
        max_compute_workgroups_per_dimension: adapter.max_compute_workgroups_per_dimension,
        ..base.using_resolution(adapter.clone())
    }
}

impl GpuContext {
    /// Creates a context on the adapter chosen by [`select_adapter`].
    pub fn new(options: &GpuOptions) -> Result<Self, GpuError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        desc.backends = default_backends();
        let instance = wgpu::Instance::new(desc);
        let adapter = select_adapter(&instance)?;
        Self::from_adapter(&adapter, options)
    }

    /// Creates a context on a given adapter.
    pub fn from_adapter(adapter: &wgpu::Adapter, options: &GpuOptions) -> Result<Self, GpuError> {
        let info = adapter.get_info();
        let adapter_features = adapter.features();
        let adapter_limits = adapter.limits();
        let float_atomics = adapter_features.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC);
        let force_cas = options.force_cas_atomics
            || std::env::var("PHYSFIT_ATOMICS").is_ok_and(|v| v.eq_ignore_ascii_case("cas"));
        let use_native = float_atomics && !force_cas;
        let mut features = wgpu::Features::empty();
        if use_native {
            features |= wgpu::Features::SHADER_FLOAT32_ATOMIC;
        }
        let limits = required_limits(&adapter_limits);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("physfit device"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|error| GpuError::RequestDevice {
            adapter: info.name.clone(),
            error,
        })?;

        let errors = Arc::new(Mutex::new(Vec::new()));
        let lost = Arc::new(Mutex::new(None));
        {
            let errors = errors.clone();
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                log::error!("uncaptured GPU error: {e}");
                errors.lock().unwrap().push(e.to_string());
            }));
        }
        {
            let lost = lost.clone();
            device.set_device_lost_callback(move |reason, message| {
                if reason != wgpu::DeviceLostReason::Destroyed {
                    log::error!("GPU device lost ({reason:?}): {message}");
                    *lost.lock().unwrap() = Some(format!("{reason:?}: {message}"));
                }
            });
        }
        log::info!(
            "GPU: '{}' ({:?}, {:?}), driver '{} {}', float atomics: {}",
            info.name,
            info.backend,
            info.device_type,
            info.driver,
            info.driver_info,
            if use_native {
                "native"
            } else {
                "compare-and-swap"
            }
        );
        let (min_subgroup_size, max_subgroup_size) =
            (info.subgroup_min_size, info.subgroup_max_size);
        Ok(Self {
            device,
            queue,
            adapter_info: info,
            limits,
            caps: GpuCaps {
                float_atomics,
                subgroups: adapter_features.contains(wgpu::Features::SUBGROUP),
                min_subgroup_size,
                max_subgroup_size,
            },
            shader_options: ShaderOptions {
                atomics: if use_native {
                    AtomicMode::Native
                } else {
                    AtomicMode::CompareSwap
                },
            },
            memory: Arc::new(MemoryTracker::default()),
            traffic: Arc::new(TrafficCounter::default()),
            errors,
            lost,
        })
    }

    /// Returns the first asynchronous GPU error (uncaptured error or lost
    /// device) seen so far, clearing it. Call after each submission whose
    /// result matters, so a failed dispatch is never read back as data.
    pub fn check(&self) -> Result<(), GpuError> {
        if let Some(msg) = self.lost.lock().unwrap().clone() {
            return Err(GpuError::DeviceLost(msg));
        }
        let mut errors = self.errors.lock().unwrap();
        if errors.is_empty() {
            Ok(())
        } else {
            let all = errors.join("\n");
            errors.clear();
            Err(GpuError::Uncaptured(all))
        }
    }

    /// Waits for all submitted work, then reports any GPU error.
    pub fn wait(&self) -> Result<(), GpuError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::DeviceLost(e.to_string()))?;
        self.check()
    }

    /// True when running on a software rasterizer (lavapipe and friends).
    pub fn is_software(&self) -> bool {
        self.adapter_info.device_type == wgpu::DeviceType::Cpu
    }
}
