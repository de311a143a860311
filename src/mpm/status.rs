//! Run-time health check of a simulation (docs/design.md § MPM, Stability): G2P
//! ORs bits into two status words when a new value is not finite or a
//! particle's stencil leaves the grid; the host reads them once per frame
//! (never per substep) and turns them into an [`MpmError`].

use super::error::MpmError;
use crate::gpu::{GpuBuffer, GpuContext, GpuError};

/// Words of the status buffer: `[bits, first bad particle]`.
pub const STATUS_WORDS: usize = 2;
/// Bit: a non-finite value (`STATUS_NON_FINITE` in shaders/mpm/params.wgsl).
pub const STATUS_NON_FINITE: u32 = 1;
/// Bit: a particle left the grid (`STATUS_LEFT_BOX`).
pub const STATUS_LEFT_BOX: u32 = 2;

/// Decoded status words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimulationStatus {
    /// OR of the status bits.
    pub bits: u32,
    /// Smallest index of an offending particle (`u32::MAX` when none).
    pub particle: u32,
}

impl SimulationStatus {
    /// Queues the reset of the status words (before the next submission).
    pub fn reset(ctx: &GpuContext, buffer: &GpuBuffer) {
        ctx.write(buffer, &Self::CLEAR);
    }

    /// The status words of a healthy run: no flag, no particle.
    pub const CLEAR: [u32; STATUS_WORDS] = [0, u32::MAX];

    /// Waits for submitted work and reads the status words.
    pub fn read(ctx: &GpuContext, buffer: &GpuBuffer) -> Result<Self, GpuError> {
        let words: Vec<u32> = ctx.read_buffer(buffer)?;
        Ok(Self {
            bits: words[0],
            particle: words[1],
        })
    }

    /// No problem seen.
    pub fn is_ok(&self) -> bool {
        self.bits == 0
    }

    /// The error for a failure at `frame`, `substep` (non-finite wins).
    pub fn error(&self, frame: u32, substep: u32) -> MpmError {
        if self.bits & STATUS_NON_FINITE != 0 {
            MpmError::NonFinite {
                frame,
                substep,
                particle: self.particle,
            }
        } else {
            debug_assert!(self.bits & STATUS_LEFT_BOX != 0, "status bits {:#x}", self.bits);
            MpmError::LeftBox {
                frame,
                substep,
                particle: self.particle,
            }
        }
    }
}
