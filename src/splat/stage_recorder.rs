//! Records the rasterizer's GPU work either into one encoder per submission
//! (normal use) or one submission per stage with a wait after each, so
//! `physfit bench raster` can say where the time goes per kernel (wgpu has
//! no portable timestamp queries on every adapter; submit-and-wait timing
//! is coarse but works everywhere and includes each stage's real cost).

use std::time::Instant;

use crate::gpu::{encoder, GpuContext};

use super::error::SplatError;

/// Wall time of one stage, measured when profiling.
#[derive(Clone, Debug, PartialEq)]
pub struct StageTiming {
    /// Stage name (kernel or primitive).
    pub stage: &'static str,
    /// Milliseconds from submission to completion.
    pub ms: f64,
}

/// Collects stages into encoders and submits them.
pub struct StageRecorder<'a> {
    ctx: &'a GpuContext,
    label: &'static str,
    encoder: Option<wgpu::CommandEncoder>,
    profile: bool,
    /// Per-stage timings (only filled when profiling).
    pub timings: Vec<StageTiming>,
}

impl<'a> StageRecorder<'a> {
    /// A recorder; `profile` submits and waits after every stage.
    pub fn new(ctx: &'a GpuContext, label: &'static str, profile: bool) -> Self {
        Self {
            ctx,
            label,
            encoder: None,
            profile,
            timings: Vec::new(),
        }
    }

    /// Records one stage.
    pub fn stage(
        &mut self,
        name: &'static str,
        record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<(), SplatError>,
    ) -> Result<(), SplatError> {
        let mut enc = self
            .encoder
            .take()
            .unwrap_or_else(|| encoder(self.ctx, self.label));
        record(&mut enc)?;
        if self.profile {
            let start = Instant::now();
            self.ctx.queue.submit([enc.finish()]);
            self.ctx.wait()?;
            self.timings.push(StageTiming {
                stage: name,
                ms: start.elapsed().as_secs_f64() * 1e3,
            });
        } else {
            self.encoder = Some(enc);
        }
        Ok(())
    }

    /// Submits what has been recorded (no wait).
    pub fn submit(&mut self) {
        if let Some(enc) = self.encoder.take() {
            self.ctx.queue.submit([enc.finish()]);
        }
    }
}
