//! Why a picture of the fit could not be drawn or written.

/// Why a picture of the fit (`loss.png`, `compare/`, `stiffness.png`) could
/// not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The font embedded from `assets/DejaVuSans.ttf` does not parse.
    #[error("assets/DejaVuSans.ttf (embedded in the binary): not a TrueType font plotters can load; restore the file listed in assets/README.md and rebuild")]
    Font,
    /// plotters failed while drawing.
    #[error("{picture}: drawing failed: {message}")]
    Draw {
        /// Which picture.
        picture: &'static str,
        /// plotters' message.
        message: String,
    },
    /// The value range of a colour map is not finite or is reversed.
    #[error("{picture}: colour range {low} .. {high} must be finite with low ≤ high (give the log10 E range of the fit)")]
    ColourRange {
        /// Which picture.
        picture: &'static str,
        /// The value mapped to the map's start.
        low: f64,
        /// The value mapped to the map's end.
        high: f64,
    },
    /// An image's pixels do not match its size, or two images that go side
    /// by side differ in size.
    #[error("{picture}: {what} is {found_w}×{found_h} pixels ({found} given), expected {expected_w}×{expected_h} (the camera's image size)")]
    Size {
        /// Which picture.
        picture: &'static str,
        /// Which of its inputs.
        what: &'static str,
        /// Expected width.
        expected_w: u32,
        /// Expected height.
        expected_h: u32,
        /// Found width.
        found_w: u32,
        /// Found height.
        found_h: u32,
        /// Pixels given.
        found: usize,
    },
    /// Not one colour per splat.
    #[error("stiffness.png: {found} colours given for {expected} Gaussians (one per Gaussian, in the .ply's order)")]
    ColourCount {
        /// Gaussians.
        expected: usize,
        /// Colours given.
        found: usize,
    },
}
