//! Reference frames: PNG/JPEG sequences decoded to linear RGBA.
//!
//! Colour convention: image files are sRGB-encoded; the rasterizer and the
//! loss work in linear RGB. Loading applies the exact sRGB EOTF
//! (IEC 61966-2-1: `c ≤ 0.04045 → c/12.92`, else `((c+0.055)/1.055)^2.4`) to
//! R, G and B; alpha is stored linearly and stays as is; images without alpha
//! get alpha 1; 16-bit PNGs keep their 16-bit precision. Renders go the other
//! way through [`write_png_srgb`] (the inverse curve, 8-bit) or
//! [`write_png_srgb16`]. Pixels are row-major from the top-left corner,
//! straight (not premultiplied) alpha.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::gpu::{GpuBuffer, GpuContext, GpuError};
use crate::scene::atomic_write::write_atomic;

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
    #[error("{path}: cannot write image: {message}")]
    Write {
        /// The destination.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// One decoded frame in linear RGBA.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width × height` linear RGBA pixels, row-major from the top left.
    pub pixels: Vec<[f32; 4]>,
}

/// The sRGB EOTF: encoded value in [0, 1] → linear.
pub fn srgb_to_linear(c: f32) -> f32 {
    let c = c as f64;
    (if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }) as f32
}

/// The inverse sRGB EOTF: linear value → encoded, both in [0, 1]; input is
/// clamped to [0, 1] and NaN maps to 0.
pub fn linear_to_srgb(l: f32) -> f32 {
    let l = if l.is_nan() {
        0.0
    } else {
        l.clamp(0.0, 1.0) as f64
    };
    (if l <= 0.0031308 {
        l * 12.92
    } else {
        1.055 * l.powf(1.0 / 2.4) - 0.055
    }) as f32
}

fn srgb8_table() -> &'static [f32; 256] {
    static TABLE: OnceLock<[f32; 256]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|i| srgb_to_linear(i as f32 / 255.0)))
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

/// Decodes one frame to linear RGBA (module doc); with `expected`, a frame
/// of another size is [`FrameError::WrongSize`].
pub fn load_frame(path: &Path, expected: Option<(u32, u32)>) -> Result<Frame, FrameError> {
    let unreadable = |message: String| FrameError::Unreadable {
        path: path.to_path_buf(),
        message,
    };
    let image = image::ImageReader::open(path)
        .map_err(|e| unreadable(e.to_string()))?
        .with_guessed_format()
        .map_err(|e| unreadable(e.to_string()))?
        .decode()
        .map_err(|e| unreadable(e.to_string()))?;
    let (width, height) = (image.width(), image.height());
    if let Some((ew, eh)) = expected {
        if (ew, eh) != (width, height) {
            return Err(FrameError::WrongSize {
                path: path.to_path_buf(),
                expected_w: ew,
                expected_h: eh,
                found_w: width,
                found_h: height,
            });
        }
    }
    let pixels = if image.color().bytes_per_pixel() / image.color().channel_count() > 1 {
        image
            .to_rgba16()
            .pixels()
            .map(|p| {
                let c = |v: u16| srgb_to_linear(v as f32 / 65535.0);
                [c(p[0]), c(p[1]), c(p[2]), p[3] as f32 / 65535.0]
            })
            .collect()
    } else {
        let table = srgb8_table();
        image
            .to_rgba8()
            .pixels()
            .map(|p| {
                [
                    table[p[0] as usize],
                    table[p[1] as usize],
                    table[p[2] as usize],
                    p[3] as f32 / 255.0,
                ]
            })
            .collect()
    };
    Ok(Frame {
        width,
        height,
        pixels,
    })
}

/// Uploads frames (all the same size) back to back into one labelled
/// storage buffer of `[f32; 4]` pixels: frame `k`'s pixel `(x, y)` is
/// element `k·w·h + y·w + x`.
pub fn upload_frames(
    ctx: &GpuContext,
    label: &str,
    frames: &[Frame],
) -> Result<GpuBuffer, GpuError> {
    let mut all: Vec<[f32; 4]> = Vec::with_capacity(frames.iter().map(|f| f.pixels.len()).sum());
    for f in frames {
        all.extend_from_slice(&f.pixels);
    }
    ctx.storage_from_slice(label, &all)
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

fn encode_and_write<P>(
    path: &Path,
    image: image::ImageBuffer<P, Vec<P::Subpixel>>,
) -> Result<(), FrameError>
where
    P: image::Pixel + image::PixelWithColorType,
    [P::Subpixel]: image::EncodableLayout,
{
    let err = |message: String| FrameError::Write {
        path: path.to_path_buf(),
        message,
    };
    let mut bytes = std::io::Cursor::new(Vec::new());
    image
        .write_to(&mut bytes, image::ImageFormat::Png)
        .map_err(|e| err(e.to_string()))?;
    write_atomic(path, bytes.get_ref()).map_err(|e| err(e.to_string()))
}

/// Encodes linear RGBA pixels as sRGB samples of `max` levels (255 or
/// 65535): RGB through [`linear_to_srgb`], alpha clamped to [0, 1] with NaN
/// as 0.
fn encode_srgb_samples(pixels: &[[f32; 4]], max: f32) -> impl Iterator<Item = f32> + '_ {
    let alpha = |a: f32| if a.is_nan() { 0.0 } else { a.clamp(0.0, 1.0) };
    pixels.iter().flat_map(move |p| {
        [
            linear_to_srgb(p[0]),
            linear_to_srgb(p[1]),
            linear_to_srgb(p[2]),
            alpha(p[3]),
        ]
        .map(|v| (v * max).round())
    })
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

/// Writes linear RGBA pixels as an 8-bit sRGB PNG, atomically: RGB through
/// [`linear_to_srgb`], alpha clamped to [0, 1]; NaN becomes 0.
pub fn write_png_srgb(
    path: &Path,
    width: u32,
    height: u32,
    pixels: &[[f32; 4]],
) -> Result<(), FrameError> {
    check_count(path, width, height, pixels.len())?;
    let samples = encode_srgb_samples(pixels, 255.0)
        .map(|v| v as u8)
        .collect();
    encode_and_write(
        path,
        image_from_samples::<image::Rgba<u8>>(path, width, height, samples)?,
    )
}

/// [`write_png_srgb`] at 16 bits per channel (for synthesised references,
/// where 8-bit quantisation would add noise to the loss).
pub fn write_png_srgb16(
    path: &Path,
    width: u32,
    height: u32,
    pixels: &[[f32; 4]],
) -> Result<(), FrameError> {
    check_count(path, width, height, pixels.len())?;
    let samples = encode_srgb_samples(pixels, 65535.0)
        .map(|v| v as u16)
        .collect();
    encode_and_write(
        path,
        image_from_samples::<image::Rgba<u16>>(path, width, height, samples)?,
    )
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
    fn srgb_curve_inverts_and_is_continuous() {
        for i in 0..=1000 {
            let c = i as f32 / 1000.0;
            assert!((linear_to_srgb(srgb_to_linear(c)) - c).abs() < 2e-6, "{c}");
        }
        // Known values of the exact curve.
        assert!((srgb_to_linear(0.5) - 0.214_041_14).abs() < 1e-6);
        assert!((srgb_to_linear(0.04045) - 0.04045 / 12.92).abs() < 1e-9);
        assert_eq!(linear_to_srgb(f32::NAN), 0.0);
    }
}
