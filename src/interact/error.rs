//! Typed errors of the interactions (docs/scene.md "Interactions file"):
//! each names where the value came from (the file, or the command-line
//! flag), the field and the fix.

use thiserror::Error;

/// Where a bad value is: the file or flag, and the field within it unless
/// the field is the flag itself (`--velocity`, not `--velocity: \`--velocity\``).
fn place(source_name: &str, field: &str) -> String {
    if source_name == field {
        source_name.to_string()
    } else {
        format!("{source_name}: `{field}`")
    }
}

/// Why interactions cannot be used.
#[derive(Debug, Error)]
pub enum InteractionError {
    /// The file cannot be read.
    #[error("{source_name}: cannot read the interactions file: {error}")]
    Read {
        /// The interactions file.
        source_name: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// Not TOML, an unknown field, a missing field or a value of the wrong type.
    #[error(
        "{source_name}: in `{field}`: {message}; fix: see docs/scene.md \"Interactions file\" \
         for the fields of each kind"
    )]
    Parse {
        /// The file or flag.
        source_name: String,
        /// The table (`interactions[2]`) or `(top level)`.
        field: String,
        /// The parser's message.
        message: String,
    },
    /// A `[[colliders]]` table refused as `[[simulation.colliders]]` are
    /// (the same checks and words, naming the file and `colliders[i]`).
    #[error(transparent)]
    Collider(#[from] crate::scene::SceneError),
    /// A bad value. Where the field is the flag itself (`--velocity`), it
    /// is named once.
    #[error("{}: {problem}; fix: {fix}", place(source_name, field))]
    Invalid {
        /// The file or flag.
        source_name: String,
        /// The field (`interactions[1].radius`, or the flag's key).
        field: String,
        /// What is wrong.
        problem: String,
        /// How to fix it.
        fix: String,
    },
    /// The requested motion breaks the velocity bound: a particle could
    /// move more than half a grid cell in one substep.
    #[error(
        "the initial velocities and impulses reach {speed:.4} world units/s (largest initial \
         speed {initial:.4} + impulses {impulses:.4}), but one substep of {dt:.3e} s may move a \
         particle at most half a cell, {bound:.4} world units/s at this grid; fix: lower the \
         velocities or the impulses' acceleration or duration, or raise `simulation.substeps` \
         to at least {substeps_needed} (a re-fit is needed: the fitted drivers record the \
         substeps)"
    )]
    TooFast {
        /// The bound's left side, world units / s.
        speed: f64,
        /// Largest initial speed, world units / s.
        initial: f64,
        /// Sum of the impulses' velocity changes, world units / s.
        impulses: f64,
        /// Largest speed allowed, world units / s.
        bound: f64,
        /// Substep length, seconds.
        dt: f64,
        /// Substeps per frame that would satisfy the bound.
        substeps_needed: u64,
    },
}
