//! `--orbit DEGREES`: a scene camera carried around
//! the object's centre, about the camera's own up direction (its image's
//! up, `−` its y axis in world coordinates) through that centre. The whole
//! pose turns rigidly, so the camera keeps its distance from the centre,
//! its height along the axis and the way it looks at the object; at 0° it
//! is the scene camera itself.

use glam::{Mat3, Vec3};

use crate::scene::{Camera, Scene};

/// The centre of the simulated splats' bounding box at rest (world units):
/// what the camera circles.
pub fn object_centre(scene: &Scene) -> Vec3 {
    let means = &scene.gaussians().means;
    let (lo, hi) = scene.simulated_indices().iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), &i| {
            let p = Vec3::from(means[i as usize]);
            (lo.min(p), hi.max(p))
        },
    );
    0.5 * (lo + hi)
}

/// `camera` turned by `degrees` about its up direction through `centre`
/// (module doc).
pub fn orbit_camera(camera: &Camera, centre: Vec3, degrees: f32) -> Camera {
    let up = -camera.rotation.row(1);
    let turn = Mat3::from_axis_angle(up.normalize(), degrees.to_radians());
    let position = centre + turn * (camera.position() - centre);
    let rotation = camera.rotation * turn.transpose();
    Camera {
        rotation,
        translation: -(rotation * position),
        ..camera.clone()
    }
}

/// The angle of frame `k` of `frames` (a frame count, the rest frame 0
/// included) on an orbit of `degrees`: `degrees · k / frames`, so that a
/// full turn loops without repeating a frame.
pub fn orbit_angle(degrees: f32, k: usize, frames: usize) -> f32 {
    degrees * k as f32 / frames.max(1) as f32
}
