//! `physfit align`: each view's camera (pose, optionally focal length) and
//! colour correction fitted to its reference frame 0 before any material
//! is, so that a real video lines up with its splats (docs/design.md §
//! Camera alignment).
//!
//! A real video is never registered to its splats exactly: the pose comes
//! from COLMAP or a phone, the focal length from EXIF, and the exposure and
//! white balance differ from the capture that trained the splats. A fit
//! against a misregistered view bends E to explain pixels that are only
//! misaligned. Here the rest state is rendered with the differentiable
//! rasterizer and its camera gradient ([`crate::splat::Rasterizer::camera_backward`])
//! drives a bounded L-BFGS, coarse to fine:
//! 1. [`chart`]: the coordinates (rotation on the tangent space, camera-frame
//!    translation, log focal, gain and offset), scaled to pixels;
//! 2. [`pyramid`]: box-filtered levels of frame 0 and the camera scaled to
//!    each;
//! 3. [`problem`]: render, correct, the fit's own loss and its gradient;
//!    [`color_guess`]: the colour's closed-form start at its first level;
//! 4. [`silhouette`]: a first guess of the pose from the silhouettes'
//!    moments, needing no overlap;
//! 5. [`view_align`]: the guess, the levels in turn, then the result against the start
//!    at full resolution, and [`conditioning`]: what one view cannot tell
//!    apart;
//! 6. [`scene_edit`]: the user's scene with only the refined fields changed;
//! 7. [`scene_align`]: the chosen views in turn, as one library call, its
//!    result in memory and the files it writes (what `physfit align` runs).

internal_mods! {
    chart;
    color_guess;
    conditioning;
    error;
    problem;
    pyramid;
    scene_align;
    scene_edit;
    silhouette;
    summary;
    view_align;
}

pub use scene_align::{picture_file, ALIGNED_SCENE_FILE};
pub use summary::ALIGN_SUMMARY_FILE;

pub use chart::{AlignWhat, Chart, ViewState};
pub use error::AlignError;
pub use problem::ViewProblem;
pub use scene_align::{align_scene, AlignEvent, AlignedView, SceneAlignOptions, SceneAlignment};
pub use view_align::{align_view, AlignProgress, AlignSettings, Reference, ViewAlignment};
