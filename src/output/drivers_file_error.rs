//! Why a `drivers.safetensors` could not be made, written, read or used
//! with a scene: every error names the file and the
//! tensor or field, and says what to do.

use std::path::PathBuf;

use super::metadata_fields::MetadataError;
use super::ply_hash::PlyHashError;
use super::tensor_archive::SafetensorsError;

/// Why [`crate::output::FittedDrivers`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DriversFileError {
    /// The archive or one of its tensors does not read (truncated, wrong
    /// dtype or shape, missing).
    #[error(transparent)]
    Archive(#[from] SafetensorsError),
    /// A metadata field is missing or does not parse.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// The scene's `.ply` could not be hashed.
    #[error(transparent)]
    Hash(#[from] PlyHashError),
    /// A tensor reads but its values are inconsistent with the others.
    #[error("{path}: tensor `{tensor}` {problem}; the file was altered: write it again with `physfit fit`")]
    Tensor {
        /// The file.
        path: PathBuf,
        /// Tensor name.
        tensor: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// Another file format or format version.
    #[error("{path}: metadata `{field}` is \"{found}\", this physfit reads \"{expected}\"; write the file again with this version's `physfit fit`")]
    Format {
        /// The file.
        path: PathBuf,
        /// `format` or `format_version`.
        field: &'static str,
        /// What the file says.
        found: String,
        /// What this version writes.
        expected: String,
    },
    /// The fit's values do not match its drivers (a caller's mistake).
    #[error("fitted drivers: {0}")]
    Inputs(String),
    /// The archive could not be encoded or written.
    #[error("cannot write {path}: {reason}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The scene's `.ply` is not the one the drivers were fitted to.
    #[error(
        "the drivers were fitted to {fitted_ply} (SHA-256 {fitted_sha256}), but scene {scene} \
         uses {scene_ply} (SHA-256 {scene_sha256}): the splats differ. Point `gaussians.path` \
         at the .ply of the fit, or fit again with this one"
    )]
    PlyChanged {
        /// The `.ply` of the fit, as its scene wrote it.
        fitted_ply: String,
        /// Its SHA-256.
        fitted_sha256: String,
        /// The scene file now.
        scene: PathBuf,
        /// Its `.ply`.
        scene_ply: PathBuf,
        /// That file's SHA-256.
        scene_sha256: String,
    },
    /// The scene's settings differ from the fit's where a re-simulation
    /// depends on them.
    #[error(
        "scene {scene} differs from the fit's settings: {}. Restore the fit's values in the \
         scene, or fit again",
        .differences.join("; ")
    )]
    SettingsChanged {
        /// The scene file.
        scene: PathBuf,
        /// One line per field: its name, the fit's value and the scene's.
        differences: Vec<String>,
    },
}
