//! Byte accounting of GPU buffers allocated through the context: the current
//! total and its peak, reported by `physfit bench` as peak GPU memory. wgpu
//! exposes no portable memory query, so physfit counts its own allocations
//! (every buffer it makes goes through [`super::GpuContext::create_buffer`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// Running total and high-water mark of allocated buffer bytes.
#[derive(Debug, Default)]
pub struct MemoryTracker {
    current: AtomicU64,
    peak: AtomicU64,
}

impl MemoryTracker {
    /// Records an allocation.
    pub fn allocate(&self, bytes: u64) {
        let now = self.current.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// Records a release.
    pub fn release(&self, bytes: u64) {
        self.current.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Bytes currently allocated.
    pub fn current(&self) -> u64 {
        self.current.load(Ordering::Relaxed)
    }

    /// Largest total seen since creation or the last [`MemoryTracker::reset_peak`].
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Restarts peak tracking from the current total (for per-benchmark peaks).
    pub fn reset_peak(&self) {
        self.peak.store(self.current(), Ordering::Relaxed);
    }
}
