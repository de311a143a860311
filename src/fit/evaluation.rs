//! What one call of [`super::FitProblem`] takes (a point in parameter
//! space and the frames and views it is compared on) and returns (the loss
//! with its terms, and the gradients).

use super::error::FitError;
use crate::gpu::{GpuBuffer, GpuContext};
use crate::loss::LossTerms;

/// A point in parameter space (host values; the layouts of
/// [`super::YoungsField`] and [`super::VelocityField`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parameters {
    /// `log10 E` parameters (normalised units).
    pub log10_youngs: Vec<f64>,
    /// Initial-velocity parameters (world units per second; rad/s for the
    /// angular part of [`super::VelocityField::Rigid`]).
    pub velocity: Vec<f64>,
    /// Poisson's ratio's unconstrained parameters `z`, `ν = 0.49·sigmoid(z)`
    /// ([`super::poisson`]), in the layout of the `log10 E` field (one, or
    /// one per region); empty when ν is not fitted (held at
    /// `material.poisson_ratio`, or at what
    /// [`super::FitProblem::set_poisson`] set).
    pub poisson: Vec<f64>,
}

/// The frames and views a call fits against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Frame indices, strictly increasing (frame 0 is the rest state: its
    /// loss is a constant).
    pub frames: Vec<usize>,
    /// View indices into [`crate::scene::Scene::views`], each with reference frames.
    pub views: Vec<usize>,
}

/// The loss terms of one frame and view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImageTerms {
    /// The frame.
    pub frame: usize,
    /// The view.
    pub view: usize,
    /// Its terms as the GPU wrote them.
    pub terms: LossTerms,
}

/// The loss of one call and its terms.
#[derive(Clone, Debug, PartialEq)]
pub struct LossReport {
    /// `image + tv_weight · tv + velocity_tv_weight · velocity_tv`.
    pub loss: f64,
    /// Σ over frames and views of `w_l1 · l1 + w_ssim · dssim`.
    pub image: f64,
    /// Σ of `mean|I − Î|` over frames and views (unweighted).
    pub l1: f64,
    /// Σ of `1 − mean SSIM` over frames and views (unweighted).
    pub dssim: f64,
    /// TV of `log10 E` over the driver graph (unweighted).
    pub tv: f64,
    /// TV of the per-driver initial velocity (world units/s) over the
    /// driver graph (unweighted; reported whatever its weight).
    pub velocity_tv: f64,
    /// Per frame and view, frame-major.
    pub images: Vec<ImageTerms>,
    /// Tile intersections summed over the renders (the rasterizer's one
    /// readback per render).
    pub intersections: u64,
}

/// What [`super::FitProblem::evaluate`] returns: the loss and its gradients, on
/// the GPU.
pub struct Evaluation {
    /// The loss and its terms.
    pub report: LossReport,
    /// `∂loss/∂(log10 E parameters)`, one f32 per parameter.
    pub youngs_gradient: GpuBuffer,
    /// `∂loss/∂(velocity parameters)`, one f32 per parameter.
    pub velocity_gradient: GpuBuffer,
    /// `∂loss/∂ν` per driver, one f32 each (ν as
    /// [`super::FitProblem::set_poisson`] set it).
    pub poisson_gradient: GpuBuffer,
}

/// [`Evaluation`]'s gradients on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostGradients {
    /// `∂loss/∂(log10 E parameters)`.
    pub youngs: Vec<f32>,
    /// `∂loss/∂(velocity parameters)`.
    pub velocity: Vec<f32>,
    /// `∂loss/∂ν` per driver.
    pub poisson: Vec<f32>,
}

impl Evaluation {
    /// Reads the gradients back (tests, hosts with a CPU optimiser).
    pub fn read(&self, ctx: &GpuContext) -> Result<HostGradients, FitError> {
        Ok(HostGradients {
            youngs: ctx.read_buffer(&self.youngs_gradient)?,
            velocity: ctx.read_buffer(&self.velocity_gradient)?,
            poisson: ctx.read_buffer(&self.poisson_gradient)?,
        })
    }
}
