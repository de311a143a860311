//! Bind groups reused across substeps.
//!
//! A substep binds the same few buffers again and again: the state buffers
//! alternate between a small fixed set (frame states, the simulator's two
//! scratch states, checkpoints and segment states of the backward pass), and
//! everything else is owned by the simulator. Building a bind group per
//! stage per substep (~10⁵ per fit iteration) costs driver time for nothing,
//! so each kernel's bind group is built once per distinct set of buffers.
//!
//! Key: the kernel's name and the bound buffers themselves. The key holds
//! clones of the `wgpu::Buffer` handles, so a cached buffer cannot be freed
//! while cached and its identity cannot be reused by a later buffer: an entry
//! can never go stale. In exchange the cache keeps its buffers alive, so the
//! simulator clears it at the end of each frame and each backward pass
//! ([`BindGroupCache::clear`]), and it clears itself past
//! [`BindGroupCache::MAX_ENTRIES`] (callers encoding substeps directly on
//! buffers of their own).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::gpu::NamedBuffer;

type Key = (&'static str, Vec<wgpu::Buffer>);

/// Cached bind groups keyed by kernel and bound buffers.
#[derive(Default)]
pub struct BindGroupCache {
    groups: Mutex<HashMap<Key, wgpu::BindGroup>>,
}

impl BindGroupCache {
    /// Entries above which the cache starts over. A forward frame needs
    /// ~20; a backward pass with K-substep segments ~10 per kernel per
    /// segment substep and gradient parity (~700 for K = 28, S = 768).
    pub const MAX_ENTRIES: usize = 4096;

    /// The bind group of `kernel` on `buffers` (all its bound buffers, in
    /// any fixed order), built by `make` on first use.
    pub fn get(
        &self,
        kernel: &'static str,
        buffers: &[NamedBuffer],
        make: impl FnOnce() -> wgpu::BindGroup,
    ) -> wgpu::BindGroup {
        let key = (
            kernel,
            buffers.iter().map(|(_, b)| b.raw().clone()).collect(),
        );
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(group) = groups.get(&key) {
            return group.clone();
        }
        if groups.len() >= Self::MAX_ENTRIES {
            groups.clear();
        }
        let group = make();
        groups.insert(key, group.clone());
        group
    }

    /// Number of cached bind groups.
    #[cfg(feature = "reference")]
pub fn len(&self) -> usize {
        self.groups.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True when nothing is cached.
    #[cfg(feature = "reference")]
pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every entry (and with it the cache's hold on the buffers).
    pub fn clear(&self) {
        self.groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}
