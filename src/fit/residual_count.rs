//! The residual count `N` of the error bars (docs/design.md § Error bars):
//! the colour values of the fitted renders that differ from the reference
//! in 8 bits, over a selection's frames and views, loss masks applied.
//!
//! The image loss is a mean over every pixel of a frame, and most pixels
//! of a frame are background that the object never reaches: render and
//! reference agree there exactly at any parameters, so they add nothing to
//! the loss, nothing to its curvature and nothing to the noise. Counting
//! them in `N` would shrink `s = 2·loss/(N − n)` by the object's share of
//! the frame and the error bars by its square root.

use super::error::FitError;
use super::evaluation::{Parameters, Selection};
use super::problem::FitProblem;
use crate::gpu::GpuContext;
use crate::scene::Scene;

/// An 8-bit value as a render is written (docs/design.md § Units).
fn eight_bit(v: f32) -> u8 {
    (255.0 * v.clamp(0.0, 1.0)).round() as u8
}

/// The residual count of `params` on `selection` (module doc).
pub fn residual_count(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    scene: &Scene,
    params: &Parameters,
    selection: &Selection,
) -> Result<u64, FitError> {
    let last = *selection
        .frames
        .last()
        .ok_or(FitError::EmptySelection("frames"))?;
    let rollout = problem.forward_states(ctx, params, last)?;
    let mut count = 0u64;
    for &k in &selection.frames {
        for &v in &selection.views {
            let view = &scene.views[v];
            let rendered = problem.render_state_corrected(ctx, &rollout.frames[k], v)?;
            let frames = view.frames.as_ref().ok_or_else(|| FitError::NoFrames {
                view: v,
                name: view.name.clone(),
            })?;
            let reference = frames.load(k)?;
            let mask = match &view.masks {
                Some(m) => Some(m.load_mask(k)?),
                None => None,
            };
            for (p, (a, b)) in rendered.pixels.iter().zip(&reference.pixels).enumerate() {
                if mask.as_ref().is_some_and(|m| !m.counts[p]) {
                    continue;
                }
                count += (0..3)
                    .filter(|&c| eight_bit(a[c]) != eight_bit(b[c]))
                    .count() as u64;
            }
        }
    }
    Ok(count)
}
