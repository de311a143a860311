//! PNG files, written atomically ([`crate::io::atomic_write`]): the one PNG
//! writer of the project ([`write_png`]), which the reference frames and
//! renders (`crate::scene::frames`), the fit's pictures (`crate::report`)
//! and the command-line outputs all go through, so an interrupted run never
//! leaves half a picture; and the one quantisation of values to samples
//! ([`quantised`]).

use std::path::{Path, PathBuf};

use super::atomic_write::write_atomic;

/// Why a PNG could not be encoded or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot write image: {message}")]
pub struct PngError {
    /// The destination.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// Encodes `image` as PNG and writes it to `path` atomically.
pub fn write_png<P>(
    path: &Path,
    image: &image::ImageBuffer<P, Vec<P::Subpixel>>,
) -> Result<(), PngError>
where
    P: image::Pixel + image::PixelWithColorType,
    [P::Subpixel]: image::EncodableLayout,
{
    let err = |message: String| PngError {
        path: path.to_path_buf(),
        message,
    };
    let bytes = png_bytes(image).map_err(|e| err(e.to_string()))?;
    write_atomic(path, &bytes).map_err(|e| err(e.to_string()))
}

/// `image` encoded as PNG, for a writer that places the bytes itself.
pub fn png_bytes<P>(
    image: &image::ImageBuffer<P, Vec<P::Subpixel>>,
) -> Result<Vec<u8>, image::ImageError>
where
    P: image::Pixel + image::PixelWithColorType,
    [P::Subpixel]: image::EncodableLayout,
{
    let mut bytes = std::io::Cursor::new(Vec::new());
    image.write_to(&mut bytes, image::ImageFormat::Png)?;
    Ok(bytes.into_inner())
}

/// One value as a sample of `max` levels (255 or 65535):
/// `round(max · clamp(v, 0, 1))`, no transfer curve (the 3DGS convention,
/// docs/design.md § Units and frames); NaN becomes 0. The one quantisation of
/// every image the project writes.
pub fn quantised(v: f32, max: f32) -> f32 {
    let unit = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
    (unit * max).round()
}
