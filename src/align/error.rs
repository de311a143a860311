//! Why `physfit align` refuses or stops. Each names the view, file or
//! setting at fault and the fix.

use std::path::PathBuf;

use crate::gpu::GpuError;
use crate::loss::LossError;
use crate::scene::frames::FrameError;
use crate::splat::SplatError;

/// Why an alignment refuses or stops.
#[derive(Debug, thiserror::Error)]
pub enum AlignError {
    /// The caller asked the alignment to stop ([`crate::stop::StopSignal`]).
    #[error("stopped at the caller's request")]
    Stopped,
    /// A view chosen for alignment has no reference frames.
    #[error("view '{view}' has no reference frames to align to; fix: give it `frames` in the scene, or leave it out with --camera")]
    NoFrames {
        /// The view.
        view: String,
    },
    /// The start camera does not see the object.
    #[error("view '{view}': only {inside} of {total} splat centres project into its {width}×{height} image (they centre at pixel ({centre_x:.0}, {centre_y:.0}), {outside_by:.0} px outside it); the start is too far off for alignment: fix the camera's pose by hand until the object is in view, then align")]
    OffImage {
        /// The view.
        view: String,
        /// Splat centres inside the image, in front of the camera.
        inside: usize,
        /// Splats.
        total: usize,
        /// Image width.
        width: u32,
        /// Image height.
        height: u32,
        /// Median projected x of the centres in front of the camera.
        centre_x: f64,
        /// Median projected y.
        centre_y: f64,
        /// Distance of that median point from the image rectangle, px.
        outside_by: f64,
    },
    /// Every splat is behind the start camera.
    #[error("view '{view}': every splat is behind the camera; fix: the camera looks away from the object (check `rotation`/`look_at`)")]
    Behind {
        /// The view.
        view: String,
    },
    /// The start's own render gave a non-finite loss.
    #[error("view '{view}': the start camera renders a non-finite loss; fix: check the camera and the frames")]
    NonFinite {
        /// The view.
        view: String,
    },
    /// Alignment made some views worse; their cameras were kept.
    #[error("alignment made {} worse ({}); their cameras and colours are kept as they were in the written scene", if views.len() == 1 { "one view" } else { "some views" }, views.join(", "))]
    Worse {
        /// `name: before → after dB` per view.
        views: Vec<String>,
    },
    /// A reference frame or mask could not be read.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The scene file could not be rewritten.
    #[error("{}: {message}", crate::io::shown::shown(path))]
    SceneEdit {
        /// The scene file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Writing an output failed.
    #[error("{}: {source}", crate::io::shown::shown(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A picture could not be drawn.
    #[error(transparent)]
    Report(#[from] crate::report::error::ReportError),
    /// The rasterizer failed.
    #[error(transparent)]
    Splat(#[from] SplatError),
    /// The loss failed.
    #[error(transparent)]
    Loss(#[from] LossError),
    /// The GPU failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A picture could not be written.
    #[error(transparent)]
    Png(#[from] crate::io::png::PngError),
}

impl AlignError {
    /// A closure wrapping an I/O error with its path.
    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> AlignError + '_ {
        move |source| AlignError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
