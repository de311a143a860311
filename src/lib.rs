//! physfit: recover the material of a 3D Gaussian Splatting object from video.
//!
//! The pipeline (docs/design.md): scene → drivers → MPM → deform → splat → loss →
//! fit. Each stage is a module named after it, and `solve` holds the
//! minimisers the fit and the view alignment share; `report` draws the fit's
//! pictures and `io` writes files atomically. `reference` holds the f64 CPU
//! twins used as test oracles: it is compiled only with the `reference`
//! feature, which the tests turn on and the released library leaves off.
//!
//! # The library's face
//!
//! What a program outside physfit uses (the command line is one such
//! program, `examples/fit_block.rs` another) is a small set of modules, each
//! with its entry points re-exported at its top:
//!
//! - [`scene`]: a [`scene::Scene`] loaded from a scene.toml
//!   ([`scene::Scene::load`]) or built from a value
//!   ([`scene::Scene::from_config`] of a [`scene::SceneConfig`]);
//! - [`gpu`]: the device ([`gpu::GpuContext`]);
//! - [`fit`]: [`fit::FitSession`] from a scene to a [`fit::FitResult`] in
//!   memory, and `write_outputs` for the files;
//! - [`align`], [`forward`] (simulate and render), [`synth`] (a twin with a
//!   known truth), [`interact`] (forces after a fit) and [`bench`];
//! - [`io`] (output folders that never lose a user's files), [`budget`]
//!   (what a run needs in memory), [`report`] (pictures) and [`stop`]
//!   (Ctrl-C as a value).
//!
//! Their inner files, and the engine's modules (`mpm`, `splat`, `deform`,
//! `drive`, `loss`, `solve`, …), are crate-private in the released library
//! and public only with the `reference` feature, so that the tests can
//! check each stage against its CPU twin.

/// Declares modules that are crate-private in the released library and
/// public with the `reference` feature (the tests' view: each stage on its
/// own, against its CPU twin). The face of the library is declared with a
/// plain `pub mod` and its entry points re-exported.
macro_rules! internal_mods {
    ($($(#[$attr:meta])* $name:ident;)*) => {$(
        $(#[$attr])*
        #[cfg(feature = "reference")]
        pub mod $name;
        $(#[$attr])*
        #[cfg(not(feature = "reference"))]
        pub(crate) mod $name;
    )*};
}

pub mod align;
pub mod bench;
pub mod budget;
pub mod fit;
pub mod forward;
pub mod gpu;
pub mod interact;
pub mod io;
pub mod report;
pub mod scene;
pub mod stop;
pub mod synth;

internal_mods! {
    deform;
    drive;
    loss;
    memory;
    mpm;
    mpm_rules;
    output;
    solve;
    splat;
}

#[cfg(feature = "reference")]
pub mod reference;
