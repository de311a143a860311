//! Typed GPU errors. Every failure the GPU can report (no adapter, a device
//! request refused, a validation error, out-of-memory, a lost device, a buffer
//! over a limit) becomes one of these, so no GPU problem turns into a silent
//! wrong result.

use thiserror::Error;

use crate::memory::bytes::human_bytes;

/// An error from the GPU runtime.
#[derive(Debug, Error)]
pub enum GpuError {
    /// No adapter at all, or none matching the user's `WGPU_ADAPTER_NAME`.
    #[error(
        "no GPU adapter found{detail}.\n  fix: install a Vulkan driver. On a machine without a GPU, \
         Mesa's software Vulkan driver works: `apt-get install mesa-vulkan-drivers` (Debian/Ubuntu) \
         or `dnf install mesa-vulkan-drivers` (Fedora). Check with `physfit info`; \
         WGPU_BACKEND=vulkan|metal|dx12|gl and WGPU_ADAPTER_NAME=<substring> choose one explicitly."
    )]
    NoAdapter {
        /// Extra context (which variable filtered what), empty when none.
        detail: String,
    },
    /// The adapter refused the device with the features and limits physfit asks for.
    #[error("the adapter '{adapter}' refused to create a device: {error}")]
    RequestDevice {
        /// Adapter name.
        adapter: String,
        /// wgpu's reason.
        error: wgpu::RequestDeviceError,
    },
    /// A buffer larger than the device allows in one binding or one allocation.
    #[error(
        "buffer '{label}' needs {} but the device limit {limit_name} is {}; \
         the scene is too large for this adapter in one piece: use fewer splats/particles \
         (drivers.count in scene.toml), a smaller grid_res or image size, or a GPU with a larger limit",
        human_bytes(*.size), human_bytes(*.limit)
    )]
    OverLimit {
        /// Label of the buffer that did not fit.
        label: String,
        /// Bytes requested.
        size: u64,
        /// Name of the wgpu limit that was hit.
        limit_name: &'static str,
        /// The limit's value in bytes.
        limit: u64,
    },
    /// The device ran out of memory while allocating.
    #[error("out of GPU memory while allocating '{label}' ({}): reduce the scene size or use a GPU with more memory", human_bytes(*.size))]
    OutOfMemory {
        /// What was being allocated.
        label: String,
        /// Bytes requested.
        size: u64,
    },
    /// wgpu reported a validation error: a bug in physfit, never the user's fault.
    #[error("GPU validation error in {context}: {message}")]
    Validation {
        /// Which operation.
        context: String,
        /// wgpu's message.
        message: String,
    },
    /// [`GpuError::OverLimit`] or [`GpuError::OutOfMemory`] with the size of
    /// the scene that caused it (added by the stage that knows it, see
    /// [`GpuError::in_scene`]).
    #[error("scene of {scene}: {cause}")]
    SceneTooLarge {
        /// The scene's size in the stage's terms (splats, image, particles, grid).
        scene: String,
        /// The limit or allocation failure.
        cause: Box<GpuError>,
    },
    /// A WGSL shader failed to parse or validate: a bug in physfit.
    #[error("shader '{name}' is invalid:\n{message}")]
    Shader {
        /// Shader name (path under shaders/).
        name: String,
        /// naga's diagnostic.
        message: String,
    },
    /// The device was lost (driver reset, GPU removed, timeout).
    #[error("the GPU device was lost: {0}. Rerun; if it repeats, update the GPU driver or lower the workload (a very long dispatch can trip the driver's watchdog)")]
    DeviceLost(String),
    /// Mapping a buffer for readback failed.
    #[error("reading back buffer '{label}' failed: {message}")]
    Readback {
        /// Buffer label.
        label: String,
        /// wgpu's reason.
        message: String,
    },
    /// A previously reported asynchronous (uncaptured) error.
    #[error("GPU error: {0}")]
    Uncaptured(String),
}

impl GpuError {
    /// Adds the scene's size to a size error (over a limit or out of
    /// memory), so the message says how big the scene is as well as which
    /// buffer and limit; other errors pass through unchanged.
    pub fn in_scene(self, scene: impl FnOnce() -> String) -> GpuError {
        match self {
            e @ (GpuError::OverLimit { .. } | GpuError::OutOfMemory { .. }) => {
                GpuError::SceneTooLarge {
                    scene: scene(),
                    cause: Box::new(e),
                }
            }
            other => other,
        }
    }

    /// The underlying error, looking through [`GpuError::SceneTooLarge`].
    pub fn root(&self) -> &GpuError {
        match self {
            GpuError::SceneTooLarge { cause, .. } => cause.root(),
            other => other,
        }
    }
}
