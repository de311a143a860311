//! The looping GIF of a view (`physfit render --params`), written with the
//! `image` crate's encoder frame by frame as the run renders them. GIF
//! delays are whole centiseconds, so a scene's fps is shown at
//! `100 / round(100 / fps)` fps ([`gif_fps`]): 24 fps becomes 25, 30
//! stays 33.3.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use image::codecs::gif::{GifEncoder, Repeat};
use image::{Delay, RgbImage, RgbaImage};

/// The GIF could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write the GIF: {message}", crate::io::shown::shown(path))]
pub struct GifError {
    /// The GIF file.
    pub path: PathBuf,
    /// The encoder's or file system's message.
    pub message: String,
}

/// The delay per frame, whole centiseconds (≥ 2: most viewers slow down
/// shorter delays to 10 cs).
pub fn gif_delay_centiseconds(fps: f64) -> u32 {
    ((100.0 / fps).round() as u32).max(2)
}

/// The frame rate a GIF shows the scene's `fps` at.
pub fn gif_fps(fps: f64) -> f64 {
    100.0 / gif_delay_centiseconds(fps) as f64
}

/// A GIF being written, one frame at a time, looping forever.
pub struct GifSequence {
    encoder: GifEncoder<BufWriter<File>>,
    delay: Delay,
    path: PathBuf,
}

impl GifSequence {
    /// Creates `path` for frames shown at `fps` ([`gif_fps`]).
    pub fn create(path: &Path, fps: f64) -> Result<Self, GifError> {
        let fail = |e: &dyn std::fmt::Display| GifError {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let file = File::create(path).map_err(|e| fail(&e))?;
        let mut encoder = GifEncoder::new_with_speed(BufWriter::new(file), 10);
        encoder.set_repeat(Repeat::Infinite).map_err(|e| fail(&e))?;
        Ok(Self {
            encoder,
            delay: Delay::from_numer_denom_ms(10 * gif_delay_centiseconds(fps), 1),
            path: path.to_path_buf(),
        })
    }

    /// Appends one frame.
    pub fn push(&mut self, image: &RgbImage) -> Result<(), GifError> {
        let rgba: RgbaImage = image::DynamicImage::ImageRgb8(image.clone()).into_rgba8();
        self.encoder
            .encode_frame(image::Frame::from_parts(rgba, 0, 0, self.delay))
            .map_err(|e| GifError {
                path: self.path.clone(),
                message: e.to_string(),
            })
    }
}
