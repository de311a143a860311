//! f64 CPU twin of the Gaussian-splat rasterizer, forward and hand-written
//! reverse mode: the test oracle for the GPU rasterizer (docs/design.md
//! § Gaussian splatting, § Verification strategy 1–3). Classic 3DGS as gsplat
//! implements it ("classic" mode): EWA projection with 0.3 px² dilation
//! ([`project`]), SH colour ([`sh`]), front-to-back blending in camera-z order
//! ([`blend`]); backward in [`blend_adjoint`](mod@blend_adjoint) and [`project_adjoint`](mod@project_adjoint).
//!
//! Simple rather than fast: every splat is projected once, then each pixel
//! loops over the depth-sorted splats whose extent square contains it.

pub mod blend;
pub mod blend_adjoint;
pub mod params;
pub mod project;
pub mod project_adjoint;
pub mod sh;

pub use blend::{render, render_with, Image64};
pub use blend_adjoint::{blend_adjoint, render_backward, BlendGrads};
pub use params::{SplatGrads64, SplatParams64};
pub use project::{project_all, project_splat, Camera64, ProjectedSplat};
pub use project_adjoint::ProjectedSplatGrad;
