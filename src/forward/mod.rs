//! The one chain from a scene to pictures: drivers → MPM → deformation →
//! rasterizer (docs/design.md § Pipeline), forward and backward.
//!
//! [`Chain`] runs it stage by stage on the GPU, each stage with its
//! backward (the GPU counterpart of src/reference/chain.rs); [`Drawing`]
//! is its last stage alone, for the splats at rest. Every command goes
//! through them: the fit's problem ([`crate::fit::FitProblem`]) owns a
//! [`Chain`] and adds only the loss between the draw and the backward;
//! every command that simulates or renders without a gradient runs a
//! [`SceneRenderer`], which steps the chain frame by frame and keeps the
//! frame states: plain `render` and the fit's stiffness picture (the
//! splats at rest), `simulate` and `render --params` (the drivers under
//! interactions), `synth` and the fit's truth check (the drivers at a
//! truth's values).
//!
//! [`ForwardSetup`] gathers on the host what a run simulates and refuses
//! what cannot work before anything runs. A frame that breaks down stops
//! the run naming the frame and substep.
//! [`simulate_scene`] is `physfit simulate` as a library call,
//! [`render_motion`] `physfit render --params` and [`render_at_rest`]
//! plain `physfit render`.

internal_mods! {
    at_rest;
    chain;
    drawing;
    error;
    motion;
    renderer;
    setup;
    simulate;
}

/// The fitted drivers a motion is rendered from (`drivers.safetensors`).
pub use crate::output::FittedDrivers;
pub use at_rest::{render_at_rest, RestRender};
pub use chain::{Chain, DrawBackward};
pub use drawing::Drawing;
pub use error::ForwardError;
pub use motion::{
    render_motion, FittedMotion, MotionColouring, MotionOptions, MotionRender, MotionView,
};
pub use renderer::SceneRenderer;
pub use setup::ForwardSetup;
pub use simulate::{simulate_scene, SimulateOptions, Simulation};
