//! What the host's memory holds and the typed refusal when a setting asks
//! for more: below both the scene loader (which refuses the interior fill
//! before allocating it) and the budget (which estimates whole commands
//! from a loaded scene), so that neither imports the other.
//!
//! - [`host`]: the host's available memory.
//! - [`refusal`]: [`MemoryError`], and the fill check [`refuse_fill_grid`].
//! - [`bytes`]: byte counts as people read them.

pub mod bytes;
pub mod host;
pub mod refusal;

pub use refusal::{refuse_fill_grid, MemoryError};
#[cfg(feature = "reference")]
pub use refusal::MemoryKind;
