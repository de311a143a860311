//! Typed errors of the interactions (docs/scene.md "Interactions file"):
//! each names where the value came from (the file, or the command-line
//! flag), the field and the fix.

use thiserror::Error;

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
    /// A bad value.
    #[error("{source_name}: `{field}`: {problem}; fix: {fix}")]
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
}
