//! Labelled GPU buffers: creation checked against device limits and wrapped in
//! error scopes (so out-of-memory is a typed error naming the buffer), upload
//! from slices, and readback to host vectors.

use std::sync::{Arc, Mutex};

use bytemuck::Pod;

use super::context::GpuContext;
use super::error::GpuError;
use super::memory::MemoryTracker;

/// Usage for ordinary storage buffers: bound as storage, filled and read back.
pub const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// Usage for uniform buffers.
pub const UNIFORM: wgpu::BufferUsages =
    wgpu::BufferUsages::UNIFORM.union(wgpu::BufferUsages::COPY_DST);

/// A wgpu buffer that remembers its label and counts toward the context's
/// memory tracker until dropped.
#[derive(Debug)]
pub struct GpuBuffer {
    buffer: wgpu::Buffer,
    label: String,
    tracker: Arc<MemoryTracker>,
}

impl GpuBuffer {
    /// The label given at creation (also the wgpu label).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The wrapped wgpu buffer.
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.buffer.size()
    }

    /// Whole-buffer binding resource.
    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        self.buffer.as_entire_binding()
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        self.tracker.release(self.buffer.size());
    }
}

impl std::ops::Deref for GpuBuffer {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

/// Rounds a size up so it is a valid, non-empty buffer size (multiple of 4,
/// at least 4 bytes; wgpu rejects empty bindings).
fn padded_size(size: u64) -> u64 {
    size.max(4).div_ceil(4) * 4
}

impl GpuContext {
    /// Creates a labelled buffer of `size` bytes (zero-filled by wgpu).
    ///
    /// Errors: [`GpuError::OverLimit`] when `size` exceeds `max_buffer_size`
    /// or, for storage buffers, `max_storage_buffer_binding_size`;
    /// [`GpuError::OutOfMemory`] when the allocation fails.
    pub fn create_buffer(
        &self,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<GpuBuffer, GpuError> {
        let size = padded_size(size);
        if size > self.limits.max_buffer_size {
            return Err(GpuError::OverLimit {
                label: label.to_string(),
                size,
                limit_name: "max_buffer_size",
                limit: self.limits.max_buffer_size,
            });
        }
        if usage.contains(wgpu::BufferUsages::STORAGE)
            && size > self.limits.max_storage_buffer_binding_size
        {
            return Err(GpuError::OverLimit {
                label: label.to_string(),
                size,
                limit_name: "max_storage_buffer_binding_size",
                limit: self.limits.max_storage_buffer_binding_size,
            });
        }
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        });
        let validation_error = pollster::block_on(validation.pop());
        let oom_error = pollster::block_on(oom.pop());
        if oom_error.is_some() {
            return Err(GpuError::OutOfMemory {
                label: label.to_string(),
                size,
            });
        }
        if let Some(e) = validation_error {
            return Err(GpuError::Validation {
                context: format!("creating buffer '{label}'"),
                message: e.to_string(),
            });
        }
        self.memory.allocate(size);
        Ok(GpuBuffer {
            buffer,
            label: label.to_string(),
            tracker: self.memory.clone(),
        })
    }

    /// Creates a storage buffer holding `data`.
    pub fn storage_from_slice<T: Pod>(
        &self,
        label: &str,
        data: &[T],
    ) -> Result<GpuBuffer, GpuError> {
        self.buffer_from_slice(label, data, STORAGE)
    }

    /// Creates a zero-filled storage buffer of `count` elements of `T`.
    pub fn storage_zeroed<T: Pod>(&self, label: &str, count: usize) -> Result<GpuBuffer, GpuError> {
        self.create_buffer(label, (count * std::mem::size_of::<T>()) as u64, STORAGE)
    }

    /// Creates a uniform buffer holding `value`.
    pub fn uniform_buffer<T: Pod>(&self, label: &str, value: &T) -> Result<GpuBuffer, GpuError> {
        self.buffer_from_slice(label, std::slice::from_ref(value), UNIFORM)
    }

    /// Creates a buffer with the given usage (COPY_DST is added) holding `data`.
    pub fn buffer_from_slice<T: Pod>(
        &self,
        label: &str,
        data: &[T],
        usage: wgpu::BufferUsages,
    ) -> Result<GpuBuffer, GpuError> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let buffer = self.create_buffer(
            label,
            bytes.len() as u64,
            usage | wgpu::BufferUsages::COPY_DST,
        )?;
        self.write(&buffer, bytes);
        Ok(buffer)
    }

    /// Writes `data` at the start of `buffer` (queued; happens before the next submit).
    pub fn write<T: Pod>(&self, buffer: &GpuBuffer, data: &[T]) {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        if bytes.len().is_multiple_of(4) {
            self.queue.write_buffer(buffer, 0, bytes);
        } else {
            let mut padded = bytes.to_vec();
            padded.resize(bytes.len().div_ceil(4) * 4, 0);
            self.queue.write_buffer(buffer, 0, &padded);
        }
    }

    /// Copies `buffer` back to the host as a vector of `T` (the whole buffer,
    /// truncated to whole elements). Submits pending work and waits for it;
    /// any GPU error raised meanwhile is returned instead of the data.
    pub fn read_buffer<T: Pod>(&self, buffer: &GpuBuffer) -> Result<Vec<T>, GpuError> {
        let size = buffer.size();
        self.traffic.encoder();
        self.traffic.readback();
        let staging = self.create_buffer(
            &format!("{} (readback)", buffer.label()),
            size,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        )?;
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("readback"),
            });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        self.queue.submit([encoder.finish()]);
        let result: Arc<Mutex<Option<Result<(), wgpu::BufferAsyncError>>>> =
            Arc::new(Mutex::new(None));
        {
            let result = result.clone();
            staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                *result.lock().unwrap() = Some(r)
            });
        }
        self.wait()?;
        match result.lock().unwrap().take() {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                return Err(GpuError::Readback {
                    label: buffer.label().to_string(),
                    message: e.to_string(),
                })
            }
            None => {
                return Err(GpuError::Readback {
                    label: buffer.label().to_string(),
                    message: "map callback never ran".to_string(),
                })
            }
        }
        let data = {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| GpuError::Readback {
                    label: buffer.label().to_string(),
                    message: e.to_string(),
                })?;
            let whole = view.len() / std::mem::size_of::<T>() * std::mem::size_of::<T>();
            bytemuck::pod_collect_to_vec(&view[..whole])
        };
        staging.unmap();
        Ok(data)
    }
}
