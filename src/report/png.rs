//! Writing a picture of the fit.

use std::path::Path;

use image::RgbImage;

use super::ReportError;
use crate::scene::frames::encode_and_write;

/// Writes `image` to `path` as an 8-bit RGB PNG, atomically (temp file +
/// rename, `crate::scene::atomic_write`), so an interrupted fit never
/// leaves half a picture.
pub fn write_png(path: &Path, image: &RgbImage) -> Result<(), ReportError> {
    Ok(encode_and_write(path, image)?)
}
