//! Splat parameters and their gradients on the GPU, in the raw optimisable
//! parametrisation of 3DGS, as flat little-endian f32 arrays (no vec3
//! padding), splat-major:
//! - `means`: 3 per splat (world x, y, z);
//! - `rotations`: 4 per splat, quaternion (w, x, y, z), need not be unit
//!   (normalised in the projection; gradients are for the raw values);
//! - `log_scales`: 3 per splat; `opacity_logits`: 1 per splat;
//! - `sh`: `3·(degree+1)²` per splat, coefficient-major then RGB, DC first.
//!
//! Gradient buffers use exactly the same layouts.

use crate::gpu::{GpuBuffer, GpuContext, GpuError};
use crate::scene::Gaussians;

use super::buffer_growth::{placeholder, reserve};
use super::error::SplatError;

/// Splat parameters resident on the GPU (inputs of [`super::Rasterizer`]).
pub struct SplatBuffers {
    /// `f32 × 3` per splat.
    pub means: GpuBuffer,
    /// `f32 × 4` per splat (w, x, y, z).
    pub rotations: GpuBuffer,
    /// `f32 × 3` per splat.
    pub log_scales: GpuBuffer,
    /// `f32` per splat.
    pub opacity_logits: GpuBuffer,
    /// `f32 × 3·(sh_degree+1)²` per splat.
    pub sh: GpuBuffer,
    /// Number of splats.
    pub count: u32,
    /// SH degree 0..=3.
    pub sh_degree: u32,
}

/// Checks that the arrays of `g` agree with each other and with its SH degree.
pub fn validate_gaussians(g: &Gaussians) -> Result<(), SplatError> {
    let n = g.len();
    if g.sh_degree > 3 {
        return Err(SplatError::InvalidGaussians(format!(
            "sh_degree is {} but only degrees 0..=3 are supported",
            g.sh_degree
        )));
    }
    let lengths = [
        ("rotations", g.rotations.len(), n),
        ("log_scales", g.log_scales.len(), n),
        ("opacity_logits", g.opacity_logits.len(), n),
        ("sh", g.sh.len(), n * g.coeffs_per_splat()),
    ];
    for (name, got, want) in lengths {
        if got != want {
            return Err(SplatError::InvalidGaussians(format!(
                "{name} has {got} entries but {n} splats of SH degree {} need {want}",
                g.sh_degree
            )));
        }
    }
    if u32::try_from(n).is_err() {
        return Err(SplatError::InvalidGaussians(format!(
            "{n} splats is more than a u32 can count"
        )));
    }
    Ok(())
}

impl SplatBuffers {
    /// Uploads `gaussians` (validated first).
    pub fn upload(ctx: &GpuContext, gaussians: &Gaussians) -> Result<Self, SplatError> {
        validate_gaussians(gaussians)?;
        Self::upload_valid(ctx, gaussians).map_err(|e| {
            SplatError::from(e).in_scene(|| {
                format!(
                    "{} splats, SH degree {}",
                    gaussians.len(),
                    gaussians.sh_degree
                )
            })
        })
    }

    fn upload_valid(ctx: &GpuContext, gaussians: &Gaussians) -> Result<Self, crate::gpu::GpuError> {
        Ok(Self {
            means: ctx.storage_from_slice("splat means", &gaussians.means)?,
            rotations: ctx.storage_from_slice("splat rotations", &gaussians.rotations)?,
            log_scales: ctx.storage_from_slice("splat log scales", &gaussians.log_scales)?,
            opacity_logits: ctx
                .storage_from_slice("splat opacity logits", &gaussians.opacity_logits)?,
            sh: ctx.storage_from_slice("splat sh coefficients", &gaussians.sh)?,
            count: gaussians.len() as u32,
            sh_degree: gaussians.sh_degree,
        })
    }

    /// `(sh_degree + 1)²`.
    pub fn coeffs_per_splat(&self) -> u32 {
        (self.sh_degree + 1) * (self.sh_degree + 1)
    }
}

/// Gradients of a loss with respect to every splat parameter, same layouts
/// as [`SplatBuffers`], for [`SplatGradients::count`] splats. Culled splats
/// have zero gradients.
///
/// The buffers may be longer than `count` splats need: the rasterizer keeps
/// one set and grows it with headroom (see [`super::Rasterizer::backward`]).
/// Entries past `count` (per-splat stride as in [`SplatBuffers`]) are
/// unspecified; a kernel that binds these buffers must take the splat count
/// from its own uniforms, not from `arrayLength`.
pub struct SplatGradients {
    /// dL/d means.
    pub means: GpuBuffer,
    /// dL/d raw quaternions.
    pub rotations: GpuBuffer,
    /// dL/d log-scales.
    pub log_scales: GpuBuffer,
    /// dL/d opacity logits.
    pub opacity_logits: GpuBuffer,
    /// dL/d SH coefficients.
    pub sh: GpuBuffer,
    count: u32,
    coeffs_per_splat: u32,
}

/// [`SplatGradients`] read back to the host, in [`Gaussians`]' shapes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostGradients {
    /// dL/d means.
    pub means: Vec<[f32; 3]>,
    /// dL/d raw quaternions (w, x, y, z).
    pub rotations: Vec<[f32; 4]>,
    /// dL/d log-scales.
    pub log_scales: Vec<[f32; 3]>,
    /// dL/d opacity logits.
    pub opacity_logits: Vec<f32>,
    /// dL/d SH coefficients (RGB per coefficient).
    pub sh: Vec<[f32; 3]>,
}

impl SplatGradients {
    /// Allocates zeroed gradient buffers for `count` splats with `coeffs` SH
    /// coefficients each (exactly that size).
    pub fn zeroed(ctx: &GpuContext, count: u32, coeffs: u32) -> Result<Self, SplatError> {
        let n = count as usize;
        Ok(Self {
            means: ctx.storage_zeroed::<f32>("splat grad means", 3 * n)?,
            rotations: ctx.storage_zeroed::<f32>("splat grad rotations", 4 * n)?,
            log_scales: ctx.storage_zeroed::<f32>("splat grad log scales", 3 * n)?,
            opacity_logits: ctx.storage_zeroed::<f32>("splat grad opacity logits", n)?,
            sh: ctx.storage_zeroed::<f32>("splat grad sh coefficients", 3 * n * coeffs as usize)?,
            count,
            coeffs_per_splat: coeffs,
        })
    }

    /// 4-byte placeholders for 0 splats, grown by [`Self::reserve`].
    pub(crate) fn placeholders(ctx: &GpuContext) -> Result<Self, GpuError> {
        Ok(Self {
            means: placeholder(ctx, "splat grad means")?,
            rotations: placeholder(ctx, "splat grad rotations")?,
            log_scales: placeholder(ctx, "splat grad log scales")?,
            opacity_logits: placeholder(ctx, "splat grad opacity logits")?,
            sh: placeholder(ctx, "splat grad sh coefficients")?,
            count: 0,
            coeffs_per_splat: 1,
        })
    }

    /// Makes the buffers hold `count` splats with `coeffs` SH coefficients
    /// each (growing them with headroom when they do not; contents are then
    /// lost) and sets [`Self::count`] and [`Self::coeffs_per_splat`].
    pub(crate) fn reserve(
        &mut self,
        ctx: &GpuContext,
        count: u32,
        coeffs: u32,
    ) -> Result<(), GpuError> {
        let n = u64::from(count);
        reserve(ctx, &mut self.means, 3 * n, 4)?;
        reserve(ctx, &mut self.rotations, 4 * n, 4)?;
        reserve(ctx, &mut self.log_scales, 3 * n, 4)?;
        reserve(ctx, &mut self.opacity_logits, n, 4)?;
        reserve(ctx, &mut self.sh, 3 * n * u64::from(coeffs), 4)?;
        self.count = count;
        self.coeffs_per_splat = coeffs;
        Ok(())
    }

    /// Number of splats the gradients are for.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// SH coefficients per splat, `(sh_degree + 1)²`.
    pub fn coeffs_per_splat(&self) -> u32 {
        self.coeffs_per_splat
    }

    /// Reads the gradients of the [`Self::count`] splats back (waits for the
    /// GPU; for tests and tools, not for a fitting loop).
    pub fn read(&self, ctx: &GpuContext) -> Result<HostGradients, SplatError> {
        let n = self.count as usize;
        let mut means: Vec<[f32; 3]> = ctx.read_buffer(&self.means)?;
        let mut rotations: Vec<[f32; 4]> = ctx.read_buffer(&self.rotations)?;
        let mut log_scales: Vec<[f32; 3]> = ctx.read_buffer(&self.log_scales)?;
        let mut opacity_logits: Vec<f32> = ctx.read_buffer(&self.opacity_logits)?;
        let mut sh: Vec<[f32; 3]> = ctx.read_buffer(&self.sh)?;
        means.truncate(n);
        rotations.truncate(n);
        log_scales.truncate(n);
        opacity_logits.truncate(n);
        sh.truncate(n * self.coeffs_per_splat as usize);
        Ok(HostGradients {
            means,
            rotations,
            log_scales,
            opacity_logits,
            sh,
        })
    }
}
