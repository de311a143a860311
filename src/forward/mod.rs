//! The one forward path from a scene to pictures: drivers → MPM →
//! deformation → rasterizer (docs/design.md § Pipeline), forward only.
//!
//! Every command that simulates or renders without a gradient goes through
//! it: plain `render` and the fit's stiffness picture (the splats at rest),
//! `simulate` and `render --params` (the drivers under interactions),
//! `synth` and the fit's truth check (the drivers at a truth's values). The
//! fit's problem ([`crate::fit::FitProblem`]) owns one too and adds only
//! what the gradient needs on top: its rollouts with checkpoints, the
//! backward passes and the loss.
//!
//! [`ForwardSetup`] gathers on the host what a run simulates and refuses
//! what cannot work before anything runs; [`SceneRenderer`] runs it on the
//! GPU. A frame that breaks down stops the run naming the frame and substep.
//! [`simulate_scene`] is `physfit simulate` as a library call,
//! [`render_motion`] `physfit render --params` and [`render_at_rest`]
//! plain `physfit render`.

internal_mods! {
    at_rest;
    error;
    motion;
    renderer;
    setup;
    simulate;
}

/// The fitted drivers a motion is rendered from (`drivers.safetensors`).
pub use crate::output::FittedDrivers;
pub use at_rest::{render_at_rest, RestRender};
pub use error::ForwardError;
pub use motion::{
    render_motion, FittedMotion, MotionColouring, MotionOptions, MotionRender, MotionView,
};
pub use renderer::{RendererParts, SceneRenderer};
pub use setup::ForwardSetup;
pub use simulate::{simulate_scene, SimulateOptions, Simulation};
