//! The camera check (docs/design.md § Loss, parameters, fit): before fitting,
//! frame 0 is rendered in every view against reference frame 0, because a
//! camera that does not line up is the commonest way a fit fails. Its PSNR
//! comes from the fit's own loss (over a view's mask where it has one), so
//! the check measures what the fit will compare. Below
//! [`CAMERA_CHECK_DB`] the view gets a picture, reference | render |
//! difference, in `OUT/camera_check/<view>.png`; its render carries the
//! view's colour correction, as the loss compares it. A view below it is
//! fixed by `physfit align`, which fits the view's pose and colour.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::evaluation::{Parameters, Selection};
use super::output_plan::camera_check_picture;
use super::problem::FitProblem;
use super::session_error::SessionError;
use crate::gpu::GpuContext;
use crate::io::output_dir::OutputDir;
use crate::io::png::png_bytes;
use crate::report::frame_triptych;
use crate::scene::Scene;

/// PSNR of frame 0 below which the camera check warns: well-aligned
/// cameras on real captures render frame 0 above it, a shift of a few
/// pixels falls below.
pub const CAMERA_CHECK_DB: f64 = 25.0;

/// The check of one view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CameraCheck {
    /// The view's name.
    pub view: String,
    /// PSNR of frame 0 (dB).
    pub psnr: f64,
    /// The reference frame 0 it was compared with.
    pub reference: PathBuf,
    /// The picture written when the view is below [`CAMERA_CHECK_DB`].
    pub picture: Option<PathBuf>,
}

impl CameraCheck {
    /// True when the view renders frame 0 below [`CAMERA_CHECK_DB`].
    pub fn misaligned(&self) -> bool {
        self.psnr < CAMERA_CHECK_DB
    }
}

/// Checks `views` of `scene` at `start` (module doc); the pictures go to
/// `camera_check/<view>.png` in the output directory, written in place
/// through it: a view's earlier picture is replaced, or removed when the
/// view now lines up (it is stale whatever this check finds; an earlier
/// fit being replaced keeps it until the replacement). Nothing else in
/// `camera_check/` is touched, and a picture does not yet replace the rest
/// of an earlier fit (the check may still be followed by a refusal).
pub fn camera_check(
    ctx: &GpuContext,
    scene: &Scene,
    problem: &mut FitProblem,
    start: &Parameters,
    views: &[usize],
    output: &mut OutputDir,
) -> Result<Vec<CameraCheck>, SessionError> {
    let frame0 = Selection {
        frames: vec![0],
        views: views.to_vec(),
    };
    let report = problem.loss(ctx, start, &frame0)?;
    let mut results = Vec::new();
    for t in &report.images {
        let view = &scene.views[t.view];
        let frames = view.frames.as_ref().expect("views with frames");
        let mut check = CameraCheck {
            view: view.name.clone(),
            psnr: t.terms.psnr(),
            reference: frames.paths[0].clone(),
            picture: None,
        };
        if check.misaligned() {
            let rest = problem.forward_states(ctx, start, 0)?;
            let rendered = problem.render_state_corrected(ctx, &rest.frames[0], t.view)?;
            let reference = frames.load(0).map_err(SessionError::output)?;
            let relative = camera_check_picture(&view.name);
            let path = output.target().join(&relative);
            let picture = frame_triptych(&reference, &rendered, 0, Some(check.psnr))
                .map_err(SessionError::output)?;
            let bytes = png_bytes(&picture).map_err(|e| SessionError::Io {
                path: path.clone(),
                error: std::io::Error::other(e),
            })?;
            output.replace_one_in_place(&relative, &bytes)?;
            check.picture = Some(path);
        } else {
            output.remove_in_place(&camera_check_picture(&view.name))?;
        }
        results.push(check);
    }
    Ok(results)
}
