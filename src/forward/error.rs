//! Why a forward run (`physfit render`, `simulate`, `synth`, the fit's
//! pictures and truth check) cannot be set up or run: each source error
//! already names its file, field or frame.

use thiserror::Error;

/// Why a [`super::SceneRenderer`] cannot be set up or run.
#[derive(Debug, Error)]
pub enum ForwardError {
    /// The fitted drivers do not belong to the scene, or cannot be read.
    #[error(transparent)]
    Drivers(#[from] crate::output::drivers_file_error::DriversFileError),
    /// The interactions are unusable (e.g. the velocity bound).
    #[error(transparent)]
    Interaction(#[from] crate::interact::InteractionError),
    /// The simulator refused (the stability bound) or the run broke down
    /// (the frame and substep are named).
    #[error(transparent)]
    Mpm(#[from] crate::mpm::MpmError),
    /// The deformation of the splats is inconsistent.
    #[error(transparent)]
    Deform(#[from] crate::deform::DeformError),
    /// The drivers could not be built from the scene.
    #[error(transparent)]
    Drive(#[from] crate::drive::DriveError),
    /// Rendering failed.
    #[error(transparent)]
    Splat(#[from] crate::splat::SplatError),
    /// A GPU operation failed.
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    /// Colouring by stiffness failed.
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    /// Frame `frame` was asked for before it was simulated.
    #[error("frame {frame} is not simulated ({frames} so far)")]
    NotSimulated {
        /// The frame asked for.
        frame: usize,
        /// Frames simulated, the rest frame 0 included.
        frames: usize,
    },
    /// The caller stopped the run before frame `frame`.
    #[error("stopped at the caller's request before frame {frame}")]
    Stopped {
        /// The frame not simulated or written.
        frame: usize,
    },
    /// A posed splat file could not be written.
    #[error(transparent)]
    Ply(#[from] crate::scene::ply::PlyError),
    /// A rendered frame could not be written.
    #[error(transparent)]
    Frame(#[from] crate::scene::frames::FrameError),
    /// A rendered image could not be written.
    #[error(transparent)]
    Png(#[from] crate::io::png::PngError),
    /// A GIF could not be written.
    #[error(transparent)]
    Gif(#[from] crate::interact::GifError),
    /// The fitted drivers' E could not be given to the splats (colouring
    /// by stiffness).
    #[error(transparent)]
    Material(#[from] crate::output::fitted_ply::FittedPlyError),
    /// A folder could not be made.
    #[error("{}: {source}", crate::io::shown::shown(path))]
    Io {
        /// The folder.
        path: std::path::PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A motion was asked of a renderer built to draw the scene at rest.
    #[error("this renderer draws the scene at rest: it simulates nothing")]
    AtRest,
    /// Per-driver values that do not fit the drivers.
    #[error("{0}")]
    Values(String),
    /// A fitted file whose drivers give each Gaussian another number of
    /// neighbours than the deformation takes.
    #[error(
        "{path}: the drivers give each Gaussian {k} nearest drivers, the deformation takes \
         {needed}; fix: re-fit with `drivers.k = {needed}`"
    )]
    NeighbourCount {
        /// The drivers file.
        path: String,
        /// Its k.
        k: usize,
        /// What the deformation takes.
        needed: usize,
    },
}
