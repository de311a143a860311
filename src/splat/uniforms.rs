//! The per-frame uniforms every splat kernel reads (`RasterUniforms` in
//! shaders/splat/types.wgsl): camera, image and tile grid, background, the
//! projection-Jacobian clamp limits and the splat / intersection counts.

use bytemuck::{Pod, Zeroable};

use crate::gpu::wgsl_layout::wgsl_mirror;
use crate::scene::Camera;

/// Side of a square tile in pixels (docs/design.md § Gaussian splatting).
pub const TILE_SIZE: u32 = 16;

/// Factor on tan(half field of view) at which the projection Jacobian clamps
/// `x/z` and `y/z` (gsplat's `persp_proj`): `limit_x = 1.3 · 0.5 · W / fx`.
pub const FOV_CLAMP: f32 = 1.3;

/// Mirror of `RasterUniforms` in shaders/splat/types.wgsl (144 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct RasterUniforms {
    /// Rows of the world-to-camera rotation, translation in the 4th entry.
    pub world_to_camera: [[f32; 4]; 3],
    /// Camera centre in world coordinates (4th entry unused).
    pub camera_position: [f32; 4],
    /// fx, fy in pixels.
    pub focal: [f32; 2],
    /// cx, cy in pixels.
    pub principal: [f32; 2],
    /// Width, height in pixels.
    pub image_size: [u32; 2],
    /// Tiles across, tiles down.
    pub tile_count: [u32; 2],
    /// Background RGB (4th entry unused).
    pub background: [f32; 4],
    /// Near plane (camera z); splats with z < near are culled.
    pub near: f32,
    /// Clamp of x/z in the projection Jacobian.
    pub limit_x: f32,
    /// Clamp of y/z in the projection Jacobian.
    pub limit_y: f32,
    /// Number of splats.
    pub splat_count: u32,
    /// SH degree 0..=3.
    pub sh_degree: u32,
    /// `(sh_degree + 1)²`.
    pub coeffs_per_splat: u32,
    /// Number of (tile, splat) intersections (0 until counted).
    pub intersection_count: u32,
    /// Padding to a multiple of 16 bytes.
    pub _pad: u32,
}

wgsl_mirror!(RasterUniforms => "RasterUniforms" in ["splat/types"] {
    world_to_camera,
    camera_position,
    focal,
    principal,
    image_size,
    tile_count,
    background,
    near,
    limit_x,
    limit_y,
    splat_count,
    sh_degree,
    coeffs_per_splat,
    intersection_count,
    _pad,
});

/// Tiles across and down for a `width × height` image.
pub fn tile_count(width: u32, height: u32) -> [u32; 2] {
    [width.div_ceil(TILE_SIZE), height.div_ceil(TILE_SIZE)]
}

impl RasterUniforms {
    /// Uniforms for rendering `splat_count` splats of SH degree `sh_degree`
    /// with `camera` over `background`.
    pub fn new(camera: &Camera, background: [f32; 3], splat_count: u32, sh_degree: u32) -> Self {
        let r = camera.rotation;
        let t = camera.translation;
        let row = |i: usize| [r.row(i).x, r.row(i).y, r.row(i).z, t[i]];
        let position = camera.position();
        Self {
            world_to_camera: [row(0), row(1), row(2)],
            camera_position: [position.x, position.y, position.z, 0.0],
            focal: [camera.fx, camera.fy],
            principal: [camera.cx, camera.cy],
            image_size: [camera.width, camera.height],
            tile_count: tile_count(camera.width, camera.height),
            background: [background[0], background[1], background[2], 0.0],
            near: camera.near,
            limit_x: FOV_CLAMP * 0.5 * camera.width as f32 / camera.fx,
            limit_y: FOV_CLAMP * 0.5 * camera.height as f32 / camera.fy,
            splat_count,
            sh_degree,
            coeffs_per_splat: (sh_degree + 1) * (sh_degree + 1),
            intersection_count: 0,
            _pad: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_wgsl() {
        assert_eq!(std::mem::size_of::<RasterUniforms>(), 144);
        assert_eq!(tile_count(123, 82), [8, 6]);
    }
}
