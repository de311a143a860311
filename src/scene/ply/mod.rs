//! 3D Gaussian Splatting `.ply` input and output.
//!
//! # What is read
//! A PLY file (`ascii 1.0` or `binary_little_endian 1.0`) with a `vertex`
//! element whose properties may come in any order and with any scalar type
//! (`char uchar short ushort int uint float double` and the aliases
//! `int8 uint8 int16 uint16 int32 uint32 float32 float64`). The standard 3DGS
//! layout (Kerbl et al. 2023, as written by the reference implementation,
//! gsplat, nerfstudio and brush) is
//! `x y z [nx ny nz] f_dc_0..2 f_rest_* opacity scale_0..2 rot_0..3`:
//! opacity is a logit, scales are natural logs, `rot` is a quaternion
//! `(w, x, y, z)` (not necessarily unit), and the `f_rest_*` are stored
//! channel-major: `f_rest[c·(K−1) + j]` is SH coefficient `j + 1` of colour
//! channel `c`, `K = (degree + 1)²`. The SH degree follows from the count of
//! `f_rest_*` properties: 0, 9, 24, 45 → degree 0, 1, 2, 3; any other count
//! is [`PlyError::ShCount`]. Normals and `f_rest_*` may be missing; when
//! `f_dc_*` are missing, 8-bit `red green blue` give the DC term instead.
//! Other properties and other elements are not used but are kept, so that
//! writing the file back ([`PlyData::write`]) reproduces it exactly.
//!
//! # Policy for odd values
//! Trained splat files contain a few degenerate splats. [`load_gaussians`]
//! applies these rules and counts each kind in a [`SanitizeReport`], which
//! `physfit check` prints ("odd values"); loading logs the counts at
//! `debug` only, so that every command on the same file does not repeat
//! them:
//! - position (`x y z`) not finite → the splat is **dropped** (it has no
//!   place in the scene or in the simulation box);
//! - opacity logit NaN → **dropped**; ±∞ → clamped to
//!   ±[`OPACITY_LOGIT_LIMIT`] (opacity ≈ 1 or ≈ 0, still finite);
//! - log scale NaN or +∞ → **dropped** (an infinitely large splat would cover
//!   the whole image); −∞ or below [`LOG_SCALE_MIN`] (zero size) → clamped to
//!   [`LOG_SCALE_MIN`]: a point, to which the rasterizer's 0.3 px² low-pass
//!   still gives a footprint;
//! - quaternion with a non-finite component or a norm below 1e-12 → the
//!   identity `(1, 0, 0, 0)`; every other quaternion is normalised;
//! - a non-finite SH coefficient → 0.
//!
//! Dropped splats keep their rows in [`PlyData`]; [`LoadedSplats::ply_rows`]
//! maps each kept splat to its row, and [`LoadedSplats::per_row`] spreads
//! per-splat results (e.g. a fitted Young's modulus) back onto the rows for
//! [`PlyData::write`].
//!
//! # Errors
//! Malformed or truncated input gives a [`PlyError`] naming the file and the
//! header line, element row or byte offset; user input never panics.

mod data;
mod error;
mod header;
mod splats;
mod write;

pub use data::PlyData;
#[cfg(feature = "reference")]
pub use data::PlyElement;
pub use error::PlyError;
#[cfg(feature = "reference")]
pub use header::{PlyFormat, PlyHeaderLine, PlyProperty, ScalarType};
pub use splats::{load_gaussians, read_points, LoadedSplats};
#[cfg(feature = "reference")]
pub use splats::{gaussians_from_ply, SanitizeReport, LOG_SCALE_MIN, OPACITY_LOGIT_LIMIT};
pub use write::ExtraProperty;
