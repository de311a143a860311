//! Twin experiments (docs/design.md § Verification 5): reference frames made from a known material and motion, so a
//! fit can be checked against the truth.
//!
//! - the truth file ([`truth`], docs/truth.md): [`Truth::load`], its
//!   evaluation at world points and on a fit's drivers
//!   ([`Truth::per_driver`]);
//! - the fields themselves ([`field`]): constant, per box, a smooth random
//!   `log10 E`; uniform, per box, a rigid rotation for the velocity;
//! - the forward run, finer than a fit's ([`run`]): [`SynthPlan`],
//!   [`Synthesis`];
//! - where it writes ([`layout`]);
//! - the errors ([`mod@error`]).
//!
//! `physfit synth` (src/cli/synth.rs) writes the frames.

internal_mods! {
    error;
    field;
    layout;
    run;
    truth;
}

pub use layout::{frame_path, SUMMARY_FILE, TRUTH_FILE};

pub use error::{SynthError, TruthError};
pub use field::{RandomField, ValueBox, VelocityTruth, YoungsTruth};
pub use run::{simulate_truth, SynthOptions, SynthPlan, Synthesis};
pub use truth::{Truth, TruthValues};
