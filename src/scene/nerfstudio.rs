//! Cameras from a nerfstudio `transforms.json` (also the instant-ngp /
//! Blender layout with `camera_angle_x`).
//!
//! nerfstudio stores camera-to-world matrices in OpenGL axes (x right, y up,
//! z backward). physfit's cameras are world-to-camera in OpenCV axes (x
//! right, y down, z forward; docs/design.md § Units and frames): negate the y and
//! z axis columns of the rotation, then invert (`R = R_c2wᵀ`, `t = −R·c`).
//! Intrinsics `fl_x fl_y cx cy w h` come from the frame when it has them,
//! else from the top level; `fl_y` defaults to `fl_x`, `cx, cy` to the image
//! centre, and `fl_x` may be derived from `camera_angle_x`
//! (`fl_x = w / (2 tan(angle/2))`). Lens distortion is ignored with a
//! warning. The transforms' world must be the `.ply`'s world: nerfstudio's
//! own exports apply the dataparser transform, so export the splats with it
//! undone, or give the pose inline.

use std::path::Path;

use glam::{Mat3, Vec3};
use serde_json::Value;

/// Intrinsics and world-to-camera pose of one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct NerfstudioCamera {
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Focal lengths and principal point, pixels.
    pub fx: f64,
    /// Focal length y.
    pub fy: f64,
    /// Principal point x.
    pub cx: f64,
    /// Principal point y.
    pub cy: f64,
    /// World-to-camera rotation (OpenCV).
    pub rotation: Mat3,
    /// World-to-camera translation (OpenCV).
    pub translation: Vec3,
    /// The frame's image path as written in the file.
    pub file_path: Option<String>,
}

/// Reads frame `index` of a nerfstudio `transforms.json`; errors are plain
/// messages that the caller wraps with the field name.
pub fn read_transforms(path: &Path, index: usize) -> Result<NerfstudioCamera, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", crate::io::shown::shown(path)))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", crate::io::shown::shown(path)))?;
    let frames = json
        .get("frames")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{} has no `frames` list", crate::io::shown::shown(path)))?;
    let frame = frames.get(index).ok_or_else(|| {
        format!(
            "{} has {} frames, so frame index {index} does not exist",
            crate::io::shown::shown(path),
            frames.len()
        )
    })?;
    let number = |key: &str| -> Option<f64> {
        frame
            .get(key)
            .or_else(|| json.get(key))
            .and_then(Value::as_f64)
    };
    let width = number("w").ok_or_else(|| {
        format!(
            "{}: no image width `w` (frame {index} or top level)",
            crate::io::shown::shown(path)
        )
    })?;
    let height = number("h").ok_or_else(|| {
        format!(
            "{}: no image height `h` (frame {index} or top level)",
            crate::io::shown::shown(path)
        )
    })?;
    if !(width >= 1.0 && height >= 1.0 && width <= u32::MAX as f64 && height <= u32::MAX as f64) {
        return Err(format!(
            "{}: image size {width}×{height} is not valid",
            crate::io::shown::shown(path)
        ));
    }
    let fx = match number("fl_x") {
        Some(f) => f,
        None => {
            let angle = number("camera_angle_x").ok_or_else(|| {
                format!(
                    "{}: no focal length `fl_x` or `camera_angle_x`",
                    crate::io::shown::shown(path)
                )
            })?;
            width / (2.0 * (angle / 2.0).tan())
        }
    };
    let fy = number("fl_y").unwrap_or(fx);
    let cx = number("cx").unwrap_or(width / 2.0);
    let cy = number("cy").unwrap_or(height / 2.0);
    for key in ["k1", "k2", "k3", "k4", "p1", "p2"] {
        if number(key).is_some_and(|v| v != 0.0) {
            log::warn!(
                "{}: lens distortion `{key}` ignored (physfit uses a pinhole camera)",
                crate::io::shown::shown(path)
            );
        }
    }
    let m = frame
        .get("transform_matrix")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            format!(
                "{}: frame {index} has no `transform_matrix`",
                crate::io::shown::shown(path)
            )
        })?;
    let mut c2w = [[0.0f64; 4]; 4];
    let bad_matrix = || {
        format!(
            "{}: frame {index}: `transform_matrix` must be 4×4 (or 3×4) numbers",
            crate::io::shown::shown(path)
        )
    };
    if m.len() < 3 {
        return Err(bad_matrix());
    }
    for (r, row) in m.iter().take(3).enumerate() {
        let row = row.as_array().ok_or_else(bad_matrix)?;
        if row.len() != 4 {
            return Err(bad_matrix());
        }
        for (c, v) in row.iter().enumerate() {
            c2w[r][c] = v
                .as_f64()
                .filter(|v| v.is_finite())
                .ok_or_else(bad_matrix)?;
        }
    }
    // Columns of the OpenGL camera-to-world rotation; flip y and z to OpenCV.
    let col = |c: usize, sign: f64| {
        Vec3::new(
            (sign * c2w[0][c]) as f32,
            (sign * c2w[1][c]) as f32,
            (sign * c2w[2][c]) as f32,
        )
    };
    let r_c2w = Mat3::from_cols(col(0, 1.0), col(1, -1.0), col(2, -1.0));
    let centre = Vec3::new(c2w[0][3] as f32, c2w[1][3] as f32, c2w[2][3] as f32);
    let rotation = r_c2w.transpose();
    Ok(NerfstudioCamera {
        width: width as u32,
        height: height as u32,
        fx,
        fy,
        cx,
        cy,
        rotation,
        translation: -(rotation * centre),
        file_path: frame
            .get("file_path")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}
