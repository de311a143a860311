//! Camera gradients of a frame (shaders/splat/camera_adjoint.wgsl): one
//! thread per splat, from the blend's 2D gradients to that splat's share of
//! dL/d(world-to-camera rotation, translation, focal lengths, principal
//! point), summed over splats on the host in f64 ([`CameraGradient`]). This
//! is how gsplat differentiates its view matrix, and what `physfit align`
//! fits a view's camera with. The splats are held fixed.

use crate::gpu::binding_table::named_buffers;
use crate::gpu::{Binding, ComputeKernel, GpuBuffer, GpuContext, GpuError, KernelSpec};

/// Floats per splat in the kernel's output: dL/dW row-major (9), dL/dt (3),
/// dL/dfx, dL/dfy, dL/dcx, dL/dcy.
pub const CAMERA_GRADIENT_STRIDE: u32 = 16;

/// Gradient of a loss with respect to a [`crate::scene::Camera`]'s
/// parameters, at the camera the frame was rendered with.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CameraGradient {
    /// dL/dR for the world-to-camera rotation `R`, `[row][column]` (the
    /// matrix entries taken as independent: project onto a rotation's
    /// tangent space to move along rotations).
    pub rotation: [[f64; 3]; 3],
    /// dL/dt for the world-to-camera translation.
    pub translation: [f64; 3],
    /// dL/dfx, dL/dfy.
    pub focal: [f64; 2],
    /// dL/dcx, dL/dcy.
    pub principal: [f64; 2],
}

impl CameraGradient {
    /// Sums the kernel's per-splat rows (`CAMERA_GRADIENT_STRIDE` floats
    /// each) in f64, in splat order (deterministic).
    pub fn sum_rows(rows: &[f32]) -> Self {
        let mut total = [0.0f64; CAMERA_GRADIENT_STRIDE as usize];
        for row in rows.chunks_exact(CAMERA_GRADIENT_STRIDE as usize) {
            for (t, &v) in total.iter_mut().zip(row) {
                *t += f64::from(v);
            }
        }
        let mut g = Self::default();
        for r in 0..3 {
            for c in 0..3 {
                g.rotation[r][c] = total[3 * r + c];
            }
            g.translation[r] = total[9 + r];
        }
        g.focal = [total[12], total[13]];
        g.principal = [total[14], total[15]];
        g
    }

    /// True when every entry is finite.
    pub fn is_finite(&self) -> bool {
        self.rotation.iter().flatten().all(|v| v.is_finite())
            && self.translation.iter().all(|v| v.is_finite())
            && self.focal.iter().all(|v| v.is_finite())
            && self.principal.iter().all(|v| v.is_finite())
    }
}

/// Buffers of one dispatch, named.
pub struct CameraAdjointBuffers<'a> {
    /// [`super::uniforms::RasterUniforms`] of the frame.
    pub uniforms: &'a GpuBuffer,
    /// Splat means.
    pub means: &'a GpuBuffer,
    /// Raw quaternions.
    pub rotations: &'a GpuBuffer,
    /// Log-scales.
    pub log_scales: &'a GpuBuffer,
    /// SH coefficients (the view direction's gradient moves the camera centre).
    pub sh: &'a GpuBuffer,
    /// Tile rectangles from the forward (empty = culled → zero).
    pub tile_rects: &'a GpuBuffer,
    /// 2D gradients from [`super::blend_adjoint::BlendAdjoint`].
    pub grad_2d: &'a GpuBuffer,
    /// Output, [`CAMERA_GRADIENT_STRIDE`] floats per splat (overwritten).
    pub grad_camera: &'a GpuBuffer,
}

/// The camera-gradient kernel.
pub struct CameraAdjoint {
    kernel: ComputeKernel,
}

impl CameraAdjoint {
    /// Entry point `main` of shaders/splat/camera_adjoint.wgsl and its bindings.
    pub const SPEC: KernelSpec = KernelSpec {
        shader: "splat/camera_adjoint",
        entry: "main",
        bindings: &[
            Binding::uniform("u", 0),
            Binding::read("means", 1),
            Binding::read("rotations", 2),
            Binding::read("log_scales", 3),
            Binding::read("sh", 5),
            Binding::read("tile_rects", 6),
            Binding::read("grad_2d", 7),
            Binding::read_write("grad_camera", 8),
        ],
    };

    /// Compiles the kernel.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            kernel: ComputeKernel::new(ctx, &Self::SPEC)?,
        })
    }

    /// Records the camera gradients of `count` splats.
    pub fn dispatch(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        b: &CameraAdjointBuffers,
        count: u32,
    ) {
        let bg = self.kernel.bind(
            ctx,
            &named_buffers![
                b.uniforms => "u",
                b.means,
                b.rotations,
                b.log_scales,
                b.sh,
                b.tile_rects,
                b.grad_2d,
                b.grad_camera,
            ],
        );
        self.kernel.dispatch_threads(encoder, &bg, count);
    }
}
