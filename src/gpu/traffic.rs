//! Counts of the host's round trips to the GPU: command encoders created
//! (each is finished into one command buffer and submitted once) and
//! buffers read back (each a submit and a wait). `physfit bench fit`
//! reports them per evaluation (docs/benchmarks.md § Fit): on a hardware
//! GPU every readback stalls the queue, so their number matters beside the
//! kernels' time. wgpu counts neither portably, so physfit counts its own
//! ([`super::encoder`] and [`super::GpuContext::read_buffer`] are the only
//! places that make them).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Running counts since the context was created.
#[derive(Debug, Default)]
pub struct TrafficCounter {
    encoders: AtomicU64,
    readbacks: AtomicU64,
}

/// A snapshot of a [`TrafficCounter`], or the difference of two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    /// Command encoders created (one submission each).
    pub submissions: u64,
    /// Buffers read back to the host (each also one submission, counted
    /// in `submissions`, and a wait).
    pub readbacks: u64,
}

impl TrafficCounter {
    /// Records one command encoder.
    pub fn encoder(&self) {
        self.encoders.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one readback.
    pub fn readback(&self) {
        self.readbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn snapshot(&self) -> Traffic {
        Traffic {
            submissions: self.encoders.load(Ordering::Relaxed),
            readbacks: self.readbacks.load(Ordering::Relaxed),
        }
    }
}

impl Traffic {
    /// The counts from `earlier` to `self`.
    pub fn since(self, earlier: Traffic) -> Traffic {
        Traffic {
            submissions: self.submissions - earlier.submissions,
            readbacks: self.readbacks - earlier.readbacks,
        }
    }
}
