//! Host mirrors of the GPU records shared by the deformation kernels
//! (shaders/deform/rigid_fit.wgsl declares the same structs).

use crate::gpu::wgsl_layout::wgsl_mirror;
use bytemuck::{Pod, Zeroable};

/// Uniforms of `deform/gaussian_motion` and `deform/gaussian_motion_adjoint`
/// (`DeformUniforms` in shaders/deform/rigid_fit.wgsl, 32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct DeformUniforms {
    /// The simulation cube's lower corner (world units) and its side.
    pub box_min_side: [f32; 4],
    /// Number of deformed Gaussians.
    pub gaussian_count: u32,
    /// Number of drivers (MPM particles).
    pub driver_count: u32,
    /// Padding to 32 bytes.
    pub _pad: [u32; 2],
}

wgsl_mirror!(DeformUniforms => "DeformUniforms" in ["deform/rigid_fit"] {
    box_min_side,
    gaussian_count,
    driver_count,
    _pad,
});

/// One deformed Gaussian on the GPU (`GaussianRecord` in
/// shaders/deform/rigid_fit.wgsl, 64 bytes, WGSL storage layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct GaussianRecord {
    /// Its drivers 0–3.
    pub drivers_lo: [u32; 4],
    /// Its drivers 4–7.
    pub drivers_hi: [u32; 4],
    /// Rest centre, normalised units.
    pub rest_centre: [f32; 3],
    /// Its splat's index in the splat buffers.
    pub splat: u32,
    /// Rest rotation, raw quaternion (w, x, y, z).
    pub rest_rotation: [f32; 4],
}

wgsl_mirror!(GaussianRecord => "GaussianRecord" in ["deform/rigid_fit"] {
    drivers_lo,
    drivers_hi,
    rest_centre,
    splat,
    rest_rotation,
});

const _: () = assert!(std::mem::size_of::<GaussianRecord>() == 64);
const _: () = assert!(std::mem::size_of::<DeformUniforms>() == 32);
