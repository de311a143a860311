//! The coarse-to-fine pyramid `physfit align` fits through: the reference
//! frame (and its mask) box-filtered down by 2, 4, 8 … and the camera scaled
//! to each level. A pose error of a few degrees or tens of pixels has no
//! useful gradient at full resolution (the loss sees only the edges that
//! still overlap); at a coarse level the same error is a few pixels, inside
//! the basin, and each finer level starts where the coarser one ended.

use crate::io::Frame;
use crate::scene::masks::Mask;
use crate::scene::Camera;

/// The coarsest level's shorter side is at least this many pixels: below
/// it the SSIM window (11 px) covers most of the image.
pub const MIN_LEVEL_SIDE: u32 = 24;

/// One level: its size and scale relative to full resolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Downsampling factor (1 = full resolution).
    pub factor: u32,
}

impl Level {
    /// `camera` (full resolution) seen at this level: intrinsics scaled by
    /// the level's size ratio in each axis, so the same rays land on the
    /// same relative image positions.
    pub fn camera(&self, camera: &Camera) -> Camera {
        let sx = self.width as f32 / camera.width as f32;
        let sy = self.height as f32 / camera.height as f32;
        Camera {
            width: self.width,
            height: self.height,
            fx: camera.fx * sx,
            fy: camera.fy * sy,
            cx: camera.cx * sx,
            cy: camera.cy * sy,
            ..camera.clone()
        }
    }

    /// A full-resolution camera from `camera` at this level (the inverse of
    /// [`Level::camera`], for the original `width × height`).
    pub fn full_camera(&self, camera: &Camera, width: u32, height: u32) -> Camera {
        let sx = width as f32 / self.width as f32;
        let sy = height as f32 / self.height as f32;
        Camera {
            width,
            height,
            fx: camera.fx * sx,
            fy: camera.fy * sy,
            cx: camera.cx * sx,
            cy: camera.cy * sy,
            ..camera.clone()
        }
    }
}

/// The levels for a `width × height` image, coarsest first, full resolution
/// last; at most `max_levels` of them.
pub fn levels(width: u32, height: u32, max_levels: u32) -> Vec<Level> {
    let mut out = Vec::new();
    let mut factor = 1u32;
    while out.len() < max_levels.max(1) as usize {
        let (w, h) = (width.div_ceil(factor), height.div_ceil(factor));
        if factor > 1 && w.min(h) < MIN_LEVEL_SIDE {
            break;
        }
        out.push(Level {
            width: w,
            height: h,
            factor,
        });
        factor *= 2;
    }
    out.reverse();
    out
}

/// Source pixel range covered by level pixel `i` of `n` (of `full` pixels).
fn span(i: u32, n: u32, full: u32) -> (usize, usize) {
    let a = (u64::from(i) * u64::from(full) / u64::from(n)) as usize;
    let b = ((u64::from(i) + 1) * u64::from(full)).div_ceil(u64::from(n)) as usize;
    (a, b.max(a + 1).min(full as usize))
}

/// `frame` box-filtered to `level` (each level pixel the mean of the
/// full-resolution pixels it covers).
pub fn downsample_frame(frame: &Frame, level: &Level) -> Frame {
    if level.factor == 1 {
        return frame.clone();
    }
    let mut pixels = Vec::with_capacity((level.width * level.height) as usize);
    for j in 0..level.height {
        let (y0, y1) = span(j, level.height, frame.height);
        for i in 0..level.width {
            let (x0, x1) = span(i, level.width, frame.width);
            let mut sum = [0.0f64; 4];
            for y in y0..y1 {
                for x in x0..x1 {
                    let p = frame.pixels[y * frame.width as usize + x];
                    for c in 0..4 {
                        sum[c] += f64::from(p[c]);
                    }
                }
            }
            let n = ((y1 - y0) * (x1 - x0)) as f64;
            pixels.push(sum.map(|s| (s / n) as f32));
        }
    }
    Frame {
        width: level.width,
        height: level.height,
        pixels,
    }
}

/// `mask` at `level`: a level pixel counts when at least half of the
/// full-resolution pixels it covers do.
pub fn downsample_mask(mask: &Mask, level: &Level) -> Mask {
    if level.factor == 1 {
        return mask.clone();
    }
    let mut counts = Vec::with_capacity((level.width * level.height) as usize);
    for j in 0..level.height {
        let (y0, y1) = span(j, level.height, mask.height);
        for i in 0..level.width {
            let (x0, x1) = span(i, level.width, mask.width);
            let mut counted = 0;
            for y in y0..y1 {
                for x in x0..x1 {
                    counted += usize::from(mask.counts[y * mask.width as usize + x]);
                }
            }
            counts.push(2 * counted >= (y1 - y0) * (x1 - x0));
        }
    }
    Mask {
        width: level.width,
        height: level.height,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_halve_down_to_the_minimum_side() {
        let l = levels(256, 256, 8);
        let sizes: Vec<_> = l.iter().map(|l| (l.width, l.factor)).collect();
        assert_eq!(sizes, vec![(32, 8), (64, 4), (128, 2), (256, 1)]);
        assert_eq!(levels(123, 82, 8).len(), 2);
        assert_eq!(levels(256, 256, 2).len(), 2);
        assert_eq!(
            levels(16, 16, 4),
            vec![Level {
                width: 16,
                height: 16,
                factor: 1
            }]
        );
    }

    #[test]
    fn downsampling_averages_and_keeps_the_mean() {
        let frame = Frame {
            width: 5,
            height: 3,
            pixels: (0..15).map(|k| [k as f32 / 15.0, 0.5, 1.0, 1.0]).collect(),
        };
        let level = Level {
            width: 3,
            height: 2,
            factor: 2,
        };
        let small = downsample_frame(&frame, &level);
        assert_eq!(small.pixels.len(), 6);
        // The first level pixel covers columns 0–1 of rows 0–1.
        let expected = (0.0 + 1.0 + 5.0 + 6.0) / 4.0 / 15.0;
        assert!((small.pixels[0][0] - expected).abs() < 1e-6);
        assert!(small.pixels.iter().all(|p| p[1] == 0.5 && p[2] == 1.0));
    }

    #[test]
    fn a_level_camera_sees_the_same_rays() {
        let cam = Camera {
            width: 256,
            height: 200,
            fx: 300.0,
            fy: 310.0,
            cx: 120.0,
            cy: 100.0,
            rotation: glam::Mat3::IDENTITY,
            translation: glam::Vec3::ZERO,
            near: 0.01,
        };
        let level = levels(256, 200, 3)[0];
        let small = level.camera(&cam);
        assert_eq!((small.width, small.height), (64, 50));
        assert!((small.fx - 75.0).abs() < 1e-5 && (small.cy - 25.0).abs() < 1e-5);
        assert_eq!(level.full_camera(&small, 256, 200), cam);
    }
}
