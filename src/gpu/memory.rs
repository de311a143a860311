//! Byte accounting of GPU buffers allocated through the context: the current
//! total and its peak, reported by `physfit bench` as peak GPU memory, and
//! running counts of allocations and their bytes (tests use them to check
//! that a loop reuses its buffers). wgpu exposes no portable memory query, so
//! physfit counts its own allocations (every buffer it makes goes through
//! [`super::GpuContext::create_buffer`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// Running total and high-water mark of allocated buffer bytes.
#[derive(Debug, Default)]
pub struct MemoryTracker {
    current: AtomicU64,
    peak: AtomicU64,
    allocations: AtomicU64,
    allocated: AtomicU64,
}

impl MemoryTracker {
    /// Records an allocation.
    pub fn allocate(&self, bytes: u64) {
        let now = self.current.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        self.allocations.fetch_add(1, Ordering::Relaxed);
        self.allocated.fetch_add(bytes, Ordering::Relaxed);
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

    /// Buffers allocated since creation (released ones included).
    pub fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// Bytes allocated since creation, summed over every buffer (released
    /// ones included).
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Restarts peak tracking from the current total (for per-benchmark peaks).
    pub fn reset_peak(&self) {
        self.peak.store(self.current(), Ordering::Relaxed);
    }
}
