//! Pinhole camera, OpenCV axes (x right, y down, z forward), world-to-camera
//! extrinsics, pixel centres at +0.5 (docs/design.md § Units and frames): a world
//! point `p` maps to `p_c = R p + t`, pixel `(fx x/z + cx, fy y/z + cy)`, and
//! the centre of pixel (i, j) is at (i + 0.5, j + 0.5).

use glam::{Mat3, Vec3};

/// A pinhole camera.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Focal length in pixels, x.
    pub fx: f32,
    /// Focal length in pixels, y.
    pub fy: f32,
    /// Principal point x in pixels (image left edge = 0).
    pub cx: f32,
    /// Principal point y in pixels (image top edge = 0).
    pub cy: f32,
    /// World-to-camera rotation `R`.
    pub rotation: Mat3,
    /// World-to-camera translation `t`.
    pub translation: Vec3,
    /// Near plane distance (camera z); splats closer are culled.
    pub near: f32,
}

impl Camera {
    /// Camera centre in world coordinates: `-Rᵀ t`.
    pub fn position(&self) -> Vec3 {
        -(self.rotation.transpose() * self.translation)
    }

    /// The same camera rendering a `width × height` image. Pixels stay
    /// square: both focal lengths scale with the width ratio, so the
    /// horizontal field of view is kept and, for a different aspect ratio,
    /// the vertical one grows or shrinks (more or less of the scene above and
    /// below) instead of the image being stretched. The principal point keeps
    /// its relative position in the image.
    pub fn resized(&self, width: u32, height: u32) -> Camera {
        let sx = width as f32 / self.width as f32;
        let sy = height as f32 / self.height as f32;
        Camera {
            width,
            height,
            fx: self.fx * sx,
            fy: self.fy * sx,
            cx: self.cx * sx,
            cy: self.cy * sy,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resizing_keeps_pixels_square_and_the_horizontal_fov() {
        let cam = Camera {
            width: 512,
            height: 512,
            fx: 700.0,
            fy: 700.0,
            cx: 256.0,
            cy: 256.0,
            rotation: Mat3::IDENTITY,
            translation: Vec3::ZERO,
            near: 0.01,
        };
        let wide = cam.resized(1024, 576);
        assert_eq!((wide.fx, wide.fy), (1400.0, 1400.0));
        assert_eq!((wide.cx, wide.cy), (512.0, 288.0));
        let hfov = |c: &Camera| (c.width as f32 / (2.0 * c.fx)).atan();
        assert!((hfov(&cam) - hfov(&wide)).abs() < 1e-6);
    }

    #[test]
    fn position_inverts_the_extrinsics() {
        let rotation = Mat3::from_rotation_y(0.3) * Mat3::from_rotation_x(-0.2);
        let centre = Vec3::new(1.0, -2.0, 3.0);
        let cam = Camera {
            width: 10,
            height: 10,
            fx: 5.0,
            fy: 5.0,
            cx: 5.0,
            cy: 5.0,
            rotation,
            translation: -(rotation * centre),
            near: 0.01,
        };
        assert!((cam.position() - centre).length() < 1e-5);
    }
}
