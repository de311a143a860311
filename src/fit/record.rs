//! What a fit records per iteration (a line of `loss.jsonl`), from the
//! loss report of the point the iteration started at.

use serde::{Deserialize, Serialize};

use super::evaluation::LossReport;
use super::plan::{StageKind, StagePlan};

/// One iteration's line of `loss.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    /// Round, 1-based.
    pub round: u32,
    /// Stage.
    pub stage: StageKind,
    /// Iteration within the stage, 0-based.
    pub iteration: u32,
    /// The loss at the iteration's parameters (before its step).
    pub loss: f64,
    /// Its weighted image part.
    pub image: f64,
    /// Σ mean |I − Î| (unweighted).
    pub l1: f64,
    /// Σ (1 − SSIM) (unweighted).
    pub dssim: f64,
    /// TV of log10 E (unweighted).
    pub tv: f64,
    /// TV of v0 (unweighted).
    pub velocity_tv: f64,
    /// Mean PSNR over the stage's frames and views, dB.
    pub psnr: f64,
    /// Mean SSIM over them.
    pub ssim: f64,
    /// Norm of the stage's gradient before clipping.
    pub grad_norm: f64,
    /// The rate the step was taken at (after any halvings).
    pub learning_rate: f64,
    /// Steps rejected (halvings) before one was taken.
    pub rejected: u32,
}

/// Mean PSNR and SSIM over a report's frames and views.
pub fn mean_quality(report: &LossReport) -> (f64, f64) {
    let n = report.images.len().max(1) as f64;
    let psnr = report.images.iter().map(|t| t.terms.psnr()).sum::<f64>() / n;
    let ssim = report.images.iter().map(|t| t.terms.ssim()).sum::<f64>() / n;
    (psnr, ssim)
}

/// The record of one point of a stage: its loss terms and mean quality,
/// the gradient's norm; no step yet (rate 0, nothing rejected).
pub fn record(
    stage: &StagePlan,
    iteration: u32,
    report: &LossReport,
    grad_norm: f64,
) -> IterationRecord {
    let (psnr, ssim) = mean_quality(report);
    IterationRecord {
        round: stage.round,
        stage: stage.kind,
        iteration,
        loss: report.loss,
        image: report.image,
        l1: report.l1,
        dssim: report.dssim,
        tv: report.tv,
        velocity_tv: report.velocity_tv,
        psnr,
        ssim,
        grad_norm,
        learning_rate: 0.0,
        rejected: 0,
    }
}

/// `records` as `loss.jsonl` writes them: one JSON object per line.
pub fn jsonl_lines(records: &[IterationRecord]) -> Result<String, serde_json::Error> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    Ok(text)
}

/// The records of `stage` in `records`, oldest first.
pub fn stage_records<'a>(
    records: &'a [IterationRecord],
    stage: &'a StagePlan,
) -> impl Iterator<Item = &'a IterationRecord> + Clone + 'a {
    records
        .iter()
        .filter(move |r| r.round == stage.round && r.stage == stage.kind)
}

/// The losses a stage recorded so far in `records`, oldest first.
pub fn stage_losses(records: &[IterationRecord], stage: &StagePlan) -> Vec<f64> {
    stage_records(records, stage).map(|r| r.loss).collect()
}
