//! Per-view loss masks (`[[views]] masks = "..."`): one
//! PNG per reference frame saying which pixels the image loss compares.
//!
//! Where a reference video's background differs from the scene's (a real
//! room behind the object, a background the splats do not hold), those
//! pixels can never match and would pull the fit towards nonsense; a mask
//! limits the loss to the object's pixels ([`crate::loss`] weights each
//! pixel's terms by it).
//!
//! Decoding rule, per file (8- or 16-bit, grey, grey + alpha, RGB or RGBA):
//! a pixel **counts** when it is white, **is ignored** when it is black.
//! - A file with transparent pixels (an alpha channel with some alpha below
//!   half) is read by its alpha: alpha ≥ 128 of 255 counts. This takes a
//!   cut-out (the object's colours over transparency, as background
//!   removers write it) as its own mask.
//! - Otherwise (no alpha channel, or every pixel opaque) it is read by its
//!   grey level (the image crate's luma of R, G, B): ≥ 128 of 255 counts.
//!   This takes a black-and-white mask however it was saved.
//!
//! A mask that counts no pixel is refused ([`FrameError::EmptyMask`]): its
//! loss would be 0/0.

use std::path::Path;

use super::frames::{decode_image, FrameError};
use super::view::FrameSet;

/// Half of the 8-bit range: a byte at or above it is "white" / "opaque".
pub const MASK_THRESHOLD: u8 = 128;

/// One decoded mask: for every pixel, row-major from the top left, whether
/// the loss counts it.
#[derive(Clone, Debug, PartialEq)]
pub struct Mask {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width × height` flags, true where the pixel counts.
    pub counts: Vec<bool>,
}

impl Mask {
    /// Number of pixels that count.
    pub fn counted(&self) -> usize {
        self.counts.iter().filter(|&&c| c).count()
    }
}

/// Decodes the mask at `path` by the module's rule; with `expected`, a mask
/// of another size is [`FrameError::WrongSize`].
///
/// Errors: [`FrameError::Unreadable`], [`FrameError::WrongSize`],
/// [`FrameError::EmptyMask`].
pub fn load_mask(path: &Path, expected: Option<(u32, u32)>) -> Result<Mask, FrameError> {
    let image = decode_image(path, expected)?;
    let (width, height) = (image.width(), image.height());
    let luma_alpha = image.to_luma_alpha8();
    let transparent =
        image.color().has_alpha() && luma_alpha.pixels().any(|p| p.0[1] < MASK_THRESHOLD);
    let channel = if transparent { 1 } else { 0 };
    let counts: Vec<bool> = luma_alpha
        .pixels()
        .map(|p| p.0[channel] >= MASK_THRESHOLD)
        .collect();
    let mask = Mask {
        width,
        height,
        counts,
    };
    if mask.counted() == 0 {
        return Err(FrameError::EmptyMask {
            path: path.to_path_buf(),
        });
    }
    Ok(mask)
}

impl FrameSet {
    /// Decodes mask `k` of a set listed from `views[i].masks` (module doc).
    pub fn load_mask(&self, k: usize) -> Result<Mask, FrameError> {
        load_mask(&self.paths[k], Some((self.width, self.height)))
    }
}
