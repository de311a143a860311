//! Reference frames: PNG/JPEG sequences decoded to RGBA in [0, 1].
//!
//! Colour convention (docs/design.md § Units and frames): the 3DGS one, not
//! colour science. 3DGS trainers fit a splat's `SH + 0.5` directly against
//! the image's 8-bit values / 255, so a render's value *is* the value its
//! pixel gets in the file and no transfer curve (sRGB or gamma) is applied
//! anywhere: a frame is read as `value / 255` (`/ 65535` for 16-bit PNGs,
//! which keep their precision), and a render is written as
//! `round(255 · clamp(v, 0, 1))` by [`write_png`] (or at 16 bits by
//! [`write_png16`]). This is how every 3DGS tool (the reference trainer,
//! gsplat, nerfstudio, brush, the viewers) shows a .ply; decoding with the
//! sRGB curve washes it out. Images without alpha get alpha 1. Pixels are
//! row-major from the top-left corner, straight (not premultiplied) alpha.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use crate::io::png::{self, quantised, PngError};
use crate::io::Frame;

/// Why frames could not be listed, read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The directory could not be listed or the glob pattern is invalid.
    #[error("{spec}: cannot list frames: {message}")]
    List {
        /// The directory or pattern.
        spec: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A recursive `**` that would walk outside the scene's folder (at
    /// worst the whole file system, for `/**/*.png`).
    #[error(
        "{spec}: a recursive `**` walks only below the scene's folder ({root}), so that a \
         pattern such as `/**/*.png` cannot walk the whole file system; fix: name the folder \
         the frames are in (`frames/*.png`), or keep `**` below the scene's folder"
    )]
    UnboundedGlob {
        /// The pattern.
        spec: PathBuf,
        /// The scene's folder.
        root: PathBuf,
    },
    /// No PNG/JPEG file matched.
    #[error("{spec}: no PNG or JPEG frames found (give a directory holding them or a glob such as `frames/*.png`)")]
    NoFrames {
        /// The directory or pattern.
        spec: PathBuf,
    },
    /// A frame file could not be read or decoded.
    #[error("{path}: cannot read image: {message}")]
    Unreadable {
        /// The frame file.
        path: PathBuf,
        /// The decoder's message.
        message: String,
    },
    /// A frame has a different size from the one expected.
    #[error("{path}: frame is {found_w}×{found_h} pixels, expected {expected_w}×{expected_h} (the camera's image size)")]
    WrongSize {
        /// The frame file.
        path: PathBuf,
        /// Expected width.
        expected_w: u32,
        /// Expected height.
        expected_h: u32,
        /// Found width.
        found_w: u32,
        /// Found height.
        found_h: u32,
    },
    /// A loss mask in which no pixel counts (all black or transparent).
    #[error("{path}: mask counts no pixel (every pixel black or transparent); fix: make the mask white (or opaque) where the object is, or remove the view's `masks`")]
    EmptyMask {
        /// The mask file.
        path: PathBuf,
    },
    /// The pixel slice given to a writer does not match `width × height`.
    #[error("{path}: {found} pixels given for a {width}×{height} image")]
    PixelCount {
        /// The destination.
        path: PathBuf,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// Pixels given.
        found: usize,
    },
    /// The image could not be encoded or written.
    #[error(transparent)]
    Write(#[from] PngError),
}

/// Orders file names with digit runs compared as numbers, so `f2.png`
/// comes before `f10.png` (and `f002` before `f010` as plain text would).
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (&a[..da], &b[..db]);
                let strip = |s: &'_ [u8]| -> usize { s.iter().take_while(|c| **c == b'0').count() };
                let (ta, tb) = (&na[strip(na)..], &nb[strip(nb)..]);
                let ord = ta.len().cmp(&tb.len()).then(ta.cmp(tb)).then(da.cmp(&db));
                if ord != Ordering::Equal {
                    return ord;
                }
                a = &a[da..];
                b = &b[db..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

fn is_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .map(|e| matches!(e.to_ascii_lowercase().as_str(), "png" | "jpg" | "jpeg"))
        .unwrap_or(false)
}

/// Refuses a `pattern` with a recursive `**` whose literal part (the
/// folders before its first wildcard) lies outside `root`, the scene's
/// folder: such a walk is bounded only by the file system.
pub fn check_glob_bound(pattern: &Path, root: &Path) -> Result<(), FrameError> {
    let text = pattern.to_string_lossy();
    if !text.contains("**") {
        return Ok(());
    }
    let literal: PathBuf = pattern
        .components()
        .take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '[']))
        .collect();
    let resolve = |p: &Path| crate::io::output_place::resolved(p).ok();
    let inside = match (resolve(&literal), resolve(root)) {
        (Some(l), Some(r)) => l.starts_with(r),
        _ => false,
    };
    if inside {
        Ok(())
    } else {
        Err(FrameError::UnboundedGlob {
            spec: pattern.to_path_buf(),
            root: root.to_path_buf(),
        })
    }
}

/// The frame files of `spec`: a directory (its PNG/JPEG files) or a glob
/// pattern, sorted by file name with digit runs compared as numbers.
pub fn list_frames(spec: &Path) -> Result<Vec<PathBuf>, FrameError> {
    let list_err = |message: String| FrameError::List {
        spec: spec.to_path_buf(),
        message,
    };
    let mut files: Vec<PathBuf> = if spec.is_dir() {
        std::fs::read_dir(spec)
            .map_err(|e| list_err(e.to_string()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && is_image(p))
            .collect()
    } else {
        let pattern = spec
            .to_str()
            .ok_or_else(|| list_err("path is not UTF-8".into()))?;
        glob::glob(pattern)
            .map_err(|e| list_err(e.to_string()))?
            .filter_map(Result::ok)
            .filter(|p| p.is_file() && is_image(p))
            .collect()
    };
    if files.is_empty() {
        return Err(FrameError::NoFrames {
            spec: spec.to_path_buf(),
        });
    }
    files.sort_by(|a, b| {
        let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
        natural_cmp(&name(a).unwrap_or_default(), &name(b).unwrap_or_default())
    });
    Ok(files)
}

/// Width and height of an image file, reading only its header.
pub fn frame_size(path: &Path) -> Result<(u32, u32), FrameError> {
    let unreadable = |message: String| FrameError::Unreadable {
        path: path.to_path_buf(),
        message,
    };
    image::ImageReader::open(path)
        .map_err(|e| unreadable(e.to_string()))?
        .with_guessed_format()
        .map_err(|e| unreadable(e.to_string()))?
        .into_dimensions()
        .map_err(|e| unreadable(e.to_string()))
}

/// Decodes an image file (frame or mask, `crate::scene::masks`); with
/// `expected`, an image of another size is [`FrameError::WrongSize`],
/// found from the file's header before any pixel is decoded (so a header
/// claiming a huge image allocates nothing).
pub(crate) fn decode_image(
    path: &Path,
    expected: Option<(u32, u32)>,
) -> Result<image::DynamicImage, FrameError> {
    let unreadable = |message: String| FrameError::Unreadable {
        path: path.to_path_buf(),
        message,
    };
    let wrong_size = |(expected_w, expected_h): (u32, u32), (found_w, found_h): (u32, u32)| {
        FrameError::WrongSize {
            path: path.to_path_buf(),
            expected_w,
            expected_h,
            found_w,
            found_h,
        }
    };
    if let Some(expected) = expected {
        let found = frame_size(path)?;
        if found != expected {
            return Err(wrong_size(expected, found));
        }
    }
    let image = image::ImageReader::open(path)
        .map_err(|e| unreadable(e.to_string()))?
        .with_guessed_format()
        .map_err(|e| unreadable(e.to_string()))?
        .decode()
        .map_err(|e| unreadable(e.to_string()))?;
    let found = (image.width(), image.height());
    match expected {
        Some(expected) if expected != found => Err(wrong_size(expected, found)),
        _ => Ok(image),
    }
}

/// Decodes one frame to RGBA in [0, 1], `value / max` (module doc); with `expected`, a frame
/// of another size is [`FrameError::WrongSize`].
pub fn load_frame(path: &Path, expected: Option<(u32, u32)>) -> Result<Frame, FrameError> {
    let image = decode_image(path, expected)?;
    let (width, height) = (image.width(), image.height());
    let pixels = if image.color().bytes_per_pixel() / image.color().channel_count() > 1 {
        image
            .to_rgba16()
            .pixels()
            .map(|p| p.0.map(|v| v as f32 / 65535.0))
            .collect()
    } else {
        image
            .to_rgba8()
            .pixels()
            .map(|p| p.0.map(|v| v as f32 / 255.0))
            .collect()
    };
    Ok(Frame {
        width,
        height,
        pixels,
    })
}

fn check_count(path: &Path, width: u32, height: u32, found: usize) -> Result<(), FrameError> {
    if found != width as usize * height as usize || width == 0 || height == 0 {
        return Err(FrameError::PixelCount {
            path: path.to_path_buf(),
            width,
            height,
            found,
        });
    }
    Ok(())
}

/// Encodes RGBA pixels as samples of `max` levels per channel with
/// [`quantised`].
fn encode_samples(pixels: &[[f32; 4]], max: f32) -> impl Iterator<Item = f32> + '_ {
    pixels
        .iter()
        .flat_map(move |p| p.map(|v| quantised(v, max)))
}

/// Wraps encoded samples into an image of `width × height`.
fn image_from_samples<P: image::Pixel>(
    path: &Path,
    width: u32,
    height: u32,
    samples: Vec<P::Subpixel>,
) -> Result<image::ImageBuffer<P, Vec<P::Subpixel>>, FrameError> {
    let found = samples.len() / 4;
    image::ImageBuffer::from_raw(width, height, samples).ok_or_else(|| FrameError::PixelCount {
        path: path.to_path_buf(),
        width,
        height,
        found,
    })
}

/// Writes RGBA pixels as an 8-bit PNG, atomically
/// ([`crate::io::png::write_png`]): `round(255 · clamp(v, 0, 1))` per
/// channel (module doc); NaN becomes 0.
pub fn write_png(
    path: &Path,
    width: u32,
    height: u32,
    pixels: &[[f32; 4]],
) -> Result<(), FrameError> {
    check_count(path, width, height, pixels.len())?;
    let samples = encode_samples(pixels, 255.0).map(|v| v as u8).collect();
    Ok(png::write_png(
        path,
        &image_from_samples::<image::Rgba<u8>>(path, width, height, samples)?,
    )?)
}

/// [`write_png`] at 16 bits per channel (for synthesised references).
/// Note that the GPU image loss keeps reference frames at 8 bits
/// ([`crate::loss::ReferenceFrame`]), so the extra precision does not reach
/// the loss.
#[cfg(feature = "reference")]
pub fn write_png16(
    path: &Path,
    width: u32,
    height: u32,
    pixels: &[[f32; 4]],
) -> Result<(), FrameError> {
    check_count(path, width, height, pixels.len())?;
    let samples = encode_samples(pixels, 65535.0).map(|v| v as u16).collect();
    Ok(png::write_png(
        path,
        &image_from_samples::<image::Rgba<u16>>(path, width, height, samples)?,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_compares_numbers() {
        let mut names = vec!["f10.png", "f2.png", "f1.png", "f02.png", "a.png"];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            vec!["a.png", "f1.png", "f2.png", "f02.png", "f10.png"]
        );
    }

    #[test]
    fn samples_are_values_times_levels_without_a_curve() {
        let px = [[0.5, 0.0, 1.0, 0.25], [f32::NAN, -1.0, 2.0, 1.0]];
        let s: Vec<f32> = encode_samples(&px, 255.0).collect();
        assert_eq!(s, vec![128.0, 0.0, 255.0, 64.0, 0.0, 0.0, 255.0, 255.0]);
    }
}
