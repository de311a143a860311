//! Camera and frame edits shared by the alignment tests: a pose turned and
//! shifted by a known error, a pose as a scene's inline camera, and frames
//! re-recorded through a colour change (a video's exposure).

use std::path::Path;

use glam::{Mat3, Vec3};
use image::{Rgb, RgbImage};
use physfit::io::png::write_png;
use physfit::scene::frames::load_frame;

/// `(rotation, translation)` (world to camera) turned by `degrees` about
/// `axis` (camera frame, about the camera's centre) with the centre moved
/// by `shift` (world units).
pub fn perturbed(
    (rotation, translation): (Mat3, Vec3),
    axis: Vec3,
    degrees: f32,
    shift: Vec3,
) -> (Mat3, Vec3) {
    let centre = -(rotation.transpose() * translation) + shift;
    let r = Mat3::from_axis_angle(axis.normalize(), degrees.to_radians()) * rotation;
    (r, -(r * centre))
}

/// `[x, y, z]` as TOML.
pub fn toml_vec(v: Vec3) -> String {
    format!("[{}, {}, {}]", v.x, v.y, v.z)
}

/// A `[views.camera]` pose as inline `rotation` rows and `translation`.
pub fn inline_pose(rotation: Mat3, translation: Vec3) -> String {
    let rows: Vec<String> = (0..3).map(|i| toml_vec(rotation.row(i))).collect();
    format!(
        "rotation = [{}]\ntranslation = {}",
        rows.join(", "),
        toml_vec(translation)
    )
}

/// Writes `from` as `to` with every channel `clamp(gain·c + offset)`, as a
/// camera with another exposure would have recorded it (8-bit RGB).
pub fn write_recoloured(from: &Path, to: &Path, gain: f32, offset: f32) {
    let frame = load_frame(from, None).unwrap();
    let mut img = RgbImage::new(frame.width, frame.height);
    for (p, q) in frame.pixels.iter().zip(img.pixels_mut()) {
        *q = Rgb([0, 1, 2].map(|c| ((gain * p[c] + offset).clamp(0.0, 1.0) * 255.0).round() as u8));
    }
    write_png(to, &img).unwrap();
}
